"""The element-wise family compiled bit for bit with the interpreter, as TFLite's operators
translate: quantized unary ops (8-bit tables, int16 recipes), integer clamps, comparisons
(quantized ones rescaled), logical ops, select, modulo, PRelu, the reductions (Keras's
GlobalAveragePooling2D MEAN in int8 and float among them), L2 normalization and casts."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import ACTIVATION_KINDS, GraphBuilder
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.ops import binary, logic, unary
from tractile.ops.activations import Clip, PRelu, Relu
from tractile.ops.reduce import Reduce

from .harness import check_against_interpreter, q, single_op_model

RNG = np.random.default_rng(31)


def every(dtype: DatumType, shape) -> np.ndarray:
    info = np.iinfo(dtype.np)
    return np.resize(np.arange(info.min, int(info.max) + 1), shape).astype(dtype.np)


@pytest.mark.parametrize("op,dtype,in_q", [
    (unary.Abs(quant=q(0.03, -100)), "i8", q(0.05, -7)), (unary.Rsqrt(quant=q(0.02, -128)), "i8", q(0.05, -128)),
    (ACTIVATION_KINDS["elu"](0, q(0.03, -60)), "i8", q(0.05, 10)),
    (ACTIVATION_KINDS["gelu"](0, q(0.03, 30)), "u8", q(0.05, 128)),
    (unary.Abs(quant=q(0.0011)), "i16", q(0.002)), (Relu(quant=q(0.0015)), "i16", q(0.001)),
    (Clip(0.0, 6.0, quant=q(0.0004)), "i16", q(0.001)),
    (ACTIVATION_KINDS["leaky_relu"](0.3, q(0.0015)), "i16", q(0.001)),
])
def test_quantized_unary(op, dtype, in_q, compile_cache):
    datum = DatumType(dtype)
    model = single_op_model(op, [TypedFact(datum, (3, 100), None, in_q)])
    values = every(datum, (3, 100))
    if isinstance(op, unary.Rsqrt):
        values = np.maximum(values, -128).astype(datum.np)
    cm = check_against_interpreter(model, compile_cache, inputs=[[values]], name="q_unary")
    assert cm.report["arena_bytes"] <= 2 * values.nbytes


@pytest.mark.parametrize("op,dtype", [(Clip(-3.0, 100.0), "i8"), (Clip(None, 1000.0), "i16"), (Relu(), "i32"),
                                      (Clip(0.0, 6.0), "u8")])
def test_integer_clamps(op, dtype, compile_cache):
    """A standalone Clip or Relu on integers (a quantized ReLU keeping its quantization)."""
    model = single_op_model(op, [TypedFact(DatumType(dtype), (4, 33))])
    check_against_interpreter(model, compile_cache, runs=2, name="int_clamp")


@pytest.mark.parametrize("op", ["Rsqrt", "Round", "Sign", "Elu", "Gelu"])
def test_float_unary(op, compile_cache):
    from tractile.ops import smooth

    made = {"Rsqrt": unary.Rsqrt(), "Round": unary.Round(), "Sign": unary.Sign(), "Elu": smooth.Elu(),
            "Gelu": smooth.Gelu()}[op]
    model = single_op_model(made, [TypedFact(DatumType.F32, (3, 21))])
    values = (RNG.standard_normal((3, 21)) * 3).astype(np.float32)
    values[0, :4] = [0.5, 1.5, -2.5, 0.0]
    if op == "Rsqrt":
        values = np.abs(values) + np.float32(0.1)
    check_against_interpreter(model, compile_cache, inputs=[[values]], name="f_unary")


COMPARISONS = [logic.Equal(), logic.NotEqual(), logic.Less(), logic.LessOrEqual(), logic.Greater(),
               logic.GreaterOrEqual()]


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda op: op.name)
@pytest.mark.parametrize("dtype,quant", [("f32", (None, None)), ("i32", (None, None)),
                                         ("i8", (q(0.05, 3), q(0.02, -9)))])
def test_comparisons(op, dtype, quant, compile_cache):
    datum = DatumType(dtype)
    facts = [TypedFact(datum, (2, 3, 4), None, quant[0]), TypedFact(datum, (3, 1), None, quant[1])]
    inputs = [[(RNG.integers(-4, 4, (2, 3, 4)) * (1 if dtype != "i8" else 6)).astype(datum.np),
               (RNG.integers(-4, 4, (3, 1)) * (1 if dtype != "i8" else 15)).astype(datum.np)] for _ in range(3)]
    check_against_interpreter(single_op_model(op, facts), compile_cache, inputs=inputs, name="compare")


@pytest.mark.parametrize("op", [logic.And(), logic.Or(), logic.Xor()], ids=lambda op: op.name)
def test_logical(op, compile_cache):
    facts = [TypedFact(DatumType.BOOL, (4, 5)), TypedFact(DatumType.BOOL, (5,))]
    check_against_interpreter(single_op_model(op, facts), compile_cache, runs=2, name="logical")


def test_not_and_select(compile_cache):
    g = GraphBuilder()
    condition = g.input("c", "bool", (3, 1))
    a, b = g.input("a", "i8", (1, 5), q(0.1, 2)), g.input("b", "i8", (3, 5), q(0.1, 2))
    model = g.outputs(g.op("y", logic.Where(), [g.op("n", logic.Not(), [condition]), a, b]))
    check_against_interpreter(model, compile_cache, runs=3, name="select")


@pytest.mark.parametrize("dtype,fmod", [("f32", False), ("i32", False), ("f32", True), ("i32", True)])
def test_modulo(dtype, fmod, compile_cache):
    datum = DatumType(dtype)
    facts = [TypedFact(datum, (3, 8)), TypedFact(datum, (8,))]
    values = (RNG.integers(-20, 20, (3, 8)) * (1.3 if dtype == "f32" else 1)).astype(datum.np)
    divisors = (RNG.integers(1, 6, 8) * RNG.choice([-1, 1], 8)).astype(datum.np)
    check_against_interpreter(single_op_model(binary.Mod(fmod), facts), compile_cache, inputs=[[values, divisors]],
                              name="mod")


@pytest.mark.parametrize("dtype", ["f32", "i8"])
def test_prelu(dtype, compile_cache):
    g = GraphBuilder()
    quant = q(0.05, 3) if dtype == "i8" else None
    x = g.input("x", dtype, (2, 9, 3), quant)
    slope = g.const("alpha", np.array([-100, 5, 120], np.int8) if dtype == "i8" else
                    np.array([0.1, -0.2, 0.3], np.float32), quant=q(0.01, 2) if dtype == "i8" else None)
    model = g.outputs(g.op("y", PRelu(quant=q(0.04, -5) if dtype == "i8" else None), [x, slope]))
    check_against_interpreter(model, compile_cache, runs=3, name="prelu")


@pytest.mark.parametrize("dtype,keep", [("f32", False), ("i8", False), ("i8", True), ("i16", False)])
def test_global_average_pooling(dtype, keep, compile_cache):
    """Keras's GlobalAveragePooling2D (TFLite MEAN over H and W of NHWC), compiled bit for bit."""
    datum = DatumType(dtype)
    in_q = {"f32": None, "i8": q(0.07, -11), "i16": q(0.001)}[dtype]
    out_q = {"f32": None, "i8": q(0.02, 3), "i16": q(0.0005)}[dtype]
    model = single_op_model(Reduce("mean", (1, 2), keepdims=keep, quant=out_q), [TypedFact(datum, (1, 7, 5, 16), None,
                                                                                           in_q)])
    cm = check_against_interpreter(model, compile_cache, runs=4, name="gap")
    assert len(cm.source.program.nodes) == 1


