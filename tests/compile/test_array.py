"""Data movement compiled: copy blocks traced from the interpreter, run-time Gather."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile import generate
from tractile.errors import RunError
from tractile.formats.tflite.ops.array import pad_ops
from tractile.formats.tflite.ops.layout import batch_to_space_ops, space_to_batch_ops
from tractile.formats.tflite.ops.shape import pack_ops, unpack_ops
from tractile.formats.tflite.ops.slicing import MASKS, slice_ops, strided_slice_ops
from tractile.ops.array import Concat, Transpose
from tractile.ops.layout import DepthToSpace, SpaceToDepth

from ..tflite.builder import GraphBuilder
from .harness import assert_builds_without_warnings, check_against_interpreter, q

F = TensorProto.FLOAT
vi = helper.make_tensor_value_info


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def onnx_model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


ONNX_CASES = {
    "transpose": ([helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], [vi("x", F, [2, 3, 4, 5])], [], 1),
    "transpose_inner": ([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], [vi("x", F, [7, 5])], [], 1),
    "slice_negative_steps": ([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [vi("x", F, [5, 7, 6])],
                             [ints("s", [1, -1]), ints("e", [5, -7]), ints("a", [0, 2]), ints("st", [2, -2])], 1),
    "concat_three": ([helper.make_node("Concat", ["x", "z", "w"], ["y"], axis=-1)],
                     [vi("x", F, [2, 3, 4]), vi("z", F, [2, 3, 1]), vi("w", F, [2, 3, 2])], [], 1),
    "concat_constant": ([helper.make_node("Concat", ["x", "k"], ["y"], axis=0)], [vi("x", F, [2, 3])],
                        [numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "k")], 1),
    "pad_constant": ([helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant")], [vi("x", F, [2, 3, 4])],
                     [ints("p", [0, 1, 2, 0, 2, 1]), numpy_helper.from_array(np.array(1.5, np.float32), "v")], 1),
    "pad_reflect": ([helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [vi("x", F, [2, 5, 4])],
                    [ints("p", [0, 2, 1, 0, 2, 1])], 1),
    "pad_edge": ([helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")], [vi("x", F, [3, 4])],
                 [ints("p", [2, 0, 1, 3])], 1),
    "split": ([helper.make_node("Split", ["x", "sp"], ["y", "y2"], axis=2)], [vi("x", F, [2, 3, 7])],
              [ints("sp", [3, 4])], 2),
    "tile": ([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", F, [2, 3])], [ints("r", [3, 2])], 1),
    "expand": ([helper.make_node("Expand", ["x", "s"], ["y"])], [vi("x", F, [3, 1])], [ints("s", [2, 3, 4])], 1),
    # a bias too large to fold (the ONNX model zoo's ResNet50 stripped of its weights has one)
    "constant_of_shape": ([helper.make_node("ConstantOfShape", ["s"], ["b"],
                                            value=numpy_helper.from_array(np.array([0.25], np.float32))),
                           helper.make_node("Add", ["x", "b"], ["y"])], [vi("x", F, [2, 3, 700])],
                          [ints("s", [3, 700])], 1),
    "depth_to_space": ([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")],
                       [vi("x", F, [1, 8, 3, 3])], [], 1),
    "gather_constant_indices": ([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [vi("x", F, [2, 6, 3])],
                                [ints("i", [[0, 5], [-1, 2]])], 1),
}


@pytest.mark.parametrize("case", sorted(ONNX_CASES))
def test_onnx_data_movement_matches_the_interpreter(case, compile_cache):
    nodes, inputs, inits, count = ONNX_CASES[case]
    outputs = [vi("y", F, None)] + ([vi("y2", F, None)] if count == 2 else [])
    model = tractile.load(onnx_model(nodes, inputs, outputs, inits))
    cm = check_against_interpreter(model, compile_cache, name=case)
    # on the host, the transposes of a channels x pixels matrix (an NCHW tensor into NHWC) have a kernel
    kernels = {n["kernel"] for n in cm.report["nodes"] if n["op"] != "Add"}
    assert kernels <= {"tl_copy_blocks", "tl_copy_indexed", "tl_nchw_to_nhwc_u32", "(fill)"}
    if case == "constant_of_shape":
        assert kernels == {"(fill)"}


def test_block_tables_stay_small():
    nodes, inputs, inits, _ = ONNX_CASES["transpose"]
    # a microcontroller's: the host copies this transpose with tl_nchw_to_nhwc_u32
    source = generate(tractile.load(onnx_model(nodes, inputs, [vi("y", F, None)], inits)), target="cortex-m4")
    assert "tl_copy_blocks" in source.source and "moves0" not in source.source
    assert source.report["nodes"][0]["constants_bytes"] < 200


def test_run_time_gather_checks_its_indices(compile_cache):
    proto = onnx_model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="lookup")],
                       [vi("x", F, [2, 6, 3]), vi("i", TensorProto.INT64, [4])], [vi("y", F, None)])
    rng = np.random.default_rng(0)
    inputs = [[rng.standard_normal((2, 6, 3)).astype(np.float32), np.array([0, 5, -1, 2])] for _ in range(3)]
    cm = check_against_interpreter(tractile.load(proto), compile_cache, inputs=inputs)
    with pytest.raises(RunError, match=r'"lookup" \(Gather\): an index is out of range'):
        cm.run([inputs[0][0], np.array([0, 6, 0, 0])])


def test_embedding_lookup_from_a_constant_table(compile_cache):
    table = numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    proto = onnx_model([helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
                       [vi("ids", TensorProto.INT64, [1, 5])], [vi("y", F, None)], [table])
    inputs = [[np.array([[3, 0, 9, 9, 1]])], [np.array([[-1, 2, 4, 5, 6]])]]
    check_against_interpreter(tractile.load(proto), compile_cache, inputs=inputs)


def tflite_moves_model():
    """Every TFLite move on int8 tensors sharing one quantization, as the front end translates them."""
    g = GraphBuilder()
    quant = q(0.05, -3)
    x = g.input("x", "i8", (1, 4, 5, 3), quant)
    z = g.input("z", "i8", (1, 4, 2, 3), quant)
    joined = g.op("joined", Concat(2), [x, z])
    padded = g.translate("padded", pad_ops, joined, np.array(((0, 0), (1, 2), (0, 1), (0, 0))))
    masks = dict.fromkeys(MASKS, 0)
    sliced = g.translate("sliced", strided_slice_ops, padded, (0, 1, 6, 0), (1, 7, 0, 3), (1, 2, -2, 1), masks)
    turned = g.op("turned", Transpose((0, 3, 1, 2)), [sliced])
    parts = g.translate("parts", unpack_ops, turned, 3, 1)
    packed = g.translate("packed", pack_ops, [parts[2], parts[0]], 0)
    blocks = g.translate("blocks", space_to_batch_ops, x, [2, 1], np.array(((1, 1), (0, 1))))
    back = g.translate("back", batch_to_space_ops, blocks, [2, 1], np.array(((1, 1), (0, 1))))
    deep = g.op("deep", SpaceToDepth(2, "DCR", "NHWC"), [g.translate("even", slice_ops, x, (0, 0, 0, 0),
                                                                       (1, 4, 4, 3))])
    wide = g.op("wide", DepthToSpace(2, "DCR", "NHWC"), [deep])
    mirrored = g.translate("mirrored", pad_ops, x, np.array(((0, 0), (1, 2), (2, 0), (0, 0))), None, "symmetric")
    g.model.outputs = [packed, parts[1], back, wide, mirrored]
    return g.model


def test_tflite_moves_on_int8_are_bit_exact(compile_cache, tmp_path):
    model = tflite_moves_model()
    check_against_interpreter(model, compile_cache, runs=5, name="tfl_moves")
    assert_builds_without_warnings(generate(model, name="moves"), tmp_path)


def test_onnx_moves_build_warning_free(tmp_path):
    for case in ("pad_reflect", "concat_three", "split", "constant_of_shape"):
        nodes, inputs, inits, count = ONNX_CASES[case]
        outputs = [vi("y", F, None)] + ([vi("y2", F, None)] if count == 2 else [])
        source = generate(tractile.load(onnx_model(nodes, inputs, outputs, inits)), name=case)
        assert_builds_without_warnings(source, tmp_path / case)


def tflite_indexing_model(dtype: str):
    """TFLite's indexing, tiling, broadcasting, mirror padding, reversal and nearest resizing."""
    from tractile.formats.tflite.ops.resize import resize_op
    from tractile.formats.tflite.ops.slicing import reverse_ops
    from tractile.ops.indexing import DynamicUpdateSlice, GatherND
    from tractile.ops.layout import Expand, Tile

    g = GraphBuilder()
    quant = q(0.05, -3) if dtype == "i8" else None
    x = g.input("x", dtype, (1, 4, 5, 3), quant)
    u = g.input("u", dtype, (1, 2, 2, 3), quant)
    picked = g.op("picked", GatherND(), [x, g.const("at", [[0, 3], [0, 1], [0, 0]], "i32")])
    tiled = g.op("tiled", Tile(), [u, g.const("times", [1, 2, 1, 3], "i32")])
    wide = g.op("wide", Expand(), [u, g.const("shape", [2, 2, 2, 3], "i32")])
    mirrored = g.translate("mirrored", pad_ops, x, np.array(((0, 0), (2, 1), (0, 3), (0, 0))), None, "reflect")
    turned = g.translate("turned", reverse_ops, x, [1, 3])
    updated = g.op("updated", DynamicUpdateSlice(), [x, u, g.const("starts", [0, 3, 1, 0], "i32")])
    empty = g.const("empty", np.zeros(0, np.float32))
    grown = g.op("grown", resize_op("nearest", False, True), [x, empty, empty, g.const("size", [7, 9], "i32")])
    g.model.outputs = [picked, tiled, wide, mirrored, turned, updated, grown]
    return g.model


@pytest.mark.parametrize("dtype", ["i8", "f32"])
def test_tflite_indexing_and_broadcasting_compile_bit_exact(dtype, compile_cache):
    check_against_interpreter(tflite_indexing_model(dtype), compile_cache, runs=3, name=f"tfl_index_{dtype}")
