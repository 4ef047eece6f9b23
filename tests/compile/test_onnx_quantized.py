"""ONNX models quantized by onnxruntime's quantizer, compiled to C (``tl_ort.h``): bit for bit with
the interpreter on the host, and on the emulated Cortex-M4."""
from __future__ import annotations

import pytest

import tractile
from tractile.compile import generate
from tractile.compile.targets import board_for
from tractile.compile.targets.firmware import toolchain_available
from tractile.compile.targets.verify import verify

from ..quantized_onnx import inputs, quantize
from .harness import assert_builds_without_warnings, check_against_interpreter

pytest.importorskip("onnxruntime")


@pytest.mark.parametrize(("quant_format", "activations", "weights", "per_channel"), [
    ("QDQ", "QUInt8", "QInt8", True), ("QDQ", "QInt8", "QInt8", True), ("QDQ", "QUInt8", "QUInt8", False),
    ("QOperator", "QUInt8", "QInt8", False)])
def test_quantized_models_compile_bit_for_bit(tmp_path, quant_format, activations, weights, per_channel):
    model = tractile.load(quantize(tmp_path, "q", quant_format, activations, weights, per_channel))
    check_against_interpreter(model, tmp_path, inputs=[[x] for x in inputs(6, seed=4)], rtol=0, atol=0)


def test_the_onnxruntime_kernels_build_without_warnings(tmp_path):
    model = tractile.load(quantize(tmp_path, "q", "QDQ", "QUInt8", "QInt8", per_channel=True))
    source = generate(model, name="cnn_u8")
    assert "tl_ort.h" in source.files and "tl_conv_nhwc_u8_ort" in source.files["cnn_u8.c"]
    assert_builds_without_warnings(source, tmp_path)


def test_a_qdq_model_verified_on_the_cortex_m4(tmp_path):
    missing = toolchain_available(board_for("cortex-m4"))
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    model = tractile.load(quantize(tmp_path, "q", "QDQ", "QUInt8", "QInt8", per_channel=True))
    report = verify(model, "cortex-m4", runs=0, inputs=[[x] for x in inputs(4, seed=5)], folder=tmp_path)
    assert report["verified"], report.get("first_difference")
    assert report["inputs_checked"] == 4
