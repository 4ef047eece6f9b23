"""Reductions (MEAN, SUM, REDUCE_MAX/MIN/PROD/ANY/ALL) on self-built models, checked against the
TFLite interpreter (and TFLite Micro where LiteRT's reference kernel cannot be the oracle)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, assert_saturates, assert_ties, check_model, q, random_values
from tests.tflite.oracle import micro_interpreter, reference_interpreter, run_micro, run_reference
from tractile.formats.tflite.writer import write_model
from tractile.ops.reduce import Reduce

RNG = np.random.default_rng(21)


def reduction(kind: str, axes, keep: bool, quant=None) -> Reduce:
    """The core Reduce a TFLite reduction translates to (``quant``: a quantized mean or sum's output)."""
    return Reduce(kind, tuple(axes), keepdims=keep, noop_with_empty_axes=True,
                  quant=quant if kind in ("mean", "sum") else None)


def single_op(op, dtype: str, shape, in_q=None, out_q=None):
    g = GraphBuilder()
    x = g.input("x", dtype, shape, in_q)
    return g.outputs(g.op("y", op, [x]))


def random_sets(model, count: int = 4):
    return [[random_values(f, RNG) for f in model.input_facts] for _ in range(count)]


AXES = [((1,), False), ((1, 2), True), ((-1,), False), ((0, 1, 2), False)]


@pytest.mark.parametrize("axes,keep", AXES)
@pytest.mark.parametrize("kind", ["mean", "sum", "max"])
@pytest.mark.parametrize("dtype", ["f32", "u8"])
def test_reductions(kind, axes, keep, dtype):
    in_q = q(0.05, 130) if dtype == "u8" else None
    out_q = in_q if kind == "max" else (q(0.2, 120) if dtype == "u8" else None)
    model = single_op(reduction(kind, axes, keep, out_q), dtype, (2, 5, 7), in_q, out_q)
    check_model(model, random_sets(model))


@pytest.mark.parametrize("axes,keep", AXES)
@pytest.mark.parametrize("kind", ["mean", "max"])
@pytest.mark.parametrize("dtype", ["i8", "i16"])
def test_signed_mean_and_max(kind, axes, keep, dtype):
    in_q = q(2 ** -4, -3 if dtype == "i8" else 0)
    out_q = in_q if kind == "max" else q(2 ** -5, 5 if dtype == "i8" else 0)
    model = single_op(reduction(kind, axes, keep, out_q), dtype, (2, 5, 7), in_q, out_q)
    check_model(model, random_sets(model))


def test_int8_mean_hits_ties_and_saturation():
    x = np.stack(np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij"), -1).reshape(-1, 2)
    in_q, out_q = q(3 * 2 ** -4, 0), q(2 ** -4, 0)
    model = single_op(reduction("mean", (1,), False, out_q), "i8", x.shape, in_q, out_q)
    out = check_model(model, [[x.astype(np.int8)]])[0][0]
    assert_ties(x.sum(axis=1) / 2 * 3)
    assert_saturates(out, -128, 127)


@pytest.mark.parametrize("dtype,in_q,out_q", [("i8", q(2 ** -4, 3), q(2 ** -3, -7)), ("i16", q(0.01), q(0.03))])
def test_signed_sum_matches_tflite_micro(dtype, in_q, out_q):
    """int8/int16 SUM follows TFLite Micro (and TFLite's own integer arithmetic).

    TFLite's reference SUM kernel reads int8 and int16 data as uint8 (``reduce.cc``
    instantiates ``QuantizedMeanOrSum`` with ``uint8_t`` in its reference branch), so it
    cannot be the oracle here; the test checks that diagnosis too.
    """
    model = single_op(reduction("sum", (1,), False, out_q), dtype, (3, 6, 5), in_q, out_q)
    data = write_model(model)
    interpreter = micro_interpreter(data)
    outputs = []
    for inputs in random_sets(model, 20):
        outputs.append(model.run(inputs)[0])
        np.testing.assert_array_equal(outputs[-1], run_micro(interpreter, inputs)[0])
        if dtype == "i8":
            assert_ties((inputs[0].astype(np.float64) - 3).sum(axis=1) / 2 - 7)
    if dtype == "i8":
        assert_saturates(np.concatenate(outputs), -128, 127)
    if dtype == "i8":
        x = random_sets(model, 1)[0][0]
        as_uint8 = x.view(np.uint8).astype(np.int64).sum(axis=1) - in_q.zero_point[0] * 6
        reference = run_reference(reference_interpreter(data), [x])[0]
        from tractile.ops.quantized.fixedpoint import Requantizer

        misread = Requantizer([np.float64(in_q.scale[0]) / np.float64(out_q.scale[0])])(as_uint8) + out_q.zero_point[0]
        np.testing.assert_array_equal(reference, np.clip(misread, 0, 255).astype(np.uint8).view(np.int8))


@pytest.mark.parametrize("kind,dtype", [("min", "f32"), ("min", "i8"), ("prod", "f32"), ("prod", "i32"),
                                        ("sum", "i32"), ("max", "i32"), ("any", "bool"), ("all", "bool")])
def test_other_reductions(kind, dtype):
    quant = q(0.05, -4) if dtype == "i8" else None
    model = single_op(reduction(kind, (0, 2), False), dtype, (3, 4, 5), quant)
    sets = [[random_values(f, RNG, -3, 3) for f in model.input_facts] for _ in range(3)]
    if kind == "prod" and dtype == "f32":
        sets = [[np.float32(0.6) * x] for [x] in sets]
    out = check_model(model, sets)
    assert model.output_fact(0).qparams == quant and out[0][0].shape == (4,)


@pytest.mark.parametrize("dtype,keep", [("f32", False), ("i8", False), ("i8", True), ("u8", False)])
def test_global_average_pooling_mean(dtype, keep):
    """Keras's GlobalAveragePooling2D: MEAN over the spatial axes of NHWC, int8 with the
    input's quantization (the converter's choice) or another."""
    quant = {"f32": (None, None), "i8": (q(0.07, -11), q(0.07, -11) if keep else q(0.02, 3)),
             "u8": (q(0.05, 120), q(0.01, 100))}[dtype]
    model = single_op(reduction("mean", (1, 2), keep, quant[1]), dtype, (2, 7, 5, 6), quant[0])
    check_model(model, random_sets(model, 3))
