"""The cases of TFLite Micro's builtin operators no other test had (``test_tflm_op_list.py``
holds the list and its completeness checks): int16 slicing and MAXIMUM/MINIMUM, float and int8
SOFTMAX and SVDF on built models against LiteRT's reference kernels, written back and compiled;
CUMSUM, ARG_MAX, ARG_MIN, RESIZE_BILINEAR, int8 SQUARED_DIFFERENCE and DIV compiled."""
from __future__ import annotations

import numpy as np
import pytest

from tests.compile.harness import assert_builds_without_warnings, check_against_interpreter
from tests.tflite.builder import GraphBuilder, check_model, q, random_values
from tests.tflite.test_ops_array import MASKS
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.formats.tflite.ops.slicing import slice_ops, strided_slice_ops
from tractile.ops.nn import Softmax
from tractile.ops.scan import CumScan
from tractile.ops.sort import ArgReduce
from tractile.ops.svdf import Svdf

RNG = np.random.default_rng(100)


def _sets(model, count: int = 3):
    return [[random_values(f, RNG) for f in model.input_facts] for _ in range(count)]


def _check_and_compile(model, compile_cache, name: str, count: int = 3):
    sets = _sets(model, count)
    check_model(model, sets)
    check_against_interpreter(model.into_optimized(), compile_cache, inputs=sets, name=name)


@pytest.mark.parametrize("kind", ["strided", "slice"])
def test_int16_slicing(kind, compile_cache):
    g = GraphBuilder()
    x = g.input("x", "i16", (4, 5, 6), q(0.003))
    if kind == "strided":
        y = g.translate("y", strided_slice_ops, x, (1, 0, 2), (3, 5, 6), (1, 2, 2), {name: 0 for name in MASKS})
    else:
        y = g.translate("y", slice_ops, x, (1, 0, 2), (2, -1, 3))
    _check_and_compile(g.outputs(y), compile_cache, f"slice_{kind}")


@pytest.mark.parametrize("kind", ["maximum", "minimum"])
def test_int16_maximum_and_minimum(kind, compile_cache):
    g = GraphBuilder()
    quant = q(0.002)
    a, b = g.input("a", "i16", (3, 4), quant), g.input("b", "i16", (4,), quant)
    _check_and_compile(g.outputs(g.binary("y", kind, [a, b], quant)), compile_cache, kind)


@pytest.mark.parametrize("dtype", ["f32", "i8"])
def test_float_and_int8_softmax(dtype, compile_cache):
    g = GraphBuilder()
    quantized = dtype == "i8"
    x = g.input("x", dtype, (3, 11), q(0.09, -4) if quantized else None)
    op = Softmax(-1, beta=0.7, quant=q(1 / 256, -128)) if quantized else Softmax(-1, beta=0.7)
    _check_and_compile(g.outputs(g.op("y", op, [x])), compile_cache, f"softmax_{dtype}")


def int8_svdf_model():
    """An int8 SVDF as LiteRT's integer kernel takes it: int16 time weights and memory, RELU."""
    from tests.compile.harness import single_op_model

    x = TypedFact(DatumType.I8, (2, 7), qparams=q(0.05, -7))
    features = RNG.integers(-127, 128, (6, 7)).astype(np.int8)
    times = RNG.integers(-3000, 3000, (6, 5)).astype(np.int16)
    bias = RNG.integers(-3000, 3000, 3).astype(np.int32)
    op = Svdf(rank=2, activation="RELU", initial_state=np.zeros((2, 30), np.int16), state_q=q(0.01), quant=q(0.2, 5))
    return single_op_model(op, [x, (features, q(0.01)), (times, q(0.0002)), (bias, q(0.05 * 0.01))], "svdf")


@pytest.mark.parametrize("dtype", ["f32", "i8"])
def test_float_and_int8_svdf(dtype, compile_cache):
    from tests.compile.test_recurrent import svdf_model

    model = svdf_model(dtype, activation="RELU") if dtype == "f32" else int8_svdf_model()
    sets = _sets(model, 4)
    check_model(model, sets)
    check_against_interpreter(model, compile_cache, inputs=sets, stateful=True, name=f"svdf_{dtype}")


@pytest.mark.parametrize("dtype,exclusive,reverse", [("f32", False, False), ("f32", True, True), ("i32", True, False),
                                                     ("i32", False, True)])
def test_cumsum_compiles(dtype, exclusive, reverse, compile_cache):
    g = GraphBuilder()
    x = g.input("x", dtype, (3, 5, 2))
    y = g.op("y", CumScan("sum", exclusive, reverse), [x, g.const("axis", np.array(1, np.int32))])
    _check_and_compile(g.outputs(y), compile_cache, "cumsum")


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("dtype,out", [("f32", "i32"), ("i8", "i64")])
def test_arg_max_and_min_compile(kind, dtype, out, compile_cache):
    g = GraphBuilder()
    x = g.input("x", dtype, (3, 4, 5), q(0.07, -5) if dtype == "i8" else None)
    model = g.outputs(g.op("y", ArgReduce(kind, 1, keepdims=False, dtype=DatumType(out)), [x]))
    sets = [[random_values(model.input_fact(0), RNG, -3, 3) if dtype == "i8" else
             np.round(RNG.standard_normal((3, 4, 5))).astype(np.float32)] for _ in range(3)]  # ties: first index
    check_model(model, sets)
    check_against_interpreter(model.into_optimized(), compile_cache, inputs=sets, name="arg")


