"""The host's GEMM micro-kernels (tl_gemm.h): int8 bit for bit and float within 1e-5 of the
interpreter on odd shapes (channels not multiples of the 16-wide tile, padding, strides,
dilations, depths not multiples of 4), for each instruction set the host build may choose:
AVX2 and the portable loops on this machine through compiler flags, AArch64 NEON (with and
without the dot product) cross-built and run under qemu-aarch64."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tractile.compile import generate
from tractile.compile.host import CompiledModel, build_shared_library
from tractile.compile.ops.host_gemm import HEADERS, pack_s8
from tractile.compile.target import find_target

from ..tflite.builder import GraphBuilder, Window2D, q, qc
from .harness import assert_builds_without_warnings, assert_same_outputs, compiled, needs_cc, random_input

RNG = np.random.default_rng(28)


def int8_conv(channels: int, filters: int, kernel: tuple, window: Window2D, shape=(2, 7, 9)):
    g = GraphBuilder()
    x = g.input("x", "i8", (*shape, channels), q(2 ** -6, 5))
    scales = [2 ** -7 * (0.5 + (i % 5)) for i in range(filters)]
    w = g.const("w", RNG.integers(-127, 128, (filters, *kernel, channels)), "i8", qc(scales, 0))
    b = g.const("b", RNG.integers(-3000, 3000, filters), "i32", qc([2 ** -6 * s for s in scales], 0))
    return g.outputs(g.conv("y", [x, w, b], window, q(2 ** -4, -7), "RELU6"))


def float_conv(channels: int, filters: int, kernel: tuple, window: Window2D, shape=(2, 7, 9)):
    g = GraphBuilder()
    x = g.input("x", "f32", (*shape, channels))
    w = g.const("w", RNG.standard_normal((filters, *kernel, channels)), "f32")
    b = g.const("b", RNG.standard_normal(filters), "f32")
    return g.outputs(g.conv("y", [x, w, b], window, None, "RELU6"))


def float_conv_deep(channels: int, filters: int, kernel: tuple, shape: tuple, window: Window2D | None = None):
    """A float convolution of many taps whose sums do not cancel (inputs made nonnegative by
    run_inputs, weights and bias nonnegative): 1e-5 relative holds whatever the summation order."""
    g = GraphBuilder()
    x = g.input("x", "f32", (*shape, channels))
    taps = channels * kernel[0] * kernel[1]
    w = g.const("w", np.abs(RNG.standard_normal((filters, *kernel, channels))) / taps, "f32")
    b = g.const("b", RNG.uniform(0, 1, filters), "f32")
    return g.outputs(g.conv("y", [x, w, b], window or Window2D("SAME", 1, 1), None, "RELU6"))


def float_fire(channels: int = 8, shape: tuple = (1, 6, 13)):
    """SqueezeNet's fire module: a 1x1 and a 3x3 convolution of one input concatenated on the
    channels (each writes its channels of the concatenation in place), then a 1x1 convolution;
    weights and biases nonnegative (with run_inputs' nonnegative inputs, 1e-5 relative holds)."""
    from tractile.ops.array import Concat

    g = GraphBuilder()
    x = g.input("x", "f32", (*shape, channels))

    def conv(name: str, source, filters: int, kernel: tuple, depth: int):  # sums that do not cancel
        taps = depth * kernel[0] * kernel[1]
        w = g.const(f"{name}_w", np.abs(RNG.standard_normal((filters, *kernel, depth))) / taps, "f32")
        b = g.const(f"{name}_b", RNG.uniform(0, 1, filters), "f32")
        return g.conv(name, [source, w, b], Window2D("SAME", 1, 1), None, "RELU")

    squeeze = conv("squeeze", x, 5, (1, 1), channels)
    joined = g.op("joined", Concat(axis=3), [conv("expand1", squeeze, 7, (1, 1), 5),
                                              conv("expand3", squeeze, 19, (3, 3), 5)])
    return g.outputs(conv("next", joined, 6, (1, 1), 26))


def float_residual(depth: int, filters: int, kernel: tuple, shape: tuple = (1, 5, 7), window=None):
    """A residual block's end: r = conv 3x3 (ReLU), t = conv 1x1 (ReLU) of r with ``depth`` outputs,
    y = conv ``kernel`` of t (no activation; over ``window``, default SAME), s = ReLU(y + r), then a
    1x1 convolution of s: the Add runs in the last convolution's store, which may write y over r.
    Weights nonnegative (with run_inputs' nonnegative inputs, 1e-5 relative holds whatever the
    summation order); y's bias negative enough for the ReLU to clip some sums."""
    g = GraphBuilder()
    x = g.input("x", "f32", (*shape, 3))

    def conv(name: str, source, outputs: int, size: tuple, inputs: int, activation: str, low: float = 0.0,
             over=None):
        w = np.abs(RNG.standard_normal((outputs, *size, inputs))) / (inputs * size[0] * size[1])
        b = RNG.uniform(low, low + 1, outputs)
        return g.conv(name, [source, g.const(f"{name}_w", w, "f32"), g.const(f"{name}_b", b, "f32")],
                      over or Window2D("SAME", 1, 1), None, activation)

    r = conv("identity", x, filters, (3, 3), 3, "RELU")
    y = conv("last", conv("middle", r, depth, (1, 1), filters, "RELU"), filters, kernel, depth, "NONE", -3.0, window)
    return g.outputs(conv("head", g.binary("sum", "add", [y, r], activation="RELU"), 4, (1, 1), filters, "NONE"))


def int8_depthwise(channels: int, window: Window2D, shape=(2, 9, 8), multiplier: int = 1):
    g = GraphBuilder()
    x = g.input("x", "i8", (*shape, channels), q(2 ** -6, -9))
    outputs = channels * multiplier
    scales = [2 ** -7 * (0.5 + (i % 3)) for i in range(outputs)]
    w = g.const("w", RNG.integers(-127, 128, (1, 3, 3, outputs)), "i8", qc(scales, 3))
    b = g.const("b", RNG.integers(-3000, 3000, outputs), "i32", qc([2 ** -6 * s for s in scales], 0))
    return g.outputs(g.depthwise("y", [x, w, b], window, q(2 ** -5, 6), "RELU"))


def int8_dense(rows: int, depth: int, units: int, flavour: str):
    g = GraphBuilder()
    x = g.input("x", "i8", (rows, depth), q(0.05, -3))
    w = g.const("w", RNG.integers(-127, 128, (units, depth)), "i8", q(0.01))
    b = g.const("b", RNG.integers(-2000, 2000, units), "i32", q(0.0005))
    return g.outputs(g.dense("y", x, w, b, q(0.08, 4), flavour=flavour))


def float_dense(rows: int, depth: int, units: int, deep: bool = False):
    g = GraphBuilder()
    x = g.input("x", "f32", (rows, depth))
    w = RNG.standard_normal((units, depth))
    w = g.const("w", np.abs(w) / depth if deep else w, "f32")
    b = g.const("b", RNG.uniform(0, 1, units) if deep else RNG.standard_normal(units), "f32")
    return g.outputs(g.dense("y", x, w, b, None, "RELU"))


SAME2 = Window2D("SAME", 2, 2)
#: rows of taps dilated: the float GEMM's paths for 3x3 convolutions of stride 1 (undilated ones of
#: 16 channels and more take Winograd: test_host_wino.py)
ROWS2 = Window2D("SAME", 1, 1, 2, 1)
MODELS = {
    "conv_s8_3x3_same_stride2": lambda: int8_conv(5, 19, (3, 3), SAME2),
    "conv_s8_3x2_valid_dilated": lambda: int8_conv(3, 17, (3, 2), Window2D("VALID", 1, 1, 2, 2)),
    "conv_s8_1x1": lambda: int8_conv(13, 21, (1, 1), Window2D("SAME", 1, 1)),
    "conv_s8_1x1_stride2": lambda: int8_conv(8, 33, (1, 1), SAME2),
    "depthwise_s8_same_stride2": lambda: int8_depthwise(21, SAME2),
    "depthwise_s8_valid_dilated": lambda: int8_depthwise(8, Window2D("VALID", 1, 1, 2, 2)),
    # one input channel, 9 outputs: an ordinary convolution (tl_conv_gemm_s8), as micro_speech's
    "depthwise_s8_one_channel": lambda: int8_depthwise(1, SAME2, shape=(1, 13, 10), multiplier=9),
    # at most 8 filters: windows read in place from the widened input (tl_conv_few_x86.h), as
    # person_detect's stem and micro_speech's convolution; odd rows of taps, 4 + 1 columns
    "conv_s8_few_stem": lambda: int8_conv(1, 8, (3, 3), SAME2, shape=(2, 9, 11)),
    "conv_s8_few_odd": lambda: int8_conv(3, 5, (4, 3), Window2D("SAME", 1, 2, 2, 1), shape=(1, 10, 13)),
    "dense_s8_micro": lambda: int8_dense(3, 13, 21, "micro"),
    "dense_s8_reference": lambda: int8_dense(9, 40, 7, "reference"),
    "dense_s8_deep": lambda: int8_dense(2, 70, 9, "micro"),
    "conv_f32_3x3_same_stride2": lambda: float_conv(5, 19, (3, 3), SAME2),
    "conv_f32_1x1": lambda: float_conv(7, 18, (1, 1), Window2D("SAME", 1, 1)),
    "dense_f32": lambda: float_dense(5, 23, 37),
    # windows read in place (tl_gemm_direct.h): two tiles of six columns, im2col'ed borders, a
    # block of 5 outputs; window rows above and below the input (stride 2, dilated rows)
    "conv_f32_3x3_direct": lambda: float_conv(3, 21, (3, 3), Window2D("SAME", 1, 1), shape=(2, 5, 17)),
    "conv_f32_5x3_direct_dilated": lambda: float_conv(4, 9, (5, 3), Window2D("SAME", 2, 1, 2, 1), shape=(1, 7, 13)),
    # the float kernel's edges: row tails of 4, 2 and 1 after the 6-row tiles, depths over one
    # 256-deep pass (the later passes start from the partial sums in y), im2col chunks of 12 rows
    "conv_f32_1x1_deep": lambda: float_conv_deep(300, 21, (1, 1), shape=(1, 5, 7)),
    "conv_f32_3x3_deep": lambda: float_conv_deep(200, 19, (3, 3), shape=(1, 5, 7), window=ROWS2),
    # over 1 MiB of weights: panels of pixels, a 256-deep slice of their windows at a time (4 + 1
    # passes), 25 pixels in five tiles of 5
    "conv_f32_3x3_panels_deep": lambda: float_conv_deep(128, 232, (3, 3), shape=(1, 5, 5), window=ROWS2),
    "dense_f32_deep": lambda: float_dense(8, 300, 40, deep=True),
    # shallow passes take groups of blocks per tile of rows (tl_gemm.h's TL_GEMM_F32_GROUP): 8 blocks
    # of 7 depths; 4 blocks of 64 depths adding a residual; 150 outputs, the last group's last block 6 wide
    "conv_f32_1x1_groups": lambda: float_conv(7, 150, (1, 1), Window2D("SAME", 1, 1)),
    "conv_f32_residual_1x1_groups": lambda: float_residual(64, 150, (1, 1)),
    # a channel Concat written in place by its two producers (1x1 and 3x3: rows ldy apart)
    "conv_f32_concat": float_fire,
    # a residual Add (+ ReLU) in the convolution's store: 1x1 (dense rows), 3x3 (windows read in
    # place on AVX2), 1x1 and 3x3 over two passes of depths (the residual added on the first)
    "conv_f32_residual_1x1": lambda: float_residual(13, 21, (1, 1)),
    "conv_f32_residual_3x3": lambda: float_residual(5, 19, (3, 3), shape=(2, 5, 17)),
    "conv_f32_residual_1x1_deep": lambda: float_residual(300, 18, (1, 1)),
    # rows of taps dilated: the float GEMM, not Winograd (which leaves the Add a pass of its own)
    "conv_f32_residual_3x3_deep": lambda: float_residual(40, 17, (3, 3), window=ROWS2),
    "conv_f32_residual_3x3_winograd": lambda: float_residual(40, 17, (3, 3)),
}
KERNELS = {"conv": ("tl_conv_few_s8", "tl_conv_gemm_s8", "tl_dense_gemm_s8", "tl_conv_gemm_f32", "tl_dense_gemm_f32"),
           "dense": ("tl_dense_gemm_s8", "tl_dense_gemm_f32"), "depthwise": ("tl_dwconv_pairs_s8", "tl_conv_gemm_s8")}

#: the host build's instruction sets on x86-64 (flags after -march=native), by what they select;
#: "native" is the machine's own (AVX-512 VNNI or AVX-VNNI where present; tested only there)
X86_FLAGS = {"avx2": ("-mno-avx512f", "-mno-avxvnni"), "portable": ("-mno-avx2", "-mno-fma"), "native": ()}


def _nonnegative(case: str) -> bool:
    """Whether the case's sums do not cancel on nonnegative inputs (deep ones, Concat, residual)."""
    return case.endswith(("_deep", "_concat")) or "_residual" in case


def run_inputs(model, runs: int = 2, nonnegative: bool = False) -> list[list[np.ndarray]]:
    inputs = [[random_input(fact, RNG) for fact in model.input_facts] for _ in range(runs)]
    return [[np.abs(x) for x in run] for run in inputs] if nonnegative else inputs


def assert_matches(model, outputs: list[np.ndarray], inputs: list[np.ndarray], what: str) -> None:
    expected = model.run(list(inputs))
    assert_same_outputs(expected, outputs, rtol=1e-5, atol=1e-5, what=what)


def test_packing_puts_each_outputs_four_weights_together_after_the_corrections():
    w = np.arange(-40, 45, dtype=np.int64).reshape(17, 5)
    packed = pack_s8(w)
    block_bytes = 64 + 8 * 16  # 16 sums, then two groups of 4 depths
    assert packed.size == 2 * block_bytes
    sums = packed[:64].view("<i4")
    np.testing.assert_array_equal(sums, 128 * w[:16].sum(axis=1))
    group1 = packed[64 + 64:64 + 128].reshape(16, 4)
    np.testing.assert_array_equal(group1[:, 0], w[:16, 4])
    np.testing.assert_array_equal(group1[:, 1:], 0)
    np.testing.assert_array_equal(packed[block_bytes + 64:block_bytes + 68], w[16, :4])


@pytest.mark.skipif(not shutil.which("gcc"), reason="no gcc")
@pytest.mark.parametrize("isa", sorted(X86_FLAGS))
@pytest.mark.parametrize("case", sorted(MODELS))
def test_host_gemm_matches_the_interpreter(case, isa, compile_cache):
    needs_cc()
    if isa == "avx2" and not _cpu_has("avx2"):
        pytest.skip("this CPU lacks AVX2")
    if isa == "native" and not (_cpu_has("avx512_vnni") or _cpu_has("avx_vnni")):
        pytest.skip("no VNNI here: native is the AVX2 or portable case")
    model = MODELS[case]().into_optimized()
    source = generate(model, name=case, optimize=False)
    assert any(kernel in source.source for kernel in KERNELS[case.split("_")[0]]), "the GEMM kernels are not used"
    assert ("tl_conv_few_s8(" in source.source) == ("_few_" in case)
    assert ("tl_dwconv_pairs_s8(" in source.source) == (case.startswith("depthwise") and "one_channel" not in case)
    assert_isa_build_matches(model, source, isa, compile_cache, case, nonnegative=_nonnegative(case))


def assert_isa_build_matches(model, source, isa: str, cache, case: str, nonnegative: bool = False) -> None:
    """``source`` built with ``isa``'s flags (X86_FLAGS) gives the interpreter's outputs on random inputs."""
    library = build_shared_library(source.files, source.name, cache_dir=cache, defines=X86_FLAGS[isa])
    compiled = CompiledModel(source, library, model)
    for index, inputs in enumerate(run_inputs(model, nonnegative=nonnegative)):
        assert_matches(model, compiled.run(list(inputs)), inputs, f"{case} on {isa}, run {index}")


def test_a_channel_concat_of_convolutions_copies_nothing():
    """Both producers of the fire module's Concat write their channels of its output (a pixel
    every 26 floats); the Concat emits no copy, and the arena holds no bytes for the halves."""
    model = MODELS["conv_f32_concat"]().into_optimized()
    source = generate(model, name="fire", optimize=False)
    assert "tl_copy_blocks" not in source.source
    assert source.source.count("_pitched(") == 2
    live = 4 * 6 * 13 * (5 + 26)  # the squeezed input and the concatenation (its halves not apart)
    im2col = 4 * 9 * 5 * 96  # the 3x3 convolution's scratch: 96 rows of 45 taps
    assert source.plan.arena_bytes <= live + im2col + 64, source.plan.arena_bytes


def test_a_nan_input_gives_nan_outputs_as_in_the_interpreter(compile_cache):
    """The float GEMM's clamp keeps a NaN sum (as the portable clamp and NumPy do), not its bound."""
    needs_cc()
    model = MODELS["dense_f32"]().into_optimized()
    cm = compiled(model, compile_cache, name="dense_nan")
    x = random_input(cm.input_facts[0], RNG)
    x.reshape(-1)[5] = np.nan
    expected, actual = model.run([x])[0], cm.run([x])[0]
    assert np.isnan(expected).any()
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))


