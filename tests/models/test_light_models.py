"""The onnx package's real architectures load, run and match their expected outputs."""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

import tractile  # noqa: E402

from ..conftest import run_onnxruntime  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = sorted(os.path.basename(p)[len("light_"):-len(".onnx")] for p in glob.glob(f"{LIGHT}/light_*.onnx"))


def first_input(proto):
    initializers = {i.name for i in proto.graph.initializer}
    return next(i for i in proto.graph.input if i.name not in initializers)


def runner_input(proto) -> np.ndarray:
    """The input onnx's backend runner feeds these models: arange / size, in the declared shape."""
    info = first_input(proto)
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in info.type.tensor_type.shape.dim)
    count = int(np.prod(shape))
    return (np.arange(count).reshape(shape) / count).astype(np.float32)


def test_all_light_models_are_found():
    assert len(MODELS) == 9, MODELS


@pytest.mark.parametrize("name", MODELS)
def test_light_model_matches_expected_output(name):
    path = f"{LIGHT}/light_{name}.onnx"
    proto = onnx.load(path)
    expected = numpy_helper.to_array(onnx.load_tensor(f"{LIGHT}/light_{name}_output_0.pb"))
    model = tractile.load(path)
    got = model.run([runner_input(proto)])[0]
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-7)


@pytest.mark.parametrize("name", ["squeezenet", "resnet50", "inception_v1", "shufflenet"])
def test_light_model_matches_onnxruntime_on_random_input(name):
    # the light models' reference outputs are nearly constant; a random input and onnxruntime
    # exercise every layer's numerics
    path = f"{LIGHT}/light_{name}.onnx"
    proto = onnx.load(path)
    info = first_input(proto)
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = tractile.load(path).run([x])[0]
    np.testing.assert_allclose(got, run_onnxruntime(proto, [x])[0], rtol=1e-3, atol=1e-5)
