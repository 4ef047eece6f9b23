"""Keras image classifiers whose head is GlobalAveragePooling2D (TFLite MEAN over H and W),
converted by TensorFlow's converter (float32 and int8): tractile equals LiteRT's reference
kernels (int8 bit for bit) and the compiled C equals the interpreter bit for bit."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.tflite.oracle import assert_float_close, reference_interpreter, run_reference
from tractile.formats.tflite import load_tflite

from .harness import check_against_interpreter

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, bytes]:
    pytest.importorskip("tensorflow")
    pytest.importorskip("tf_keras")
    folder = tmp_path_factory.mktemp("keras_heads")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tests.tflite.head_converter", str(folder)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the converter failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return {name: (folder / f"{name}.tflite").read_bytes() for name in ("float", "int8")}


@pytest.mark.parametrize("name", ["float", "int8"])
def test_global_average_pooling_classifier(converted, name, compile_cache):
    data = converted[name]
    model = load_tflite(data).into_optimized()
    assert any(node.op.name == "ReduceMean" for node in model.nodes)
    rng = np.random.default_rng(5)
    fact = model.input_fact(0)
    shape = tuple(int(d) for d in fact.shape)
    if name == "int8":
        inputs = [[rng.integers(-128, 128, shape).astype(np.int8)] for _ in range(4)]
    else:
        inputs = [[rng.standard_normal(shape).astype(np.float32)] for _ in range(4)]
    interpreter = reference_interpreter(data)
    for values in inputs:
        ours, reference = model.run(values)[0], run_reference(interpreter, values)[0]
        if name == "int8":
            np.testing.assert_array_equal(ours, reference)
        else:
            assert_float_close(ours, reference)
    check_against_interpreter(model, compile_cache, inputs=inputs, name=f"gap_{name}")
