"""Shared test helpers: paths to shared models, onnxruntime as an oracle."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_MODELS = ROOT.parent / "shared" / "models"


def shared_model(relative: str) -> Path:
    """Path of a model under ../shared/models, or skip naming the missing path."""
    path = SHARED_MODELS / relative
    if not path.exists():
        pytest.skip(f"shared model {path} is not available")
    return path


def run_onnxruntime(model_proto, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Outputs of onnxruntime (CPU) on ``inputs`` in graph input order."""
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model_proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


@pytest.fixture(scope="session")
def demo_model(tmp_path_factory) -> Path:
    """The bundled demo CNN (examples/make_demo_model.py), written once per session; input N,1,28,28."""
    import onnx

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import make_demo_model
    finally:
        sys.path.pop(0)
    path = tmp_path_factory.mktemp("demo") / "demo.onnx"
    onnx.save(make_demo_model.build(), path)
    return path


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory) -> Path:
    """One cache folder of built compiled models for the whole test session."""
    return tmp_path_factory.mktemp("compiled")