def test_a_residual_add_runs_in_the_convolutions_store():
    """The Add (+ ReLU) after a float convolution without activation makes no pass of its own: the
    convolution adds the residual before its clamp, the Add's output is the convolution's, and the
    convolution writes its sums over the residual, which dies there."""
    model = MODELS["conv_f32_residual_3x3_deep"]().into_optimized()
    source = generate(model, name="residual", optimize=False)
    assert source.source.count("tl_conv_gemm_f32_residual(") == 1
    assert "for (int32_t o = 0;" not in source.source
    tensors = {t.var: t for t in source.program.tensors}
    assert tensors["last"].offset == tensors["identity_pre"].offset == tensors["sum_pre"].offset


@pytest.mark.parametrize("case", ["conv_s8_3x3_same_stride2", "conv_f32_concat", "conv_f32_residual_3x3"])
def test_generated_gemm_code_builds_without_warnings(case, tmp_path):
    source = generate(MODELS[case](), name="gemm_warnings")
    assert_builds_without_warnings(source, tmp_path)
    # the AVX2 int16 kernels as the host build selects them
    # (tl_gemm_s16.h, tl_conv_few_x86.h, tl_dw_pairs_x86.h)
    for case in ("conv_s8_few_odd", "depthwise_s8_same_stride2"):
        assert_builds_without_warnings(generate(MODELS[case](), name=case), tmp_path / case,
                                       extra_flags=("-march=haswell",))


