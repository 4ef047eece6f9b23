"""Convolutions, transposed convolutions, pooling and resizing on self-built models, against TFLite."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import (
    GraphBuilder,
    Window2D,
    assert_saturates,
    assert_ties,
    check_model,
    q,
    qc,
    random_values,
)
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.formats.tflite.ops.resize import resize_op

RNG = np.random.default_rng(22)
#: per-channel scale ratios s_in * s_w / s_out of 1/2, 3/2, 5/2...: odd accumulators fall on ties
HALVES = [0.5, 1.5, 2.5, 0.5, 1.5, 2.5]


def weights(shape, dtype: str) -> np.ndarray:
    return random_values(TypedFact(DatumType(dtype), shape), RNG)


def conv_model(dtype: str, depthwise: bool, window: Window2D, bias_dtype: str | None, activation="NONE",
               multiplier: int = 1, channels: int = 4):
    g = GraphBuilder()
    filters = channels * multiplier if depthwise else 6
    if dtype == "u8":
        in_q, w_q, out_q = q(0.05, 130), q(0.02, 120), q(0.3, 100)
    else:
        in_q = q(2 ** -6, 3 if dtype == "i8" else 0)
        w_scales = [2 ** -6 * (r if dtype == "i8" else r * 0.01) for r in (HALVES * 2)[:filters]]
        w_q = qc(w_scales, 3 if depthwise else 0)
        out_q = q(2 ** -12, -4 if dtype == "i8" else 0)
    x = g.input("x", dtype, (2, 7, 8, channels), in_q)
    w_shape = (1, 3, 3, filters) if depthwise else (filters, 3, 3, channels)
    w = g.const("w", weights(w_shape, "u8" if dtype == "u8" else "i8"), None, w_q)
    inputs = [x, w]
    if bias_dtype:
        scales = [in_q.scale[0] * s for s in w_q.scale]
        bias_q = qc(scales, 0) if len(scales) > 1 else q(scales[0])
        inputs.append(g.const("b", RNG.integers(-3000, 3000, filters), bias_dtype, bias_q))
    build = g.depthwise if depthwise else g.conv
    return g.outputs(build("y", inputs, window, out_q, activation))


WINDOWS = [Window2D("SAME", 1, 1), Window2D("VALID", 2, 2), Window2D("SAME", 1, 1, 2, 2), Window2D("SAME", 2, 1)]


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("dtype,bias_dtype", [("i8", "i32"), ("u8", "i32"), ("i16", "i64"), ("i16", "i32")])
def test_conv_2d(dtype, bias_dtype, window):
    model = conv_model(dtype, False, window, bias_dtype, "RELU6" if dtype != "i16" else "NONE")
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("dtype,bias_dtype,multiplier", [("i8", "i32", 1), ("i8", None, 2), ("u8", "i32", 1),
                                                         ("i16", "i64", 2), ("i16", None, 1)])
def test_depthwise_conv_2d(dtype, bias_dtype, multiplier, window):
    model = conv_model(dtype, True, window, bias_dtype, "RELU" if dtype == "i8" else "NONE", multiplier)
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])


def test_int8_conv_hits_ties_and_saturation():
    model = conv_model("i8", False, Window2D("VALID", 1, 1), "i32")
    x = random_values(model.input_fact(0), RNG)
    out = check_model(model, [[x]])[0][0]
    w = model.nodes[model.node_by_name("w").id].op.value.astype(np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.int64) - 3, (3, 3), axis=(1, 2))
    acc = np.einsum("nhwcij,oijc->nhwo", windows, w)
    assert_ties(acc * np.array(HALVES))
    assert_saturates(out, -128, 127)


def test_int8_depthwise_conv_hits_ties_and_saturation():
    model = conv_model("i8", True, Window2D("VALID", 1, 1), "i32", channels=6)
    x = random_values(model.input_fact(0), RNG)
    out = check_model(model, [[x]])[0][0]
    w = model.nodes[model.node_by_name("w").id].op.value.astype(np.int64)[0]
    windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.int64) - 3, (3, 3), axis=(1, 2))
    acc = np.einsum("nhwcij,ijc->nhwc", windows, w)
    assert_ties(acc * np.array(HALVES))
    assert_saturates(out, -128, 127)


def test_float_convolutions():
    for depthwise in (False, True):
        g = GraphBuilder()
        x = g.input("x", "f32", (1, 9, 10, 3))
        w = g.const("w", RNG.standard_normal((1, 3, 3, 6) if depthwise else (5, 3, 3, 3)).astype(np.float32))
        b = g.const("b", RNG.standard_normal(6 if depthwise else 5).astype(np.float32))
        y = g.depthwise("y", [x, w, b], Window2D("SAME", 2, 2), activation="RELU6") if depthwise \
            else g.conv("y", [x, w, b], Window2D("VALID", 1, 2, 2, 1), activation="RELU")
        model = g.outputs(y)
        check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])


def transpose_conv_model(dtype: str, padding: str, stride: int, out_shape, bias: bool):
    g = GraphBuilder()
    in_q = None if dtype == "f32" else q(2 ** -5, 3 if dtype == "i8" else 0)
    x = g.input("x", dtype, (1, 4, 5, 3), in_q)
    w_q = None if dtype == "f32" else qc([2 ** -5 * r * (1 if dtype == "i8" else 0.01) for r in HALVES[:4]], 0)
    w_values = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32) if dtype == "f32" else weights((4, 3, 3, 3), "i8")
    inputs = [x, g.const("w", w_values, None, w_q)]
    if bias:
        if dtype == "f32":
            inputs.append(g.const("b", RNG.standard_normal(4).astype(np.float32)))
        else:
            scales = [in_q.scale[0] * s for s in w_q.scale]
            inputs.append(g.const("b", RNG.integers(-5000, 5000, 4), "i32" if dtype == "i8" else "i64", qc(scales, 0)))
    out_q = None if dtype == "f32" else q(2 ** -10, -2 if dtype == "i8" else 0)
    return g.outputs(g.transpose_conv("y", inputs, Window2D(padding, stride, stride), out_shape, out_q,
                                      "RELU" if bias else "NONE"))


@pytest.mark.parametrize("padding,stride,out_shape", [("SAME", 2, (1, 8, 10, 4)), ("VALID", 2, (1, 9, 11, 4)),
                                                      ("VALID", 1, (1, 6, 7, 4)), ("SAME", 3, (1, 12, 14, 4)),
                                                      ("VALID", 3, (1, 12, 17, 4))])
@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
@pytest.mark.parametrize("bias", [False, True])
def test_transpose_conv(dtype, padding, stride, out_shape, bias):
    model = transpose_conv_model(dtype, padding, stride, out_shape, bias)
    outputs = check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])
    if dtype == "i8" and not bias:
        assert_saturates(np.concatenate([o[0].reshape(-1) for o in outputs]), -128, 127)


RESIZES = [((7, 9), False, False), ((3, 2), True, False), ((10, 10), False, True), ((8, 10), False, True)]


@pytest.mark.parametrize("size,align,half", RESIZES)
@pytest.mark.parametrize("kind", ["bilinear", "nearest"])
@pytest.mark.parametrize("dtype", ["i8", "u8", "f32", "i16"])
def test_resize(kind, dtype, size, align, half):
    quant = None if dtype == "f32" else q(0.1, {"i8": 3, "u8": 128, "i16": 0}[dtype])
    g = GraphBuilder()
    x = g.input("x", dtype, (2, 4, 5, 3), quant)
    op = resize_op("linear" if kind == "bilinear" else "nearest", align, half)
    model = g.outputs(g.op("y", op, [x, *_resize_inputs(g, size)]))
    assert model.output_fact(0).qparams == quant
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(2)])


def _resize_inputs(g, size):
    empty = g.const("empty", np.zeros(0, np.float32))
    return [empty, empty, g.const("size", np.asarray(size, np.int32))]


def test_int8_bilinear_upsampling_rounds_ties():
    g = GraphBuilder()
    x = g.input("x", "i8", (1, 2, 16, 16), q(0.1))
    model = g.outputs(g.op("y", resize_op("linear", False, True), [x, *_resize_inputs(g, (4, 32))]))
    values = np.random.default_rng(24).integers(-128, 128, (1, 2, 16, 16)).astype(np.int8)
    values[:, :, 0:4], values[:, :, 4:8] = 127, -128
    out = check_model(model, [[values], [values[:, ::-1].copy()]])[0][0]
    # the weights are 1/16, 3/16, 9/16: the exact interpolation (a float one) has halves
    empty = np.zeros(0, np.float32)
    exact = resize_op("linear", False, True).eval([values.astype(np.float32), empty, empty, np.array([4, 32])])[0]
    assert_ties(exact)
    assert_saturates(out, -128, 127)


@pytest.mark.parametrize("kind, dtype", [("average", "i8"), ("average", "f32"), ("max", "i8"), ("max", "f32"),
                                         ("l2", "f32"), ("average", "i16"), ("max", "i16"), ("average", "u8"),
                                         ("max", "u8")])  # TFLite's L2 pooling is float only
def test_pooling(kind, dtype):
    quant = None if dtype == "f32" else q(0.1 if dtype != "i16" else 0.001, {"i8": 3, "u8": 130, "i16": 0}[dtype])
    g = GraphBuilder()
    x = g.input("x", dtype, (2, 9, 8, 3), quant)
    model = g.outputs(g.pool("y", kind, x, Window2D("SAME", 2, 2), 3, 2, quant, "RELU6"))
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])


@pytest.mark.parametrize("window", [Window2D("SAME", 1, 1), Window2D("SAME", 2, 2), Window2D("VALID", 1, 2, 2, 1),
                                    Window2D("SAME", 3, 3, 1, 2)], ids=str)
@pytest.mark.parametrize("dtype,bias_dtype,multiplier", [("i8", "i32", 1), ("u8", "i32", 1), ("i16", "i64", 2),
                                                         ("f32", None, 2)])
def test_depthwise_conv_2d_on_large_images(dtype, bias_dtype, multiplier, window):
    """Outputs of more than 256 pixels take the per-tap path (rows of whole pixels, column phases)."""
    if dtype == "f32":
        g = GraphBuilder()
        x = g.input("x", "f32", (1, 60, 52, 3))
        w = g.const("w", RNG.standard_normal((1, 3, 3, 3 * multiplier)).astype(np.float32))
        model = g.outputs(g.depthwise("y", [x, w], window, activation="RELU6"))
    else:
        model = conv_model(dtype, True, window, bias_dtype, "NONE", multiplier, channels=3)
        model.set_input_fact(0, f"1,60,52,3,{dtype}")
    assert model.output_fact(0).shape[1] * model.output_fact(0).shape[2] > 256
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(2)])
