"""Hybrid models as TensorFlow's converter emits them (Dense, LSTM, Conv2D and DepthwiseConv2D
with int8 weights, float activations): within 1e-5 of LiteRT's reference kernels interpreted,
and compiled equal to the interpreter. The convolutions run through the hybrid recipe the core
convolution calls (``ops.quantized.hybrid.HybridConv``) with the file's weights."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.tflite.oracle import assert_float_close, reference_interpreter, run_reference
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.reader import buffer_value, read_model
from tractile.ops.matmul import MatMul
from tractile.ops.quantized.hybrid import HybridConv

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


def _conv_weights(info, operator):
    tensors = info.subgraphs[0].tensors
    weights, bias = tensors[operator.inputs[1]], tensors[operator.inputs[2]]
    return buffer_value(info, weights, "weights"), weights.quant, buffer_value(info, bias, "bias")


def test_converter_hybrid_convolutions_match_litert(exported):
    data = exported["conv"]
    info = read_model(data)
    ops = {op.opcode: op for op in info.subgraphs[0].operators}
    w, w_q, b = _conv_weights(info, ops["CONV_2D"])
    assert w.dtype == np.int8 and len(w_q.scale) == 32, "per-channel int8 convolution weights"
    conv = HybridConv(w, np.asarray(w_q.scale), b)
    dw, dw_q, db = _conv_weights(info, ops["DEPTHWISE_CONV_2D"])
    depthwise = HybridConv(np.transpose(dw, (3, 1, 2, 0)), np.asarray(dw_q.scale), db, groups=32, depthwise=True)
    interpreter = reference_interpreter(data)
    names = [d["name"] for d in interpreter.get_output_details()]
    for (x,) in runs((1, 9, 8, 16), count=4):
        outputs = run_reference(interpreter, [x])
        conv_out = outputs[0] if outputs[0].shape[-1] == 32 else outputs[1]
        depth_out = outputs[1] if outputs[0].shape[-1] == 32 else outputs[0]
        # SAME padding, stride 2, 3 x 3 over 9 x 8: (top, left, bottom, right) = (1, 0, 1, 1)
        ours = np.maximum(conv(x, strides=(2, 2), pads=(1, 0, 1, 1)), 0)
        assert ours.shape == conv_out.shape, names
        assert_float_close(ours, conv_out)
        assert_float_close(depthwise(conv_out, pads=(1, 1, 1, 1)), depth_out)
