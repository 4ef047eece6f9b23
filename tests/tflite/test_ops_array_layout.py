"""TFLite's shape, layout, indexing and scan operators as the front end translates them,
checked against LiteRT's reference kernels (and written back) on self-built models."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q, random_values
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.ops.array import pad_ops
from tractile.formats.tflite.ops.layout import batch_to_space_ops, space_to_batch_ops
from tractile.formats.tflite.ops.shape import pack_ops, unpack_ops, zeros_like_ops
from tractile.formats.tflite.ops.slicing import reverse_ops
from tractile.formats.tflite.reader import read_model
from tractile.formats.tflite.writer import write_model
from tractile.ops.array import Split, Transpose
from tractile.ops.indexing import DynamicUpdateSlice, GatherND
from tractile.ops.layout import DepthToSpace, Expand, SpaceToDepth, Tile
from tractile.ops.scan import CumScan
from tractile.ops.shape import BroadcastShapes, Reshape, Shape, Squeeze, Unsqueeze
from tractile.ops.sort import ArgReduce

RNG = np.random.default_rng(41)
QUANT = {"f32": None, "i8": q(0.07, -5), "i16": q(0.003), "u8": q(0.05, 120), "i32": None}


def _sets(model, count: int = 3):
    return [[random_values(f, RNG) for f in model.input_facts] for _ in range(count)]


def _check(model, count: int = 3):
    return check_model(model, _sets(model, count))


SHAPE_OPS = {
    "reshape": lambda g, x: g.op("y", Reshape(allowzero=True), [x, g.const("s", [3, -1, 2], "i64")]),
    "squeeze": lambda g, x: g.op("y", Squeeze(), [g.op("e", Unsqueeze(), [x, g.const("a", [1], "i64")]),
                                                  g.const("b", [1], "i64")]),
    "expand_dims": lambda g, x: g.op("y", Unsqueeze(), [x, g.const("a", [-1], "i64")]),
    "transpose": lambda g, x: g.op("y", Transpose((2, 0, 1)), [x]),
    "transpose_5d": lambda g, x: g.op("y", Transpose((0, 3, 1, 4, 2)), [
        g.op("r", Reshape(), [x, g.const("s", [1, 2, 3, 2, 2], "i64")])]),
    "split": lambda g, x: g.op("y", Split(1, 3), [x]),
    "split_v": lambda g, x: g.op("y", Split(2, 2), [x, g.const("sizes", [1, 3], "i64")]),
    "pack": lambda g, x: g.translate("y", pack_ops, [x, x], 1),
    "unpack": lambda g, x: g.translate("y", unpack_ops, x, 2, 0),
    "reverse": lambda g, x: g.translate("y", reverse_ops, x, [0, -1]),
    "tile": lambda g, x: g.op("y", Tile(), [x, g.const("m", [1, 2, 3], "i32")]),
    "broadcast_to": lambda g, x: g.op("y", Expand(), [x, g.const("s", [2, 2, 3, 4], "i32")]),
    "mirror_reflect": lambda g, x: g.translate("y", pad_ops, x, np.array([[1, 0], [2, 2], [0, 3]]), None, "reflect"),
    "mirror_symmetric": lambda g, x: g.translate("y", pad_ops, x, np.array([[0, 2], [3, 1], [4, 0]]), None,
                                                 "symmetric"),
    "gather_nd": lambda g, x: g.op("y", GatherND(), [x, g.const("i", [[1, 2], [0, 0], [1, 1]], "i32")]),
    "space_to_depth": lambda g, x: g.op("y", SpaceToDepth(2, "DCR", "NHWC"), [
        g.op("r", Reshape(), [x, g.const("s", [1, 2, 2, 6], "i64")])]),
    "depth_to_space": lambda g, x: g.op("y", DepthToSpace(2, "DCR", "NHWC"), [
        g.op("r", Reshape(), [x, g.const("s", [2, 1, 3, 4], "i64")])]),
}
#: types LiteRT's reference kernels take for each (int16 where TFLite Micro has it too)
SHAPE_TYPES = {name: ("f32", "i8", "i16") for name in SHAPE_OPS}
SHAPE_TYPES.update({"tile": ("f32", "i8"), "reverse": ("f32", "i8", "i16"), "space_to_depth": ("f32", "i8"),
                    "depth_to_space": ("f32", "i8"), "gather_nd": ("f32", "i8", "i16"),
                    "mirror_reflect": ("f32", "i8", "i16"), "mirror_symmetric": ("f32", "i8")})


@pytest.mark.parametrize("name,dtype", [(n, t) for n in SHAPE_OPS for t in SHAPE_TYPES[n]])
def test_shape_and_layout_ops(name, dtype):
    g = GraphBuilder()
    x = g.input("x", dtype, (2, 3, 4), QUANT[dtype])
    y = SHAPE_OPS[name](g, x)
    outputs = y if isinstance(y, list) else [y]
    model = g.outputs(*outputs)
    assert all(f.qparams == QUANT[dtype] for f in model.output_facts)
    _check(model)


@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
@pytest.mark.parametrize("shape,block,amounts", [
    ((2, 6, 5, 3), [2, 3], [[1, 1], [0, 1]]),  # 4-d, two blocked axes, odd padding
    ((1, 9, 4), [3], [[2, 1]]),  # 3-d, what a Keras dilated Conv1D gives
])
def test_space_to_batch_and_back(dtype, shape, block, amounts):
    g = GraphBuilder()
    x = g.input("x", dtype, shape, QUANT[dtype])
    batched = g.translate("batched", space_to_batch_ops, x, block, np.array(amounts))
    back = g.translate("back", batch_to_space_ops, batched, block, np.array(amounts))
    model = g.outputs(batched, back)
    data = write_model(model)
    assert [op.opcode for op in read_model(data).subgraphs[0].operators].count("TRANSPOSE") == 2
    outputs = _check(model)
    if not QUANT[dtype] or QUANT[dtype].zero_point[0] == 0:
        return
    zero = QUANT[dtype].zero_point[0]
    assert (outputs[0][0] == zero).sum() >= outputs[0][0].size // 8  # padded with the zero point


@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
def test_gather_nd_at_run_time_indices(dtype):
    g = GraphBuilder()
    params = g.input("params", dtype, (4, 3, 2), QUANT[dtype])
    indices = g.input("indices", "i32", (5, 2))
    model = g.outputs(g.op("y", GatherND(), [params, indices]))
    sets = [[random_values(model.input_fact(0), RNG), np.stack([RNG.integers(0, 4, 5), RNG.integers(0, 3, 5)], 1)
             .astype(np.int32)] for _ in range(3)]
    check_model(model, sets)


@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
def test_fill_broadcast_args_shape_and_zeros_like(dtype):
    g = GraphBuilder()
    value = g.input("value", dtype, (), QUANT[dtype])
    a, b = g.input("a", "i32", (3,)), g.input("b", "i32", (2,))
    dims = g.op("dims", BroadcastShapes(), [a, b])
    filled = g.op("filled", Expand(), [value, g.const("d", [2, 3], "i32")])
    shape32 = g.op("shape32", Shape(dtype=model_dtype("i32")), [filled])
    shape64 = g.op("shape64", Shape(), [filled])
    zeros = g.translate("zeros", zeros_like_ops, filled)
    model = g.outputs(filled, dims, shape32, shape64, zeros)
    sets = [[random_values(model.input_fact(0), RNG), np.array([2, 1, 3], np.int32), np.array(pair, np.int32)]
            for pair in ([4, 1], [1, 3], [5, 3])]
    outputs = check_model(model, sets)
    assert outputs[0][1].tolist() == [2, 4, 3] and outputs[2][1].tolist() == [2, 5, 3]


def model_dtype(name: str):
    from tractile.datum import DatumType

    return DatumType(name)


@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_cumsum(dtype, exclusive, reverse):
    g = GraphBuilder()
    x = g.input("x", dtype, (3, 5))
    model = g.outputs(g.op("y", CumScan("sum", exclusive, reverse), [x, g.const("axis", np.array(1, np.int32))]))
    sets = [[(RNG.standard_normal((3, 5)) * 3).astype(np.float32) if dtype == "f32" else
             RNG.integers(-1000, 1000, (3, 5)).astype(np.int32)] for _ in range(3)]
    check_model(model, sets)


@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, True), (False, True)])
def test_int8_cumsum_matches_tflite_micro(exclusive, reverse, compile_cache):
    """TFLite Micro's int8 CUMSUM (LiteRT has none; the sum starts from the offset zero point),
    compiled bit for bit."""
    from tests.compile.harness import check_against_interpreter

    g = GraphBuilder()
    x = g.input("x", "i8", (3, 6, 2), q(0.1, 3))
    op = CumScan("sum", exclusive, reverse, quant=q(0.3, -4))
    model = g.outputs(g.op("y", op, [x, g.const("axis", np.array(1, np.int32))]))
    sets = _sets(model)
    outputs = check_model(model, sets, oracle="micro")
    assert model.output_fact(0).qparams == q(0.3, -4) and outputs[0][0].dtype == np.int8
    check_against_interpreter(model.into_optimized(), compile_cache, inputs=sets, name="cumsum8")


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype,out", [("f32", "i32"), ("i8", "i64"), ("f32", "i64")])
def test_arg_max_and_min(kind, dtype, out):
    g = GraphBuilder()
    x = g.input("x", dtype, (3, 4, 5), QUANT[dtype])
    model = g.outputs(g.op("y", ArgReduce(kind, 1, keepdims=False, dtype=model_dtype(out)), [x]))
    values = [[random_values(model.input_fact(0), RNG, -3, 3) if dtype == "i8" else
               np.round(RNG.standard_normal((3, 4, 5))).astype(np.float32)] for _ in range(3)]
    check_model(model, values)  # small value ranges: ties pick the first index, as TFLite does


@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
def test_dynamic_update_slice(dtype):
    g = GraphBuilder()
    data = g.input("data", dtype, (4, 5), QUANT[dtype])
    update = g.input("update", dtype, (2, 3), QUANT[dtype])
    starts = g.input("starts", "i32", (2,))
    model = g.outputs(g.op("y", DynamicUpdateSlice(), [data, update, starts]))
    sets = [[random_values(model.input_fact(0), RNG), random_values(model.input_fact(1), RNG),
             np.array(s, np.int32)] for s in ([1, 2], [3, 4], [-1, 0])]  # in range, clamped, clamped
    outputs = check_model(model, sets)
    np.testing.assert_array_equal(outputs[1][0][2:4, 2:5], sets[1][1])


@pytest.mark.parametrize("dtype,expected", [("f32", 1), ("i8", 2), ("i16", 5)])
def test_operator_versions_follow_the_tensor_types(dtype, expected):
    """Written versions are the lowest the tensor types need (TFLite's converter's rules)."""
    g = GraphBuilder()
    model = g.outputs(g.op("y", Transpose((1, 0)), [g.input("x", dtype, (2, 3), QUANT[dtype])]))
    assert [op.version for op in read_model(write_model(model)).subgraphs[0].operators] == [expected]
    check_model(model, _sets(model, 1))


def test_a_move_whose_output_is_quantized_differently_copies_raw_values():
    """TFLite's moves copy integers: an output tensor quantized otherwise relabels them."""
    from tractile.ops.relabel import SetQuantization

    g = GraphBuilder()
    x = g.input("x", "i8", (2, 5), q(0.1, 3))
    turned = g.translate("turned", reverse_ops, x, [1])
    model = g.outputs(g.op("y", SetQuantization(q(0.02, -7)), [turned]))
    sets = _sets(model)
    outputs = check_model(model, sets)
    np.testing.assert_array_equal(outputs[0][0], sets[0][0][:, ::-1])
    assert load_tflite(write_model(model)).output_fact(0).qparams == q(0.02, -7)


