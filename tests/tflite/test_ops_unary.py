"""Element-wise math (ABS, NEG, EXP, LOG, SQRT, RSQRT, SQUARE, SIN, COS, FLOOR, CEIL, ROUND,
SIGN), the activations beyond the ReLU family (ELU, GELU, int16 LOGISTIC and TANH), L2
normalization and (de)quantization on self-built models, checked against the TFLite
interpreter's reference kernels (and TFLite Micro for the int16 activations)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, assert_saturates, check_model, every_value, q, random_values
from tractile.datum import DatumType
from tractile.ops import binary, unary
from tractile.ops.cast import Cast
from tractile.ops.norm import LpNorm
from tractile.ops.quant import Dequantize, Quantize

RNG = np.random.default_rng(24)

FLOAT_UNARY = {"abs": unary.Abs, "neg": unary.Neg, "exp": unary.Exp, "log": unary.Log, "sqrt": unary.Sqrt,
               "rsqrt": unary.Rsqrt, "sin": unary.Sin, "cos": unary.Cos, "floor": unary.Floor, "ceil": unary.Ceil,
               "round": unary.Round, "sign": unary.Sign}
POSITIVE = ("log", "sqrt", "rsqrt")


def single(op, dtype: str, shape, in_q=None, inputs: int = 1):
    g = GraphBuilder()
    x = g.input("x", dtype, shape, in_q)
    return g.outputs(g.op("y", op, [x] * inputs))


@pytest.mark.parametrize("kind", sorted(FLOAT_UNARY))
def test_float_unary(kind):
    model = single(FLOAT_UNARY[kind](), "f32", (3, 1, 7))
    sets = []
    for _ in range(2):
        x = random_values(model.input_fact(0), RNG)
        x[0, 0, :3] = [-2.5, 0.5, 1.5]  # ROUND's ties go to even
        sets.append([np.abs(x) + np.float32(0.01) if kind in POSITIVE else x])
    check_model(model, sets, oracle="builtin" if kind in ("ceil", "round") else "reference")


def test_square_is_a_product():
    model = single(binary.Mul(), "f32", (4, 5), inputs=2)
    check_model(model, [[random_values(model.input_fact(0), RNG)]])


@pytest.mark.parametrize("dtype,in_q,out_q", [("i8", q(0.05, -7), q(0.02, -100)), ("i8", q(0.05, 3), q(0.05, -120)),
                                              ("i16", q(0.002), q(0.0011))])
def test_quantized_abs(dtype, in_q, out_q):
    model = single(unary.Abs(quant=out_q), dtype, (256,) if dtype == "i8" else (4, 300), in_q)
    x = every_value("i8") if dtype == "i8" else random_values(model.input_fact(0), RNG)
    out = check_model(model, [[x]])[0][0]
    if dtype == "i8":  # the largest magnitude, rescaled (or not when the scales agree)
        ratio = in_q.scale[0] / out_q.scale[0]
        magnitude = max(127 - in_q.zero_point[0], in_q.zero_point[0] + 128)
        assert out.max() == min(127, round(magnitude * ratio) + out_q.zero_point[0])


@pytest.mark.parametrize("dtype,in_q,out_q", [("i8", q(0.05, -128), q(0.02, -128)), ("i8", q(0.3, -20), q(0.01, 0)),
                                              ("i16", q(0.004), q(0.001))])
def test_quantized_rsqrt(dtype, in_q, out_q):
    """int8 against the reference kernels; int16 against TFLite Micro (LiteRT's int16 RSQRT
    does not follow its own fixed-point kernel)."""
    model = single(unary.Rsqrt(quant=out_q), dtype, (1, 256) if dtype == "i8" else (2, 500), in_q)
    zero = in_q.zero_point[0]
    if dtype == "i8":
        x = np.clip(every_value("i8"), zero, 127).astype(np.int8).reshape(1, 256)
    else:
        x = RNG.integers(0, 32768, (2, 500)).astype(np.int16)
        x[0, :3] = [0, 1, 2]
    check_model(model, [[x]], oracle="micro" if dtype == "i16" else "reference")


@pytest.mark.parametrize("kind,dtype,in_q,out_q", [
    ("elu", "i8", q(0.05, 10), q(0.03, -60)), ("gelu", "i8", q(0.04, -5), q(0.025, -100)),
    ("gelu_tanh", "i8", q(0.04, -5), q(0.025, -100)), ("gelu", "u8", q(0.05, 128), q(0.03, 30)),
    ("relu_0_to_1", "i8", q(0.01, 0), q(1 / 255, -128)), ("relu", "i16", q(0.001), q(0.001)),
])
def test_quantized_activations_every_value(kind, dtype, in_q, out_q):
    g = GraphBuilder()
    x = g.input("x", dtype, (256,) if dtype != "i16" else (1000,), in_q)
    model = g.outputs(g.activation("y", kind, x, out_q))
    values = every_value(dtype) if dtype != "i16" else random_values(model.input_fact(0), RNG)
    out = check_model(model, [[values]], oracle="micro" if kind == "elu" else "reference")[0][0]
    if kind == "relu_0_to_1":
        assert_saturates(out, -128, 127)


@pytest.mark.parametrize("kind", ["elu", "gelu", "gelu_tanh"])
def test_float_activations(kind):
    g = GraphBuilder()
    model = g.outputs(g.activation("y", kind, g.input("x", "f32", (2, 3, 40))))
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(2)],
                oracle="builtin" if kind == "elu" else "reference")


@pytest.mark.parametrize("kind", ["logistic", "tanh"])
@pytest.mark.parametrize("scale", [2 ** -12, 2 ** -11, 0.0003])
def test_int16_logistic_and_tanh(kind, scale):
    """Bit-exact with the reference kernels (and TFLite Micro: the same kernel) on every int16
    value, power-of-two input scales included."""
    g = GraphBuilder()
    model = g.outputs(g.activation("y", kind, g.input("x", "i16", (1, 65536), q(scale)), q(2 ** -15)))
    x = np.arange(-32768, 32768).astype(np.int16).reshape(1, -1)
    out = check_model(model, [[x]])[0][0]
    assert np.all(np.diff(out[0].astype(np.int64)) >= 0)  # monotonic over every input
    assert int(out[0, -1]) - int(out[0, 0]) > (32000 if kind == "logistic" else 64000)


@pytest.mark.parametrize("dtype", ["f32", "i8"])
def test_l2_normalization(dtype):
    quant = q(0.05, 4) if dtype == "i8" else None
    g = GraphBuilder()
    x = g.input("x", dtype, (3, 5, 16), quant)
    model = g.outputs(g.op("y", LpNorm(-1, 2, 1e-6, quant=q(1 / 128, 0) if quant else None), [x]))
    sets = [[random_values(model.input_fact(0), RNG)] for _ in range(3)]
    check_model(model, sets)


@pytest.mark.parametrize("source,target,in_q,out_q", [
    ("f32", "i8", None, q(0.02, -3)), ("f32", "u8", None, q(0.03, 128)), ("f32", "i16", None, q(0.0002)),
    ("i8", "i8", q(0.02, 5), q(0.05, -9)), ("i8", "i16", q(0.02, 5), q(0.0004)), ("i16", "i8", q(0.0007), q(0.02, 3)),
    ("u8", "i8", q(0.05, 128), q(0.05, 0)),
])
def test_quantize(source, target, in_q, out_q):
    model = single(Quantize(DatumType(target), out_q), source, (2, 150), in_q)
    if source == "f32":  # ties, saturation and ordinary values
        x = np.concatenate([(np.arange(-75, 75) + 0.5) * out_q.scale[0],
                            RNG.standard_normal(150) * 200 * out_q.scale[0]]).astype(np.float32).reshape(2, 150)
    else:
        x = random_values(model.input_fact(0), RNG)
    check_model(model, [[x]])


@pytest.mark.parametrize("source,quant", [("i8", q(0.02, -3)), ("u8", q(0.1, 130)), ("i16", q(0.0003)), ("f16", None)])
def test_dequantize(source, quant):
    """Integers by their quantization; float16 (weights of float16-quantized models) widened."""
    model = single(Dequantize() if quant else Cast(DatumType.F32), source, (3, 40), quant)
    out = check_model(model, [[random_values(model.input_fact(0), RNG)]], rtol=0)[0][0]
    assert out.dtype == np.float32


@pytest.mark.parametrize("source,target", [("f32", "i32"), ("i32", "f32"), ("i8", "i32"), ("f32", "bool"),
                                           ("bool", "f32"), ("i32", "i16")])
def test_cast(source, target):
    model = single(Cast(DatumType(target)), source, (4, 9))
    x = random_values(model.input_fact(0), RNG)
    if source == "i32":
        x = RNG.integers(-40000, 40000, (4, 9)).astype(np.int32)
    check_model(model, [[x]])


@pytest.mark.parametrize("scale,depth", [(0.001, 10), (0.0003, 50), (0.01, 5)])
def test_int16_softmax(scale, depth):
    """int16 SOFTMAX (TFLite Micro's and the reference kernel's interpolated tables), bit for bit."""
    from tractile.ops.nn import Softmax

    g = GraphBuilder()
    x = g.input("x", "i16", (8, depth), q(scale))
    model = g.outputs(g.op("y", Softmax(-1, to=DatumType.I16, quant=q(1 / 32768)), [x]))
    close = RNG.integers(-30, 30, (8, depth)).astype(np.int16)
    out = check_model(model, [[random_values(model.input_fact(0), RNG)], [close]])
    assert out[1][0].min() >= 0 and abs(int(out[1][0].sum(axis=-1).mean()) - 32768) < 32 * depth
    check_model(model, [[close]], oracle="micro")
