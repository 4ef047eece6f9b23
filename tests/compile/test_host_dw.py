"""The host's channel-vectorised float depthwise convolution and float/int8 pooling
(tl_host_dw.h): float within 1e-5 of the interpreter, int8 bit for bit, on channel counts that
leave a tail after the vector lanes, with padding, strides and dilations; AVX2 and the portable
loops on this machine through compiler flags, AArch64 NEON cross-built and run under qemu-aarch64."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from tractile.compile import generate
from tractile.compile.host import CompiledModel, build_shared_library
from tractile.compile.target import find_target

from ..tflite.builder import GraphBuilder, Window2D, q
from .harness import assert_builds_without_warnings, needs_cc
from .test_host_gemm import _cpu_has, aarch64_output, assert_isa_build_matches, assert_matches, run_inputs

RNG = np.random.default_rng(283)


def float_depthwise(channels: int, kernel: tuple, window: Window2D, shape=(2, 9, 8), bias: bool = True):
    g = GraphBuilder()
    x = g.input("x", "f32", (*shape, channels))
    w = g.const("w", RNG.standard_normal((1, *kernel, channels)), "f32")
    inputs = [x, w, g.const("b", RNG.standard_normal(channels), "f32")] if bias else [x, w]
    return g.outputs(g.depthwise("y", inputs, window, None, "RELU6"))


def pooled(kind: str, dtype: str, channels: int, window: Window2D, size: tuple, shape=(2, 9, 7)):
    g = GraphBuilder()
    quant = q(2 ** -5, 3) if dtype == "i8" else None
    x = g.input("x", dtype, (*shape, channels), quant)
    return g.outputs(g.pool("y", kind, x, window, *size, quant, "RELU" if kind == "average" else "NONE"))


SAME2 = Window2D("SAME", 2, 2)
MODELS = {
    "dw_f32_3x3_same_stride2": lambda: float_depthwise(21, (3, 3), SAME2),
    "dw_f32_3x2_valid_dilated": lambda: float_depthwise(11, (3, 2), Window2D("VALID", 1, 1, 2, 2), bias=False),
    "dw_f32_5x5_same": lambda: float_depthwise(16, (5, 5), Window2D("SAME", 1, 1), shape=(1, 6, 5)),
    # four registers of channels at a time (32 on AVX2, 16 on NEON), then one, then the tail
    "dw_f32_3x3_wide": lambda: float_depthwise(45, (3, 3), Window2D("SAME", 1, 1), shape=(1, 6, 5)),
    # rows wide enough for runs of six pixels (the last run overlapping the one before it), two
    # registers of channels at a time, then the channels left over pixel by pixel
    "dw_f32_3x3_runs": lambda: float_depthwise(77, (3, 3), Window2D("SAME", 1, 1), shape=(1, 5, 11)),
    "avg_f32_3x3_same_stride2": lambda: pooled("average", "f32", 13, SAME2, (3, 3)),
    "max_f32_2x2_valid": lambda: pooled("max", "f32", 19, Window2D("VALID", 2, 2), (2, 2)),
    "max_s8_3x3_same_stride2": lambda: pooled("max", "i8", 37, SAME2, (3, 3)),
}
KERNELS = {"dw": "tl_dwconv_host_f32", "avg": "tl_avg_pool_host_f32", "max": "tl_max_pool_host_"}


def _generate(case: str):
    model = MODELS[case]().into_optimized()
    source = generate(model, name=case, optimize=False)
    assert KERNELS[case.split("_")[0]] in source.source, "the host's vectorised kernels are not used"
    return model, source


@pytest.mark.skipif(not shutil.which("gcc"), reason="no gcc")
@pytest.mark.parametrize("isa", ["avx2", "portable"])
@pytest.mark.parametrize("case", sorted(MODELS))
def test_host_depthwise_and_pooling_match_the_interpreter(case, isa, compile_cache):
    needs_cc()
    if isa == "avx2" and not _cpu_has("avx2"):
        pytest.skip("this CPU lacks AVX2")
    model, source = _generate(case)
    assert_isa_build_matches(model, source, isa, compile_cache, case)


def test_max_pool_lets_nan_win_as_the_portable_kernel(compile_cache):
    needs_cc()
    model, source = _generate("max_f32_2x2_valid")
    compiled = CompiledModel(source, build_shared_library(source.files, source.name, cache_dir=compile_cache), model)
    x = RNG.standard_normal((2, 9, 7, 19)).astype(np.float32)
    x[0, 1, 0, 3] = x[1, 4, 5, 17] = np.nan
    y = compiled.run([x])[0]
    assert np.isnan(y[0, 0, 0, 3]) and np.isnan(y[1, 2, 2, 17])
    assert np.isnan(y).sum() == 2


def test_microcontroller_targets_keep_their_pooling_and_depthwise():
    for case in ("dw_f32_3x3_same_stride2", "max_s8_3x3_same_stride2"):
        source = generate(MODELS[case](), name="mcu", target=find_target("cortex-m4"))
        assert "_host_" not in source.source


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="no AArch64 cross compiler or qemu-aarch64 (make toolchains)")
@pytest.mark.parametrize("case", ["dw_f32_3x3_same_stride2", "dw_f32_3x3_runs", "avg_f32_3x3_same_stride2",
                                  "max_f32_2x2_valid", "max_s8_3x3_same_stride2"])
def test_neon_depthwise_and_pooling_under_qemu_match_the_interpreter(case, tmp_path):
    model, source = _generate(case)
    inputs = run_inputs(model, 1)[0]
    assert_matches(model, [aarch64_output(model, source, inputs, tmp_path)], inputs, f"{case} on AArch64")


@pytest.mark.parametrize("flags", [("-march=native",), ("-march=x86-64",)])
def test_generated_depthwise_and_pooling_build_without_warnings(flags, tmp_path):
    for case in ("dw_f32_3x3_same_stride2", "avg_f32_3x3_same_stride2", "max_s8_3x3_same_stride2"):
        assert_builds_without_warnings(_generate(case)[1], tmp_path / case, extra_flags=flags)


def test_global_average_pool_on_nhwc_is_reduced_a_row_of_channels_at_a_time(compile_cache):
    """ONNX's GlobalAveragePool (a mean over H and W once the compiler made the model NHWC) and a
    sum over one middle axis run tl_reduce_rows_f32, within 1e-5 of the interpreter."""
    from onnx import TensorProto, helper, numpy_helper

    from tractile import load

    needs_cc()
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["y"]),
             helper.make_node("ReduceSum", ["x", "axes"], ["z"], keepdims=0)]
    initializers = [numpy_helper.from_array(RNG.standard_normal((19, 5, 1, 1)).astype(np.float32), "w"),
                    numpy_helper.from_array(np.array([2], np.int64), "axes")]
    graph = helper.make_graph(nodes, "gap", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 7, 6])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in "yz"],
                              initializers)
    model = load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8))
    source = generate(model, name="gap")
    assert source.source.count("tl_reduce_rows_f32(") == 2
    library = build_shared_library(source.files, source.name, cache_dir=compile_cache)
    compiled = CompiledModel(source, library, model.into_optimized())
    for index, inputs in enumerate(run_inputs(model)):
        assert_matches(model, compiled.run(list(inputs)), inputs, f"global pool, run {index}")