@pytest.mark.parametrize("reducer,dtype", [("sum", "i32"), ("prod", "i32"), ("max", "i8"), ("min", "i16"),
                                           ("any", "bool"), ("all", "bool"), ("sum", "i8")])
def test_integer_reductions(reducer, dtype, compile_cache):
    datum = DatumType(dtype)
    quant = q(0.05, 1) if reducer == "sum" and dtype == "i8" else None
    in_q = q(0.1, -2) if dtype == "i8" else None
    model = single_op_model(Reduce(reducer, (0, 2), keepdims=False, quant=quant), [TypedFact(datum, (3, 4, 5), None,
                                                                                             in_q)])
    check_against_interpreter(model, compile_cache, runs=3, name="int_reduce")


@pytest.mark.parametrize("dtype", ["f32", "i8"])
def test_l2_normalization(dtype, compile_cache):
    from tractile.ops.norm import LpNorm

    datum = DatumType(dtype)
    in_q = q(0.05, 4) if dtype == "i8" else None
    model = single_op_model(LpNorm(-1, 2, 1e-6, quant=q(1 / 128, 0) if in_q else None),
                            [TypedFact(datum, (5, 16), None, in_q)])
    inputs = [[(RNG.standard_normal((5, 16)) * 3).astype(np.float32)]] if dtype == "f32" else \
        [[every(datum, (5, 16))], [np.full((5, 16), 4, np.int8)]]
    check_against_interpreter(model, compile_cache, inputs=inputs, name="l2norm")


