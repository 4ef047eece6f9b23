"""The host's float convolution of one input channel (tl_conv_one.h), a CRNN's or a grey image's
first layer: within 1e-5 of the interpreter with padding, strides, dilations and batches, on filter
counts that use the four-register blocks over pixel pairs, single registers and the scalar tail;
AVX2 and the portable loops through compiler flags, AArch64 NEON under qemu-aarch64."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile import generate

from .harness import assert_builds_without_warnings, needs_cc
from .test_host_gemm import _cpu_has, aarch64_output, assert_isa_build_matches, assert_matches, run_inputs

RNG = np.random.default_rng(29)


def one_channel(shape, filters: int, kernel, relu: bool = True, **attributes):
    w = RNG.standard_normal((filters, 1, *kernel)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(RNG.standard_normal(filters).astype(np.float32),
                                                                      "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y"], **attributes)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    graph = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


MODELS = {
    # 45 filters: a block of four registers (32 on AVX2, 16 on NEON), single registers, then the tail
    "same_3x3_45": lambda: one_channel((1, 1, 7, 9), 45, (3, 3), pads=[1, 1, 1, 1]),
    "strided_dilated_13": lambda: one_channel((2, 1, 9, 11), 13, (3, 2), relu=False, strides=[2, 1],
                                              dilations=[1, 2], pads=[0, 1, 2, 0]),
    "valid_5x5_stride2_32": lambda: one_channel((1, 1, 12, 15), 32, (5, 5), strides=[2, 2]),
}


def _generate(case: str):
    model = MODELS[case]()
    source = generate(model, name=case)
    assert "tl_conv_one_f32(" in source.source and "tl_conv_gemm_f32(" not in source.source
    return model, source


@pytest.mark.parametrize("case,isa", [*((case, "avx2") for case in sorted(MODELS)), (sorted(MODELS)[0], "portable")])
def test_one_channel_convolution_matches_the_interpreter(case, isa, compile_cache):
    needs_cc()
    if isa == "avx2" and not _cpu_has("avx2"):
        pytest.skip("this CPU lacks AVX2")
    model, source = _generate(case)
    assert_isa_build_matches(model, source, isa, compile_cache, case)


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="no AArch64 cross compiler or qemu-aarch64 (make toolchains)")
def test_one_channel_convolution_under_qemu_aarch64_matches_the_interpreter(tmp_path):
    model, source = _generate("same_3x3_45")
    inputs = run_inputs(model, 1)[0]
    assert_matches(model, [aarch64_output(model, source, inputs, tmp_path)], inputs, "same_3x3_45 on AArch64")


@pytest.mark.parametrize("flags", [("-march=native",), ("-march=x86-64",)])
def test_one_channel_convolution_builds_without_warnings(flags, tmp_path):
    assert_builds_without_warnings(_generate("same_3x3_45")[1], tmp_path, extra_flags=flags)