def test_microcontroller_targets_keep_their_kernels():
    source = generate(MODELS["conv_s8_1x1"](), name="mcu", target=find_target("cortex-m4"))
    assert "tl_gemm" not in source.source


def _cpu_has(flag: str) -> bool:
    try:
        return flag in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


# AArch64 NEON under qemu-user --------------------------------------------------------------------------------

def _c_array(name: str, array: np.ndarray) -> str:
    ctype = {"int8": "int8_t", "float32": "float"}[array.dtype.name]
    values = ", ".join(repr(float(v)) + "f" if array.dtype.kind == "f" else str(int(v)) for v in array.reshape(-1))
    return f"static const {ctype} {name}[{array.size}] = {{{values}}};"


def neon_program(source, inputs: list[np.ndarray], out_count: int, out_type: str) -> str:
    """A static program invoking the model once on ``inputs`` and printing its output's bytes in hex."""
    name = source.name
    lines = ["#include <stdio.h>", f'#include "{name}.h"']
    lines += [_c_array(f"in{i}", value) for i, value in enumerate(inputs)]
    lines += [f"static {out_type} out0[{out_count}];", f"static {name}_ctx ctx;", "int main(void) {",
              "  size_t i;", f"  {name}_init(&ctx);",
              f"  if ({name}_invoke(&ctx, {', '.join(f'in{i}' for i in range(len(inputs)))}, out0)) return 2;",
              "  for (i = 0; i < sizeof out0; ++i) printf(\"%02x\", ((const unsigned char *)out0)[i]);",
              "  printf(\"\\n\");", "  return 0;", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="no AArch64 cross compiler or qemu-aarch64 (make toolchains)")
