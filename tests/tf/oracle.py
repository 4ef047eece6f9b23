"""Helpers of the TensorFlow tests: TensorFlow as the oracle, frozen graphs and SavedModels."""
from __future__ import annotations

import numpy as np
import pytest


def tensorflow():
    """TensorFlow, or skip: the oracle and the model builder of these tests (never used by tractile)."""
    pytest.importorskip("tensorboard.compat.proto.graph_pb2",
                        reason="tractile reads TensorFlow protobufs through tensorboard (extra 'tf')")
    return pytest.importorskip("tensorflow", reason="TensorFlow builds the models and is the oracle")


def freeze(function, *specs, lower_control_flow: bool = False):
    """A tf.function traced for ``specs`` and frozen: (GraphDef, the concrete function, output names)."""
    tf = tensorflow()
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    concrete = tf.function(function).get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=lower_control_flow)
    outputs = [t.name for t in frozen.outputs]
    return frozen.graph.as_graph_def(), frozen, outputs


def write_frozen(path, function, *specs, **options):
    """Freeze ``function`` into ``path``; return the concrete function (the reference) and output names."""
    graph_def, frozen, outputs = freeze(function, *specs, **options)
    path.write_bytes(graph_def.SerializeToString())
    return frozen, outputs


def assert_close(actual, expected, rtol: float = 1e-5, what: str = "") -> None:
    """Equal to ``rtol`` relative to the reference's scale (so values near zero compare sensibly)."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    scale = float(np.max(np.abs(expected))) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * max(scale, 1e-6), err_msg=what)


def random_input(rng, shape, dtype=np.float32):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    return rng.integers(-5, 6, shape).astype(dtype)
