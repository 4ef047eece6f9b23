"""int8 TFLite convolution models streamed along time: Keras Conv2D-over-frames, depthwise-separable
and Conv1D models converted by TensorFlow's converter (``conv_converter.py``, one child process),
loaded with a symbolic time axis (``-i 1,T,...``), equal to LiteRT's reference kernels at any
length (the Conv1D model at its file's length: LiteRT's reshapes around each CONV_2D hold it),
then pulsed: each push's output frames equal the batch model re-run on
the frames pushed so far, bit for bit, interpreted, compiled for the host and verified on a
Cortex-M4 (QEMU)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tractile
from tests.tflite.oracle import reference_interpreter, run_reference
from tractile.cli.main import main as cli_main
from tractile.dim import TDim
from tractile.formats.tflite.reader import read_model

if importlib.util.find_spec("tensorflow") is None or importlib.util.find_spec("tf_keras") is None:
    pytest.skip("the converter needs tensorflow-cpu and tf-keras", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
#: model -> (the time-symbolic input fact, the pulses it streams with, the builtins it holds)
MODELS = {
    "frames": ("1,T,1,6,i8", (2, 4), {"CONV_2D", "AVERAGE_POOL_2D", "ADD"}),
    "separable": ("1,T,5,3,i8", (2, 6), {"DEPTHWISE_CONV_2D", "CONV_2D", "MAX_POOL_2D"}),
    "conv1d": ("1,T,6,i8", (2, 4), {"RESHAPE", "CONV_2D", "MAX_POOL_2D"}),
}
#: models whose reshapes hold the file's length in LiteRT (only that length runs there)
FIXED_LENGTH = {"conv1d": 16}
LENGTH = 30


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("conv_exports")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tests.tflite.conv_converter", str(folder)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the converter failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return {name: folder / f"{name}.tflite" for name in MODELS}


def frames_input(spec: str, length: int, seed: int) -> np.ndarray:
    shape = [1, length] + [int(d) for d in spec.split(",")[2:-1]]
    return np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)


@pytest.mark.parametrize("name", MODELS)
def test_the_exports_are_int8_convolution_models(exported, name):
    info = read_model(exported[name].read_bytes())
    opcodes = {operator.opcode for operator in info.subgraphs[0].operators}
    assert MODELS[name][2] <= opcodes, opcodes
    assert all(t.dtype.value == "i8" for t in info.subgraphs[0].tensors if t.quant is not None and t.shape[0] == 1)


@pytest.mark.parametrize("name", MODELS)
def test_a_symbolic_time_axis_equals_litert_at_any_length(exported, name):
    spec = MODELS[name][0]
    model = tractile.load(exported[name], inputs=[spec])
    time = model.output_fact(0).shape[1]
    assert isinstance(time, TDim) and set(time.symbols()) == {"T"}
    assert model.output_fact(0).qparams is not None
    if name in FIXED_LENGTH:
        assert model.run([frames_input(spec, LENGTH, 1)])[0].shape[1] == time.eval({"T": LENGTH})
    interpreter = reference_interpreter(exported[name].read_bytes())
    for length in (16,) if name in FIXED_LENGTH else (16, 23, LENGTH):
        x = frames_input(spec, length, length)
        np.testing.assert_array_equal(model.run([x])[0], run_reference(interpreter, [x])[0],
                                      err_msg=f"{name}, {length} frames")


def pushes(run, x: np.ndarray, pulse: int) -> list[np.ndarray]:
    return [run(x[:, start:start + pulse]) for start in range(0, x.shape[1] - pulse + 1, pulse)]


@pytest.mark.parametrize("name", MODELS)
def test_each_push_equals_the_batch_model_on_the_frames_so_far(exported, name):
    spec, pulses, _ = MODELS[name]
    model = tractile.load(exported[name], inputs=[spec])
    x = frames_input(spec, LENGTH, 7)
    for pulse in pulses:
        pulsed = model.pulse("T", pulse)
        delay = pulsed.delays[0]
        state = pulsed.start()
        outputs = pushes(lambda chunk: state.push([chunk])[0], x, pulse)
        emitted, batch = 0, 0
        for index in range(len(outputs)):
            frames = np.concatenate(outputs[:index + 1], axis=1)[:, delay:]
            if frames.shape[1] == emitted:
                continue
            window = model.run([x[:, :(index + 1) * pulse]])[0]
            np.testing.assert_array_equal(frames[:, emitted:], window[:, emitted:frames.shape[1]],
                                          err_msg=f"{name}, pulse {pulse}, push {index}")
            emitted, batch = frames.shape[1], window.shape[1]
        # the frames still owed wait for the same padding's future frames
        assert 0 < batch - 2 <= emitted, f"{name}, pulse {pulse}: {emitted} frames out, the batch model gives {batch}"


@pytest.mark.parametrize("name", MODELS)
def test_compiled_pushes_equal_the_interpreted_ones(exported, name, compile_cache):
    spec, pulses, _ = MODELS[name]
    pulse = pulses[0]
    pulsed = tractile.load(exported[name], inputs=[spec]).pulse("T", pulse)
    compiled = pulsed.compile(name=f"{name}_stream", cache_dir=compile_cache)
    x = frames_input(spec, LENGTH, 11)
    state = pulsed.start()
    expected = pushes(lambda chunk: state.push([chunk])[0], x, pulse)
    got = pushes(lambda chunk: compiled.run([chunk])[0], x, pulse)
    for index, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(a, b, err_msg=f"{name}, push {index}")


@pytest.mark.parametrize("name", ["separable", "conv1d"])
def test_a_stream_verified_on_the_cortex_m4(exported, tmp_path, capsys, name):
    from tests.compile.test_targets import needs_board

    needs_board("cortex-m4")
    assert cli_main(["compile", str(exported[name]), "-i", MODELS[name][0], "--pulse", "2", "--target", "cortex-m4",
                     "--verify", "-o", str(tmp_path / "c")]) == 0
    assert "bit-exact against the interpreter" in capsys.readouterr().out