def test_int16_rsqrt(compile_cache):
    model = single_op_model(unary.Rsqrt(quant=q(0.001)), [TypedFact(DatumType.I16, (2, 300), None, q(0.004))])
    values = RNG.integers(0, 32768, (2, 300)).astype(np.int16)
    values[0, :3] = [0, 1, 2]
    check_against_interpreter(model, compile_cache, inputs=[[values]], name="rsqrt16")


def test_family_builds_without_warnings(tmp_path):
    """gcc and clang, -Wall -Wextra -Werror, on a model using this family's C kernels."""
    from tractile.compile import generate
    from tractile.ops.nn import Softmax
    from tractile.ops.norm import LpNorm

    from .harness import assert_builds_without_warnings

    g = GraphBuilder()
    x = g.input("x", "i8", (1, 4, 4, 8), q(0.05, -3))
    pooled = g.op("gap", Reduce("mean", (1, 2), keepdims=False, quant=q(0.02, 1)), [x])
    normed = g.op("l2", LpNorm(-1, 2, 1e-6, quant=q(1 / 128, 0)), [pooled])
    magnitude = g.op("abs", unary.Abs(quant=q(0.01, -128)), [normed])
    below = g.op("less", logic.Less(), [magnitude, normed])
    chosen = g.op("select", logic.Where(), [below, magnitude, g.op("clip", Clip(-100.0, 100.0), [magnitude])])
    wide = g.input("w", "i16", (3, 5), q(0.004))
    root = g.op("rsqrt", unary.Rsqrt(quant=q(0.001)), [g.op("relu", Relu(quant=q(0.004)), [wide])])
    log = g.op("log_softmax", Softmax(log=True, quant=q(16 / 256, 127)), [chosen])
    tanh = g.op("tanh", ACTIVATION_KINDS["tanh"](0, q(2 ** -15)), [wide])
    soft = g.op("softmax16", Softmax(to=DatumType.I16, quant=q(1 / 32768)), [wide])
    assert_builds_without_warnings(generate(g.outputs(log, root, tanh, soft), name="family"), tmp_path)


@pytest.mark.parametrize("scale,depth", [(0.05, 10), (0.5, 7), (0.002, 300)])
def test_int8_log_softmax(scale, depth, compile_cache):
    from tractile.ops.nn import Softmax

    model = single_op_model(Softmax(log=True, quant=q(16 / 256, 127)), [TypedFact(DatumType.I8, (4, depth), None,
                                                                                 q(scale, 3))])
    inputs = [[every(DatumType.I8, (4, depth))], [RNG.integers(-3, 4, (4, depth)).astype(np.int8)]]
    check_against_interpreter(model, compile_cache, inputs=inputs, runs=2, name="log_softmax")


@pytest.mark.parametrize("kind", ["logistic", "tanh"])
@pytest.mark.parametrize("scale", [2 ** -12, 0.0003])
def test_int16_logistic_and_tanh(kind, scale, compile_cache):
    model = single_op_model(ACTIVATION_KINDS[kind](0, q(2 ** -15)), [TypedFact(DatumType.I16, (4, 1024), None,
                                                                               q(scale))])
    values = np.arange(-32768, 32768, 16).astype(np.int16).reshape(4, 1024)
    check_against_interpreter(model, compile_cache, inputs=[[values]], name="sigmoid16")


@pytest.mark.parametrize("scale,depth", [(0.001, 10), (0.0003, 50)])
def test_int16_softmax(scale, depth, compile_cache):
    from tractile.ops.nn import Softmax

    model = single_op_model(Softmax(to=DatumType.I16, quant=q(1 / 32768)), [TypedFact(DatumType.I16, (6, depth), None,
                                                                                     q(scale))])
    close = RNG.integers(-40, 40, (6, depth)).astype(np.int16)
    check_against_interpreter(model, compile_cache, inputs=[[close]], runs=3, name="softmax16")