def test_per_axis_quantization_follows_its_axis_through_moves():
    from tests.tflite.builder import qc

    g = GraphBuilder()
    weights = g.const("w", RNG.integers(-127, 128, (2, 3, 4)), "i8", qc([0.1, 0.2, 0.3], axis=1))
    turned = g.op("turned", Transpose((2, 0, 1)), [weights])
    flat = g.op("flat", Reshape(), [turned, g.const("s", [4, 2, 3, 1], "i64")])
    moved = g.op("moved", Squeeze(), [flat, g.const("a", [3], "i64")])
    sliced = g.op("cut", Split(2, 3), [moved])
    assert [g.model.outlet_fact(o).qparams.axis for o in (turned, flat, moved)] == [2, 2, 2]
    assert g.model.outlet_fact(sliced[0]).qparams is None  # split along the quantized axis: scales unknown


def test_bad_parameters_name_the_operator():
    from tractile.errors import ModelFormatError

    g = GraphBuilder()
    x = g.input("x", "f32", (1, 5, 3))
    with pytest.raises(ModelFormatError, match="'blocks'.*not multiples"):
        g.translate("blocks", space_to_batch_ops, x, [2], np.array([[0, 0]]))
    with pytest.raises(ModelFormatError, match="'padded'.*negative paddings"):
        g.translate("padded", pad_ops, x, np.array([[0, 0], [-1, 0], [0, 0]]))
