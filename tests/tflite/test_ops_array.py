"""Data movement and reductions on self-built models, checked against the TFLite interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q, random_values
from tractile.formats.tflite.ops.array import pad_ops
from tractile.formats.tflite.ops.slicing import MASKS, slice_ops, strided_slice_ops
from tractile.ops.array import Concat
from tractile.ops.indexing import Gather

RNG = np.random.default_rng(21)
INT8_Q = q(0.1, 3)


def single_op(op, dtype: str, shape, in_q=None, extra=()):
    g = GraphBuilder()
    x = g.input("x", dtype, shape, in_q)
    inputs = [x] + [make(g) for make in extra]
    return g.outputs(g.op("y", op, inputs))


def random_sets(model, count: int = 4):
    return [[random_values(f, RNG) for f in model.input_facts] for _ in range(count)]


@pytest.mark.parametrize("dtype,quants,out_q", [
    ("i8", [INT8_Q, INT8_Q, INT8_Q], INT8_Q),
    ("f32", [None] * 3, None),
    ("u8", [q(0.1, 120), q(0.05, 100), q(0.3, 128)], q(0.2, 128)),
    ("i16", [q(0.01)] * 3, q(0.01)),
])
@pytest.mark.parametrize("axis", [1, -1])
def test_concatenation(dtype, quants, out_q, axis):
    g = GraphBuilder()
    shapes = [(2, 3, 4), (2, 5, 4), (2, 1, 4)] if axis == 1 else [(2, 3, 4), (2, 3, 1), (2, 3, 6)]
    inputs = [g.input(f"x{i}", dtype, shape, quant) for i, (shape, quant) in enumerate(zip(shapes, quants))]
    rescaled = out_q is not None and any(quant != out_q for quant in quants)
    model = g.outputs(g.op("y", Concat(axis, quant=out_q if rescaled else None), inputs))
    assert model.output_fact(0).qparams == out_q
    check_model(model, random_sets(model))


PADS = ((0, 1), (2, 0), (1, 3))


@pytest.mark.parametrize("dtype,quant", [("i8", INT8_Q), ("f32", None), ("u8", q(0.1, 128)), ("i16", q(0.01))])
@pytest.mark.parametrize("with_value", [False, True])
def test_pad_and_padv2(dtype, quant, with_value):
    g = GraphBuilder()
    x = g.input("x", dtype, (2, 3, 4), quant)
    value = None
    if with_value:
        value = np.array(2.5, np.float32) if dtype == "f32" else np.array(-100 if dtype != "u8" else 7)
        value = g.const("value", value, dtype, quant)
    model = g.outputs(g.translate("y", pad_ops, x, np.array(PADS), value))
    assert model.output_fact(0).qparams == quant
    out = check_model(model, random_sets(model))[0][0]
    assert out.shape == (3, 5, 8)
    if not with_value:
        assert (out[2] == (quant.zero_point[0] if quant else 0)).all()


STRIDED = [
    dict(begin=(1, 0, 2), end=(3, 5, 6), strides=(1, 2, 2)),
    dict(begin=(-1, 4, -1), end=(-5, 0, 0), strides=(-1, -2, -3)),
    dict(begin=(0, 1, 0), end=(0, 3, 0), strides=(1, 1, 1), begin_mask=5, end_mask=5),
    dict(begin=(2, 1), end=(3, 4), strides=(1, 1), shrink_axis_mask=1),
    dict(begin=(1,), end=(2,), strides=(1,), shrink_axis_mask=1),
    dict(begin=(0, 1, 0, 0), end=(0, 3, 0, 0), strides=(1, 1, 1, 1), new_axis_mask=1, begin_mask=13, end_mask=13),
    dict(begin=(0, 1), end=(0, 3), strides=(1, 2), ellipsis_mask=1),
    dict(begin=(1, 0, 1), end=(10, 10, -10), strides=(2, 1, -1)),
    dict(begin=(1, 0, 2), end=(2, 3, 2), strides=(1, 1, 1), offset=True),
    dict(begin=(1, 0, 2), end=(2, 0, 3), strides=(1, 1, 1), ellipsis_mask=2, shrink_axis_mask=5),
]


@pytest.mark.parametrize("case", range(len(STRIDED)))
@pytest.mark.parametrize("dtype", ["i8", "f32"])
def test_strided_slice(case, dtype):
    quant = INT8_Q if dtype == "i8" else None
    spec = dict(STRIDED[case])
    masks = {name: spec.pop(name, 0) for name in MASKS}
    g = GraphBuilder()
    x = g.input("x", dtype, (4, 5, 6), quant)
    model = g.outputs(g.translate("y", strided_slice_ops, x, spec["begin"], spec["end"], spec["strides"], masks,
                                  spec.get("offset", False)))
    check_model(model, random_sets(model, 2))


@pytest.mark.parametrize("begin,size", [((1, 0, 2), (2, -1, 3)), ((0, 4, 0), (4, 1, -1))])
@pytest.mark.parametrize("dtype", ["i8", "f32"])
def test_slice(begin, size, dtype):
    quant = INT8_Q if dtype == "i8" else None
    g = GraphBuilder()
    model = g.outputs(g.translate("y", slice_ops, g.input("x", dtype, (4, 5, 6), quant), begin, size))
    check_model(model, random_sets(model, 2))


@pytest.mark.parametrize("axis,batch_dims,indices_shape,indices_dtype", [
    (0, 0, (3,), "i32"), (1, 0, (2, 3), "i32"), (2, 1, (4, 3), "i32"), (-1, 0, (7,), "i64")])
@pytest.mark.parametrize("dtype", ["i8", "f32"])
def test_gather(axis, batch_dims, indices_shape, indices_dtype, dtype):
    quant = INT8_Q if dtype == "i8" else None
    size = (4, 5, 6)[axis]
    indices = lambda g: g.const("indices", RNG.integers(0, size, indices_shape), indices_dtype)  # noqa: E731
    model = single_op(Gather(axis=axis, batch_dims=batch_dims), dtype, (4, 5, 6), quant, (indices,))
    assert model.output_fact(0).qparams == quant
    check_model(model, random_sets(model, 2))


def test_gather_with_indices_input():
    g = GraphBuilder()
    params = g.input("params", "f32", (6, 3))
    indices = g.input("indices", "i32", (4,))
    model = g.outputs(g.op("y", Gather(), [params, indices]))
    sets = [[random_values(model.input_fact(0), RNG), RNG.integers(0, 6, 4).astype(np.int32)] for _ in range(3)]
    check_model(model, sets)


