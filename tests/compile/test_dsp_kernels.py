"""The Cortex-M4/M7 integer kernels (ARMv7E-M DSP extension: SXTB16, SMLAD, SMLABB/SMLATT,
SMLAL, SSAT): bit for bit against the interpreter in QEMU (mps2-an386) over windows, depth
multipliers and channel counts that take every path of them; the requantization's SMLAL
formula against TFLite's recipe on the host; the generated C clean under strict warnings for
the M4 with gcc and clang; instructions per MAC of a pointwise layer."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tractile.compile import generate
from tractile.compile.target import find_target
from tractile.compile.targets.verify import verify

from ..tflite.builder import GraphBuilder, Window2D
from ..tflite.test_ops_spatial import WINDOWS, conv_model
from .harness import WARNING_FLAGS, needs_cc, q, single_op_model
from .test_targets import needs_board

KERNELS = Path(__file__).resolve().parents[2] / "src" / "tractile" / "compile" / "kernels"
M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("depthwise,bias,activation,multiplier,channels", [
    (True, "i32", "RELU6", 1, 8),   # four channels per word, all of them
    (True, None, "NONE", 1, 6),     # and the last two one by one, without a bias
    (True, "i32", "RELU", 4, 2),    # one input repeated over four filters
    (True, "i32", "NONE", 2, 4),    # the generic kernel
    (False, "i32", "RELU6", 1, 4),  # CONV_2D 3x3
])
def test_int8_convolutions_are_bit_exact_on_the_cortex_m4(window, depthwise, bias, activation, multiplier, channels,
                                                           tmp_path):
    needs_board("cortex-m4")
    model = conv_model("i8", depthwise, window, bias, activation, multiplier, channels)
    report = verify(model, "cortex-m4", runs=3, folder=tmp_path)
    assert report["verified"], report["first_difference"]


def pointwise_model(depth: int, filters: int, pixels: int = 36, activation: str = "RELU6"):
    rng = np.random.default_rng(depth * 100 + filters)
    g = GraphBuilder()
    x = g.input("x", "i8", (1, pixels // 6, 6, depth), q(0.05, -7))
    w = g.const("w", rng.integers(-127, 128, (filters, 1, 1, depth)), "i8", q(0.01))
    b = g.const("b", rng.integers(-5000, 5000, (filters,)), "i32", q(0.0005))
    g.model.outputs = [g.conv("pointwise", [x, w, b], Window2D("SAME", 1, 1), q(0.08, 3), activation)]
    return g.model


@pytest.mark.parametrize("depth,filters", [(8, 32), (13, 7), (64, 6)])
def test_int8_pointwise_convolutions_are_bit_exact_on_the_cortex_m4(depth, filters, tmp_path):
    """depths with and without a remainder of 4, filters in blocks of 4, then 2 and 1"""
    needs_board("cortex-m4")
    report = verify(pointwise_model(depth, filters), "cortex-m4", runs=3, folder=tmp_path)
    assert report["verified"], report["first_difference"]


def test_deep_pointwise_convolution_takes_at_most_four_instructions_per_mac(tmp_path):
    """QEMU counts instructions deterministically (-icount): a count, not a timing."""
    needs_board("cortex-m4")
    report = verify(pointwise_model(64, 64), "cortex-m4", runs=2, opt="speed", folder=tmp_path)
    assert report["verified"], report["first_difference"]
    layer = report["layers"][0]
    assert layer["macs"] == 36 * 64 * 64 and layer["per_mac"] <= 4.0, layer


@pytest.mark.parametrize("dtypes", [("i8", "i8"), ("i8", "i16"), ("u8", "u8")])
def test_quantized_softmax_row_maximum_is_bit_exact_on_the_cortex_m4(dtypes, tmp_path):
    """The row maximum four bytes a step (SSUB8/USUB8 + SEL) over rows of 37: words and a tail."""
    from tractile.datum import DatumType
    from tractile.fact import TypedFact
    from tractile.ops.nn import Softmax

    needs_board("cortex-m4")
    source, target = DatumType(dtypes[0]), DatumType(dtypes[1])
    out_q = {DatumType.I8: q(1 / 256, -128), DatumType.I16: q(1 / 65536, -32768), DatumType.U8: q(1 / 256, 0)}[target]
    model = single_op_model(Softmax(beta=1.0, to=target, quant=out_q),
                            [TypedFact(source, (5, 37), None, q(0.07, -5 if source == DatumType.I8 else 120))])
    report = verify(model, "cortex-m4", runs=4, opt="speed", folder=tmp_path)
    assert report["verified"], report["first_difference"]
    listing = subprocess.run(["arm-none-eabi-objdump", "-d", str(next(tmp_path.rglob("*.elf")))],
                             capture_output=True, text=True).stdout
    assert ("usub8" if source == DatumType.U8 else "ssub8") in listing and "sel" in listing


REQUANTIZE_CHECK = r"""
#include <stdio.h>
#include "tl_common.h"
static uint64_t state = 88172645463325252u;
static uint64_t next(void) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }
int main(void) {
  static const int32_t edges[] = {0, 1, -1, 2, -2, 2147483647, -2147483647 - 1, 1073741824, -1073741824, 12345};
  long differ = 0, i;
  for (i = 0; i < 3000000; ++i) {
    const uint64_t r = next();
    const int32_t x = i % 3 == 0 ? edges[r % 10] : (int32_t)(r >> 32) >> (i % 3 == 1 ? 0 : (int)(r % 31));
    int32_t m = (r & 7) == 0 ? 0 : (int32_t)((1u << 30) + (uint32_t)(next() >> 34));
    const int shift = (int)((next() >> 40) % 40) - 33;
    if ((r & 15) == 1) m = 2147483647;
    if ((r & 15) == 2) m = 1 << 30;
    if (tl_mbqm_smlal(x, m, shift) != tl_mbqm_portable(x, m, shift)) {
      if (differ++ < 5) printf("x=%ld m=%ld shift=%d\n", (long)x, (long)m, shift);
    }
  }
  printf("%ld differ\n", differ);
  return 0;
}
"""


def test_smlal_requantization_equals_tflites_recipe(tmp_path):
    """The formula the M4 kernels requantize with (its C form; the M4 runs it as one SMLAL),
    against the portable MultiplyByQuantizedMultiplier, on random and edge values."""
    needs_cc()
    source = tmp_path / "requantize.c"
    source.write_text(REQUANTIZE_CHECK)
    compiler = shutil.which("cc") or shutil.which("gcc")
    built = subprocess.run([compiler, *WARNING_FLAGS, "-O2", "-I", str(KERNELS), str(source), "-o",
                            str(tmp_path / "requantize")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(tmp_path / "requantize")], capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip().endswith("0 differ"), ran.stdout


def all_dsp_kernels_model():
    """One model through every DSP kernel: depthwise from one channel (single), multiplier 4 (the
    earlier kernel), stride 1 and 2 (rows), dilation 2 (packed), pointwise of depth 16 and 32
    (tl_conv_gemm.h)."""
    rng = np.random.default_rng(1)
    g = GraphBuilder()
    h = g.input("x", "i8", (1, 8, 8, 1), q(0.05, -7))
    layers = [("single", 1, 4, Window2D("SAME", 1, 1)), ("dw4", 4, 4, Window2D("SAME", 1, 1)),
              ("rows", 16, 1, Window2D("VALID", 1, 1)), ("rows2", 16, 1, Window2D("SAME", 2, 2)),
              ("packed", 16, 1, Window2D("SAME", 1, 1, 2, 2))]
    for index, (name, channels, multiplier, window) in enumerate(layers):
        w = g.const(f"w{index}", rng.integers(-127, 128, (1, 3, 3, channels * multiplier)), "i8", q(0.01))
        h = g.depthwise(name, [h, w], window, q(0.1, index - 3), "RELU6")
    for index, (depth, filters) in enumerate([(16, 32), (32, 8)]):
        w = g.const(f"p{index}", rng.integers(-127, 128, (filters, 1, 1, depth)), "i8", q(0.01))
        h = g.conv(f"pw{index}", [h, w], Window2D("SAME", 1, 1), q(0.2, 1), "RELU")
    g.model.outputs = [h]
    return g.model


@pytest.mark.parametrize("compiler", ["arm-none-eabi-gcc", "clang"])
def test_m4_kernels_build_without_warnings(compiler, tmp_path):
    """Every DSP kernel in one model, under strict C99 warnings for the Cortex-M4, where
    __ARM_FEATURE_DSP selects them."""
    if shutil.which(compiler) is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip(f"{compiler} or arm-none-eabi-gcc not installed")
    source = generate(all_dsp_kernels_model(), name="m4", target=find_target("cortex-m4"))
    for kernel in ("tl_dwconv3x3_s8_single", "tl_dwconv_nhwc_s8", "tl_dwconv3x3_s8_rows", "tl_dwconv3x3_s8_packed",
                   "tl_pointwise_s8_cols"):
        assert f"{kernel}(" in source.source, kernel
    source.write(tmp_path)
    flags = M4_FLAGS if compiler != "clang" else ["--target=arm-none-eabi", *M4_FLAGS, "-isystem",
                                                  "/usr/lib/arm-none-eabi/include"]
    for opt in ("-Os", "-O2"):  # the listing below is the -O2 build's
        built = subprocess.run([compiler, *flags, *WARNING_FLAGS, opt, "-c", "m4.c", "-o", "m4.o"], cwd=tmp_path,
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
    listing = subprocess.run(["arm-none-eabi-objdump", "-d", "m4.o"], cwd=tmp_path, capture_output=True, text=True)
    for instruction in ("smlabb", "smlad", "smlal", "ssat", "smmlar", "pkhbt", "pkhtb"):
        assert instruction in listing.stdout, f"{compiler}: no {instruction} in the M4 build"
    assert "smlatb" in listing.stdout or "smlabt" in listing.stdout, f"{compiler}: no SMLATB/SMLABT"


def test_repacked_kernels_portable_form_builds_without_warnings(tmp_path):
    """The same kernels without the DSP extension (a host target asking for the repacked
    weights), under strict C99 warnings with gcc and clang."""
    from dataclasses import replace

    from tractile.compile.target import HOST

    from .harness import assert_builds_without_warnings

    assert_builds_without_warnings(generate(all_dsp_kernels_model(), name="portable", target=replace(HOST, dsp=True)),
                                   tmp_path)


# --- the kernels over weights repacked on the host (tl_conv_dsp.h) ------------------------------

def add_depthwise(g: GraphBuilder, name: str, channels: int, multiplier: int, window: Window2D, mixed: bool,
                  shape=(9, 10)):
    """A 3x3 int8 depthwise layer on an input of its own, quantized as person_detect's are
    (per-channel weights, output zero point -128 after RELU6, right shifts of 5 to 9: the folded
    requantization); ``mixed`` gives two channels scale ratios of 1.5 and 3 (shifts 1 and 2:
    TFLite's recipe for them)."""
    from ..tflite.builder import qc

    out_c = channels * multiplier
    rng = np.random.default_rng(out_c * 31 + channels)
    x = g.input(f"x_{name}", "i8", (1, *shape, channels), q(0.02, -5))
    w_scales = [0.004 * (1 + 0.37 * (i % 7)) for i in range(out_c)]
    if mixed:
        w_scales[0], w_scales[-1] = 3.75, 7.5  # 0.02 * s / 0.05 = 1.5 and 3
    w = g.const(f"w_{name}", rng.integers(-127, 128, (1, 3, 3, out_c)), "i8", qc(w_scales, 3))
    b = g.const(f"b_{name}", rng.integers(-4000, 4000, (out_c,)), "i32", qc([0.02 * s for s in w_scales], 0))
    return g.depthwise(name, [x, w, b], window, q(0.05 if mixed else 6 / 255, -128), "RELU6")


def depthwise_model(channels: int, multiplier: int, window: Window2D, mixed: bool = False, shape=(9, 10)):
    """One layer of :func:`add_depthwise`."""
    g = GraphBuilder()
    g.model.outputs = [add_depthwise(g, "dw", channels, multiplier, window, mixed, shape)]
    return g.model


#: (channels, multiplier): four channels per pass and the last channels one by one, one input
#: channel against 8 or 3 filters
REPACKED = [(4, 1), (13, 1), (16, 1), (1, 8), (1, 3)]


def repacked_layers_model(window: Window2D):
    """Every REPACKED configuration, and two of them (13 channels, 1 x 8) with mixed shifts, as side-by-side
    layers of one model (one build and one emulator run for all of them)."""
    g = GraphBuilder()
    layers = [(channels, multiplier, False) for channels, multiplier in REPACKED] + [(13, 1, True), (1, 8, True)]
    g.model.outputs = [add_depthwise(g, f"dw{channels}x{multiplier}{'_mixed' if mixed else ''}", channels,
                                     multiplier, window, mixed) for channels, multiplier, mixed in layers]
    return g.model


def test_repacked_weights_pair_the_taps_of_one_output():
    from tractile.compile.ops.conv_dsp import depthwise_pairs, pairs, single_input_pairs, widened_rows

    taps = np.arange(9 * 8).reshape(9, 8) - 36
    words = depthwise_pairs(taps).view(np.int16).reshape(2, 18, 2)  # [group][word][low, high]
    assert words[1, 1].tolist() == [taps[0, 5], taps[1, 5]]  # tap pair (0, 1), channel 4 + 1
    assert words[0, 14].tolist() == [taps[6, 2], taps[7, 2]]
    assert words[1, 16].tolist() == [taps[8, 4], taps[8, 6]] and words[1, 17].tolist() == [taps[8, 5], taps[8, 7]]
    single = single_input_pairs(taps[:, :3]).view(np.int16).reshape(3, 5, 2)
    assert single[2, 1].tolist() == [taps[2, 2], taps[3, 2]] and single[1, 4].tolist() == [taps[8, 1], 0]
    rows = widened_rows(np.arange(16).reshape(2, 8) - 8).view(np.int16).reshape(2, 4, 2)
    assert rows[1, 2].tolist() == [4 - 8 + 8, 6 - 8 + 8] and rows[0, 3].tolist() == [5 - 8, 7 - 8]
    assert pairs(np.array([-1]), np.array([-128])).item() == (-128 << 16) | 0xFFFF


@pytest.mark.parametrize("window", [WINDOWS[1], WINDOWS[2]], ids=str)  # the row kernel at stride 2, the packed one
def test_repacked_depthwise_kernels_run_portably_on_the_host(window, tmp_path):
    """The same kernels built without the DSP extension (their portable SXTB16, PKHBT, SMLAD)
    for a host target that asks for the repacked weights: the packing against the interpreter."""
    from dataclasses import replace

    from tractile.compile.target import HOST

    target = replace(HOST, dsp=True)
    model = repacked_layers_model(window)
    source = generate(model, target=target).source
    rows = window.stride_w in (1, 2) and window.dilation_w == 1
    for kernel in ("tl_dwconv3x3_s8_single", f"tl_dwconv3x3_s8_{'rows' if rows else 'packed'}"):
        assert f"{kernel}(" in source, kernel
    cm = compiled_for(model, tmp_path, target)
    rng = np.random.default_rng(3)
    for _ in range(3):
        values = [rng.integers(-128, 128, tuple(model.input_fact(i).shape)).astype(np.int8)
                  for i in range(len(model.inputs))]
        for ours, theirs in zip(cm.run(values), model.run(values)):
            assert np.array_equal(ours, theirs)


def compiled_for(model, folder: Path, target):
    from tractile.compile import compile_model

    from .harness import needs_cc

    needs_cc()
    return compile_model(model, cache_dir=folder, target=target)


@pytest.mark.parametrize("window", WINDOWS, ids=str)
def test_repacked_depthwise_kernels_are_bit_exact_on_the_cortex_m4(window, tmp_path):
    needs_board("cortex-m4")
    report = verify(repacked_layers_model(window), "cortex-m4", runs=2, opt="speed", folder=tmp_path)
    assert report["verified"], report["first_difference"]
    kernels = [layer["kernel"] for layer in report["layers"]]
    assert len(kernels) == len(REPACKED) + 2 and all(k.startswith("tl_dwconv3x3_s8_") for k in kernels), kernels


@pytest.mark.parametrize("depth", [4, 8, 12, 16])
def test_widened_pointwise_convolutions_are_bit_exact_on_the_cortex_m4(depth, tmp_path):
    needs_board("cortex-m4")
    report = verify(pointwise_model(depth, 7), "cortex-m4", runs=3, folder=tmp_path)
    assert report["verified"], report["first_difference"]
    # shallow layers alone: tl_conv_gemm.h's shallow kernel (weights widened, no scratch)
    assert report["layers"][0]["kernel"] == "tl_pointwise_s8_shallow", report["layers"][0]


def test_depth_8_pointwise_convolution_takes_at_most_four_instructions_per_mac(tmp_path):
    """person_detect's first pointwise layer: 8 inputs widened once per pixel, then per output
    4 SMLAD and the folded requantization."""
    needs_board("cortex-m4")
    report = verify(pointwise_model(8, 16, pixels=48, activation="RELU6"), "cortex-m4", runs=2, opt="speed",
                    folder=tmp_path)
    assert report["verified"], report["first_difference"]
    layer = report["layers"][0]
    assert layer["macs"] == 48 * 8 * 16 and layer["per_mac"] <= 4.0, layer


DOUBLED_CHECK = r"""
#include <stdio.h>
#include "tl_conv_dsp.h"
static uint64_t state = 88172645463325252u;
static uint64_t next(void) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }
int main(void) {
  static const int32_t edges[] = {0, 1, -1, 2, -2, 1073741823, -1073741823, 536870912, -536870912, 12345};
  long differ = 0, checked = 0, i;
  for (i = 0; i < 3000000; ++i) {
    const uint64_t r = next();
    const int32_t x = i % 3 == 0 ? edges[r % 10] : (int32_t)(r >> 34) >> (i % 3 == 1 ? 0 : (int)(r % 30));
    const int32_t m = (r & 15) == 1 ? 2147483647 : (r & 15) == 2 ? 0 : (int32_t)((1u << 30) + (uint32_t)(next() >> 34));
    const int right = 1 + (int)((next() >> 40) % 31), zero = (int)((next() >> 40) % 256) - 128;
    const int64_t k = ((int64_t)1 << (right - 1)) + (int64_t)zero * ((int64_t)1 << right);
    int32_t rq[3];
    if (k >= ((int64_t)1 << 30) || k <= -((int64_t)1 << 30)) continue;
    rq[0] = m, rq[1] = (int32_t)k, rq[2] = right;
    ++checked;
    if (tl_requant_doubled(2 * x, rq) != tl_mbqm_portable(x, m, -right) + zero) {
      if (differ++ < 5) printf("x=%ld m=%ld right=%d zero=%d\n", (long)x, (long)m, right, zero);
    }
    {
      /* without the sign term, for outputs clamped below at the zero point or above: x and -x */
      const int32_t low = zero + (int32_t)(r % 3) * (int32_t)((r >> 8) % 40), v = i % 2 ? x : -x;
      const int32_t want = tl_clamp_i32(tl_mbqm_portable(v, m, -right) + zero, low, 127);
      if (low <= 127 && tl_clamp_i32(tl_requant_doubled_clamped(2 * v, rq), low, 127) != want) {
        if (differ++ < 5) printf("clamped: x=%ld m=%ld right=%d zero=%d low=%ld\n", (long)v, (long)m, right, zero,
                                 (long)low);
      }
    }
  }
  printf("%ld checked, %ld differ\n", checked, differ);
  return 0;
}
"""


def test_doubled_requantization_equals_tflites_recipe(tmp_path):
    """The requantization of the repacked kernels (tl_requant_doubled, its C form; the M4 runs it
    as one SMMLAR) from twice the accumulator, against MultiplyByQuantizedMultiplier plus the
    output zero point, on random and edge accumulators below 2^30, right shifts of 1 to 31; and
    tl_requant_doubled_clamped (no sign term) against the same once clamped to a lower bound at
    or above the zero point, on accumulators of both signs."""
    needs_cc()
    source = tmp_path / "doubled.c"
    source.write_text(DOUBLED_CHECK)
    compiler = shutil.which("cc") or shutil.which("gcc")
    built = subprocess.run([compiler, *WARNING_FLAGS, "-O2", "-I", str(KERNELS), str(source), "-o",
                            str(tmp_path / "doubled")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(tmp_path / "doubled")], capture_output=True, text=True, timeout=60)
    checked = int(ran.stdout.split()[-4])
    assert checked > 1000000 and ran.stdout.strip().endswith(" 0 differ"), ran.stdout


@pytest.mark.parametrize("chain_windows,band_rows", [(0, (1, 3)), (2, (2,))])
def test_repacked_kernels_run_in_bands_of_rows(chain_windows, band_rows, tmp_path):
    """A chain with repacked depthwise layers computed in bands of rows (bands.py rewrites their
    row arguments; the stride-1 kernel's border kinds are those of the whole layer), in their
    portable form on the host, against the interpreter."""
    from dataclasses import replace

    from tractile.compile.bands import Chain, chains_of
    from tractile.compile.target import HOST

    from .harness import assert_same_outputs, random_input
    from .test_bands import WINDOWS as CHAIN_WINDOWS
    from .test_bands import conv_chain

    model = conv_chain("i8", CHAIN_WINDOWS[chain_windows])
    (run,) = chains_of(model.into_optimized())
    target = replace(HOST, dsp=True)
    assert "tl_dwconv3x3_s8_" in generate(model, target=target).source
    rng = np.random.default_rng(5)
    inputs = [random_input(model.input_facts[0], rng) for _ in range(3)]
    for rows in band_rows:
        cm = compile_for_chains(model, tmp_path / f"r{rows}", target, [Chain(tuple(run), rows)])
        for x in inputs:
            assert_same_outputs(model.run([x]), cm.run([x]), what=f"bands of {rows}")


def compile_for_chains(model, folder: Path, target, chains):
    from tractile.compile import compile_model

    from .harness import needs_cc

    needs_cc()
    return compile_model(model, cache_dir=folder, target=target, chains=chains)


@pytest.mark.parametrize("target,opt", [("cortex-m4", "size"), ("cortex-m4", "speed"), ("cortex-m7", "speed")])
def test_a_model_through_every_dsp_kernel_is_bit_exact(target, opt, tmp_path):
    """Size builds keep one out-of-line copy of each kernel (runtime sizes), speed builds inline
    them per layer; the Cortex-M7 (mps2-an500) runs the same DSP code."""
    needs_board(target)
    report = verify(all_dsp_kernels_model(), target, runs=3, opt=opt, folder=tmp_path)
    assert report["verified"], report["first_difference"]