@pytest.mark.parametrize("march", ["armv8-a", "armv8.2-a+dotprod"])
@pytest.mark.parametrize("case", ["conv_s8_3x3_same_stride2", "conv_s8_1x1", "dense_s8_reference",
                                  "depthwise_s8_same_stride2", "conv_f32_3x3_same_stride2", "dense_f32",
                                  "conv_f32_3x3_deep", "conv_f32_3x3_panels_deep", "conv_f32_1x1_deep",
                                  "conv_f32_concat", "conv_f32_residual_1x1_deep", "conv_f32_residual_3x3",
                                  "conv_f32_residual_1x1_groups"])
def test_neon_gemm_under_qemu_matches_the_interpreter(case, march, tmp_path):
    model = MODELS[case]().into_optimized()
    source = generate(model, name=case, optimize=False)
    inputs = run_inputs(model, 1, nonnegative=_nonnegative(case))[0]
    assert_matches(model, [aarch64_output(model, source, inputs, tmp_path, march)], inputs,
                   f"{case} on AArch64 {march}")


def aarch64_output(model, source, inputs: list[np.ndarray], folder, march: str = "armv8-a") -> np.ndarray:
    """``source`` cross-built for AArch64 (-Werror) with a main running ``inputs``, run under
    qemu-aarch64: the model's first output."""
    fact = model.output_facts[0]
    out_type = "float" if fact.dtype.is_float else "int8_t"
    for filename, text in source.files.items():
        (folder / filename).write_text(text)
    (folder / "main.c").write_text(neon_program(source, inputs, int(np.prod(fact.shape)), out_type))
    build = ["aarch64-linux-gnu-gcc", "-std=c99", "-O2", f"-march={march}", "-Wall", "-Wextra", "-Werror", "-static",
             "-o", "prog", "main.c", f"{source.name}.c", "-lm"]
    done = subprocess.run(build, cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = subprocess.run(["qemu-aarch64", "-cpu", "max", "-L", "/usr/aarch64-linux-gnu", str(folder / "prog")],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    return np.frombuffer(bytes.fromhex(ran.stdout.strip()), fact.dtype.np).reshape(tuple(fact.shape))


REQUANT_PROGRAM = r"""
#include <stdio.h>
#include "tl_common.h"
#include "tl_gemm.h"
int main(void) {
  uint32_t state = 12345u;
  int32_t acc[16], bias[16] = {0}, m[16], left[16], right[16], shifts[16], i, k, bad = 0;
  static const int32_t edges[] = {0, 1, -1, 2147483647, -2147483647 - 1, 1073741824, -1073741824, 255, -256};
  int8_t y[16];
  for (k = 0; k < 20000; ++k) {
    for (i = 0; i < 16; ++i) {
      state = state * 1664525u + 1013904223u;
      acc[i] = (k + i) % 7 == 0 ? edges[(k + i) % 9] : (int32_t)(state >> (state & 15u)) - (int32_t)(state >> 17);
      state = state * 1664525u + 1013904223u;
      m[i] = (int32_t)(0x40000000u | (state >> 2));
      shifts[i] = (int32_t)((state >> 3) % 40u) - 31;
      if (shifts[i] > 7) shifts[i] = 7;
      left[i] = shifts[i] > 0 ? shifts[i] : 0;
      right[i] = shifts[i] > 0 ? 0 : -shifts[i];
    }
    tl_gemm_s8_store(acc, bias, m, left, right, 3, -128, 127, y, 16);
    for (i = 0; i < 16; ++i)
      if (y[i] != (int8_t)tl_clamp_i32(tl_mbqm_portable(acc[i], m[i], shifts[i]) + 3, -128, 127)) ++bad;
  }
  printf("%d\n", bad);
  return bad != 0;
}
"""


@pytest.mark.skipif(not shutil.which("gcc") or not _cpu_has("avx2"), reason="no gcc or no AVX2")
def test_vector_requantization_equals_tflites_recipe(tmp_path):
    from tractile.compile import kernel_header

    for header in ("tl_common.h", *HEADERS):
        (tmp_path / header).write_text(kernel_header(header))
    (tmp_path / "requant.c").write_text(REQUANT_PROGRAM)
    build = subprocess.run(["gcc", "-std=c99", "-O2", "-mavx2", "-mfma", "-Wall", "-Wextra", "-Werror", "-o", "requant",
                            "requant.c"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr[-3000:]
    ran = subprocess.run([str(tmp_path / "requant")], capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip() == "0", f"{ran.stdout.strip()} of 320000 requantized outputs differ"


def nchw_convolutions_proto():
    """ONNX, NCHW: a 3x3 convolution + ReLU, a depthwise 3x3 with stride 2, a 1x1 convolution."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)

    def weights(name: str, shape: tuple) -> object:
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32),
                                       name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2],
                              group=12),
             helper.make_node("Conv", ["c2", "w3", "b3"], ["y"], kernel_shape=[1, 1])]
    initializers = [weights("w1", (12, 5, 3, 3)), weights("b1", (12,)), weights("w2", (12, 1, 3, 3)),
                    weights("w3", (19, 12, 1, 1)), weights("b3", (19,))]
    graph = helper.make_graph(nodes, "nchw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 11, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_onnx_nchw_convolutions_join_a_compiled_segment(compile_cache):
    """compile="all"/"auto" segments take ONNX's NCHW convolutions (made NHWC in the segment's
    build, as compile_model does): one segment runs all three on the host kernels."""
    import tractile
    from tractile.compile.segments import CompiledSegment, compile_segments

    needs_cc()
    reference = tractile.load(nchw_convolutions_proto())
    segmented = compile_segments(reference, cache_dir=compile_cache)
    segments = [n for n in segmented.nodes if isinstance(n.op, CompiledSegment)]
    assert len(segments) == 1 and segments[0].op.ops.count("Conv") == 3
    assert not any(n.op.name == "Conv" for n in segmented.nodes)
    rng = np.random.default_rng(4)
    for index in range(3):
        x = rng.standard_normal((1, 5, 11, 9)).astype(np.float32)
        assert_same_outputs(reference.run([x]), segmented.run([x]), rtol=1e-5, atol=1e-5, what=f"run {index}")
