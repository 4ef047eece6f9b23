"""TRANSPOSE_CONV whose output shape is an input tensor (as TFLite Micro's int16 integration tests
feed it), not a constant: analysis leaves the height and width to run time, each run checks the
given shape, and the outputs equal TFLite's reference kernels bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tractile.datum import DatumType
from tractile.errors import RunError
from tractile.fact import TypedFact
from tractile.ops.conv_transpose import ConvTranspose

from .builder import GraphBuilder, Window2D, check_model, q, qc, random_values, write_model
from .test_ops_spatial import HALVES, weights

RNG = np.random.default_rng(41)


def shape_input_model(dtype: str, padding: str, stride: int, bias: bool):
    g = GraphBuilder()
    in_q = None if dtype == "f32" else q(2 ** -5, 3 if dtype == "i8" else 0)
    shape = g.input("output_shape", "i32", (4,))
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
    return g.outputs(g.transpose_conv("y", [*inputs, shape], Window2D(padding, stride, stride), None, out_q,
                                      "RELU" if bias else "NONE", shape_input=True))


@pytest.mark.parametrize("padding,stride,out_hw", [("SAME", 2, (8, 10)), ("SAME", 2, (7, 9)), ("VALID", 2, (9, 11)),
                                                   ("VALID", 1, (6, 7))])
@pytest.mark.parametrize("dtype", ["f32", "i8", "i16"])
@pytest.mark.parametrize("bias", [False, True])
def test_run_time_output_shape_matches_tflite(dtype, padding, stride, out_hw, bias):
    model = shape_input_model(dtype, padding, stride, bias)
    shape = np.array([1, *out_hw, 4], np.int32)
    outputs = check_model(model, [[shape, random_values(model.input_fact(1), RNG)] for _ in range(2)])
    assert outputs[0][0].shape == (1, *out_hw, 4)


def test_the_loaded_model_keeps_height_and_width_for_run_time():
    data = write_model(shape_input_model("i8", "SAME", 2, True))
    model = tractile.load(data)
    fact = model.output_fact(0)
    assert int(fact.shape[0]) == 1 and int(fact.shape[3]) == 4
    assert not isinstance(fact.shape[1], int) and not isinstance(fact.shape[2], int)  # known at run time
    x = random_values(model.input_fact(1), RNG)
    with pytest.raises(RunError, match="needs an input of"):
        model.run([np.array([1, 20, 10, 4], np.int32), x])
    with pytest.raises(RunError, match="does not fit"):
        model.run([np.array([1, 8, 10, 5], np.int32), x])


def test_a_known_shape_input_gives_a_known_output_shape():
    model = shape_input_model("f32", "SAME", 2, False)
    node = next(n for n in model.nodes if isinstance(n.op, ConvTranspose))
    facts = [model.outlet_fact(o) for o in node.inputs]
    facts[-1] = TypedFact(DatumType.I32, (4,), konst=np.array([1, 8, 10, 4], np.int32))
    assert node.op.output_facts(facts)[0].shape == (1, 8, 10, 4)
