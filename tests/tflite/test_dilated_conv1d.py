"""A Keras dilated Conv1D as TensorFlow's converter exports it with an unknown batch:
SPACE_TO_BATCH_ND, EXPAND_DIMS, CONV_2D, RESHAPE, BATCH_TO_SPACE_ND (and a causal PAD).

The models are converted at test time in a child process (``tests/tflite/dilated_converter.py``);
tractile must equal LiteRT's reference kernels (float within 1e-5, int8 bit for bit), write the
model back so that LiteRT agrees again, and compile it to C that equals the interpreter.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.compile.harness import check_against_interpreter
from tests.tflite.oracle import assert_float_close, reference_interpreter, run_reference
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.reader import read_model
from tractile.formats.tflite.writer import write_model

if importlib.util.find_spec("tensorflow") is None or importlib.util.find_spec("tf_keras") is None:
    pytest.skip("converting Keras models needs tensorflow and tf_keras", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("float32", "int8")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("dilated")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tests.tflite.dilated_converter", str(folder)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the converter failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return {name: (folder / f"{name}.tflite").read_bytes() for name in NAMES}


def _inputs(data: bytes, count: int = 6) -> list[list[np.ndarray]]:
    detail = reference_interpreter(data).get_input_details()[0]
    rng = np.random.default_rng(33)
    if detail["dtype"] == np.float32:
        return [[rng.standard_normal(detail["shape"]).astype(np.float32)] for _ in range(count)]
    return [[rng.integers(-128, 128, detail["shape"]).astype(np.int8)] for _ in range(count)]


def _agree(data: bytes, model) -> None:
    interpreter = reference_interpreter(data)
    for inputs in _inputs(data):
        expected, got = run_reference(interpreter, inputs)[0], model.run(inputs)[0]
        if got.dtype.kind == "f":
            assert_float_close(got, expected, 1e-5)
        else:
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", NAMES)
def test_keras_dilated_conv1d_matches_litert_and_round_trips(exported, name):
    data = exported[name]
    opcodes = [op.opcode for op in read_model(data).subgraphs[0].operators]
    assert {"SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "CONV_2D"} <= set(opcodes), opcodes
    model = load_tflite(data).into_optimized()
    _agree(data, model)
    written = write_model(load_tflite(data))
    _agree(written, load_tflite(written).into_optimized())


@pytest.mark.parametrize("name", NAMES)
def test_keras_dilated_conv1d_compiles_bit_exact(exported, name, compile_cache):
    model = load_tflite(exported[name])
    check_against_interpreter(model, compile_cache, inputs=_inputs(exported[name], 3), name=f"dilated_{name}")
