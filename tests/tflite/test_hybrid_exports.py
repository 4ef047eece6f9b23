"""Hybrid models as TensorFlow's converter emits them (Dense, LSTM, Conv2D and DepthwiseConv2D
with int8 weights, float activations): within 1e-5 of LiteRT's reference kernels interpreted,
and compiled equal to the interpreter. The convolutions (hybrid CONV_2D and DEPTHWISE_CONV_2D,
as the converter writes them) load onto the core convolutions, which run LiteRT's hybrid
arithmetic and compile."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.tflite.oracle import assert_float_close, reference_interpreter, run_reference
from tractile.datum import DatumType
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.reader import read_model
from tractile.ops.conv import Conv
from tractile.ops.matmul import MatMul

if importlib.util.find_spec("tensorflow") is None or importlib.util.find_spec("tf_keras") is None:
    pytest.skip("the converter needs tensorflow-cpu and tf-keras", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("hybrid_exports")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tests.tflite.hybrid_converter", str(folder)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the converter failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return {name: (folder / f"{name}.tflite").read_bytes() for name in ("dense", "lstm", "conv")}


def runs(shape, count=6, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.standard_normal(shape) * 1.5 + 0.4 * (k % 3)).astype(np.float32)] for k in range(count)]


@pytest.mark.parametrize("name,shape,hybrid_ops", [("dense", (2, 64), "FULLY_CONNECTED"),
                                                   ("lstm", (1, 5, 40), "UNIDIRECTIONAL_SEQUENCE_LSTM")])
def test_converter_hybrid_models_match_litert_and_compile(name, shape, hybrid_ops, exported, compile_cache):
    from tests.compile.harness import check_against_interpreter

    data = exported[name]
    info = read_model(data)
    operators = info.subgraphs[0].operators
    tensors = info.subgraphs[0].tensors
    hybrid = [op for op in operators if op.opcode == hybrid_ops and tensors[op.inputs[1]].dtype.name == "I8"]
    assert hybrid, f"the converter made no hybrid {hybrid_ops}"
    model = load_tflite(data)
    if name == "dense":
        assert sum(isinstance(n.op, MatMul) and n.op.asymmetric_inputs for n in model.nodes) == 2
    interpreter = reference_interpreter(data)
    state = model.state()
    inputs = runs(shape)
    for values in inputs:
        assert_float_close(state.run(values)[0], run_reference(interpreter, values)[0])
    check_against_interpreter(model.into_optimized(), compile_cache, inputs=inputs, stateful=True,
                              name=f"converted_{name}")


def test_converter_hybrid_convolutions_match_litert_and_compile(exported, compile_cache):
    """TensorFlow's converter writes Keras's Conv2D and DepthwiseConv2D as CONV_2D and
    DEPTHWISE_CONV_2D with per-channel int8 weights on float inputs (not DEQUANTIZE + float
    convolutions): the core convolutions run them with LiteRT's hybrid arithmetic."""
    from tests.compile.harness import check_against_interpreter

    data = exported["conv"]
    info = read_model(data)
    tensors = info.subgraphs[0].tensors
    opcodes = {op.opcode: tensors[op.inputs[1]] for op in info.subgraphs[0].operators}
    assert "DEQUANTIZE" not in opcodes
    for name, units in (("CONV_2D", 32), ("DEPTHWISE_CONV_2D", 128)):
        assert opcodes[name].dtype.name == "I8" and len(opcodes[name].quant.scale) == units, name
    model = load_tflite(data)
    hybrid = [n for n in model.nodes if isinstance(n.op, Conv)
              and model.outlet_fact(n.inputs[1]).dtype == DatumType.I8 and n.outputs[0].fact.dtype == DatumType.F32]
    assert len(hybrid) == 2
    interpreter = reference_interpreter(data)
    inputs = runs((1, 9, 8, 16), count=4)
    for values in inputs:
        for ours, expected in zip(model.run(values), run_reference(interpreter, values)):
            assert_float_close(ours, expected)
    check_against_interpreter(model.into_optimized(), compile_cache, inputs=inputs, name="converted_conv")