@pytest.mark.parametrize("kind", ["squared_difference", "div"])
def test_int8_squared_difference_and_div_compile_on_every_pair(kind, compile_cache):
    """Every int8 pair (DIV: every nonzero divisor; small numerators shift past 31 bits)."""
    from tests.tflite.builder import all_pairs
    from tests.tflite.test_ops_elementwise import INT8_CASES, binary_model

    quant = INT8_CASES[kind][0]
    a, b = all_pairs("i8")
    if kind == "div":
        keep = b != quant[1].zero_point[0]
        a, b = a[keep], b[keep]
    model = binary_model(kind, "i8", [a.shape, b.shape], quant)
    check_against_interpreter(model, compile_cache, inputs=[[a, b]], name=kind)


def test_uint8_div_compiles(compile_cache):
    from tests.tflite.test_ops_elementwise import binary_model

    quant = (q(0.05, 128), q(0.07, 125), q(0.1, 128))
    model = binary_model("div", "u8", [(4, 64), (64,)], quant)
    sets = [[random_values(f, RNG) for f in model.input_facts] for _ in range(3)]
    for _, divisor in sets:
        divisor[divisor == 125] = 126
    check_against_interpreter(model, compile_cache, inputs=sets, name="div_u8")


def bilinear_model(dtype: str, size, align: bool, half: bool):
    from tests.tflite.test_ops_spatial import _resize_inputs, resize_op

    g = GraphBuilder()
    x = g.input("x", dtype, (2, 4, 5, 3), None if dtype == "f32" else q(0.1, {"i8": 3, "u8": 128, "i16": 0}[dtype]))
    return g.outputs(g.op("y", resize_op("linear", align, half), [x, *_resize_inputs(g, size)]))


@pytest.mark.parametrize("dtype,size,align,half", [("f32", (7, 9), False, False), ("i8", (10, 10), False, True),
                                                   ("u8", (3, 2), True, False), ("i16", (8, 10), False, True)])
def test_bilinear_resize_compiles(dtype, size, align, half, compile_cache):
    _check_and_compile(bilinear_model(dtype, size, align, half), compile_cache, f"bilinear_{dtype}", count=2)


def test_new_kernels_build_without_warnings(tmp_path):
    from tractile.compile import generate

    g = GraphBuilder()
    x = g.input("x", "f32", (3, 4, 5))
    scan = g.op("s", CumScan("sum", True, True), [x, g.const("axis", np.array(2, np.int32))])
    arg = g.op("a", ArgReduce("max", 1, keepdims=True, select_last_index=True, dtype=DatumType.I32), [scan])
    assert_builds_without_warnings(generate(g.outputs(arg), name="scans"), tmp_path / "scans")
    for dtype in ("f32", "u8", "i8", "i16"):
        source = generate(bilinear_model(dtype, (7, 9), False, True), name=f"bilinear_{dtype}")
        assert_builds_without_warnings(source, tmp_path / dtype)
    from tests.tflite.test_ops_elementwise import INT8_CASES, binary_model

    division = binary_model("div", "i8", [(3, 4), (4,)], INT8_CASES["div"][0])
    assert_builds_without_warnings(generate(division.into_optimized(), name="division"), tmp_path / "div")


def test_new_kernels_verify_on_the_cortex_m4(tmp_path):
    """DIV's shifts past 31 bits, the bilinear taps and the int8 running sum on the device."""
    from tests.compile.test_targets import needs_board
    from tests.tflite.test_ops_elementwise import INT8_CASES, binary_model
    from tractile.compile.targets.verify import verify

    needs_board("cortex-m4")
    g = GraphBuilder()
    x = g.input("x", "i8", (1, 4, 5, 3), q(0.1, 3))
    from tests.tflite.test_ops_spatial import _resize_inputs, resize_op

    resized = g.op("r", resize_op("linear", False, True), [x, *_resize_inputs(g, (7, 9))])
    summed = g.op("s", CumScan("sum", False, True, quant=q(0.3, -4)), [resized, g.const("axis", np.array(2, np.int32))])
    report = verify(g.outputs(summed).into_optimized(), "cortex-m4", runs=2, folder=tmp_path / "resize")
    assert report["verified"], report["first_difference"]
    quant = INT8_CASES["div"][0]
    a, b = np.arange(-128, 128).astype(np.int8).reshape(16, 16), np.arange(-128, 128, 16).astype(np.int8)
    b[b == quant[1].zero_point[0]] += 1  # no zero divisor
    model = binary_model("div", "i8", [a.shape, b.shape], quant).into_optimized()
    report = verify(model, "cortex-m4", runs=0, inputs=[[a, b]], folder=tmp_path / "div")
    assert report["verified"], report["first_difference"]
