"""Instruction budgets of the Cortex-M4 int8 kernels per layer kind (issue 26): small int8
layers built here, compiled for speed (-O2), run on the emulated mps2-an386 and checked bit for
bit against the interpreter, their instructions per multiply-accumulate (QEMU -icount counts
instructions deterministically: a count, not a timing) under each kind's budget with a margin
of about 10%. Instructions are not cycles (a load takes two, SMLAD one)."""
from __future__ import annotations

import numpy as np
import pytest

from tractile.compile.targets.verify import verify

from ..tflite.builder import GraphBuilder, Window2D, qc
from .harness import q
from .test_targets import needs_board


def _scales(count: int, base: float) -> list[float]:
    return [base * (1 + 0.31 * (i % 5)) for i in range(count)]


def conv_layer(shape, filters: int, kernel, window: Window2D, seed: int, widen: int = 0):
    """An int8 CONV_2D quantized per channel as TFLite's converter does (RELU6), and with
    ``widen`` 1x1 convolutions to ``widen`` channels and back after it (the arena's peak, so that
    the first keeps its columns, tl_conv_nhwc_s8_gemm, where the others read their inputs in
    place, tl_conv_nhwc_s8_direct)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    h = g.input("x", "i8", (1, *shape), q(0.03, -9))
    layers = [("conv", filters, kernel)] + ([("widen", widen, (1, 1)), ("narrow", filters, (1, 1))] if widen else [])
    for name, count, size in layers:
        depth = int(g.model.outlet_fact(h).shape[3])
        scales = _scales(count, 0.004)
        w = g.const(f"{name}_w", rng.integers(-127, 128, (count, *size, depth)), "i8", qc(scales, 0))
        b = g.const(f"{name}_b", rng.integers(-3000, 3000, (count,)), "i32", qc([0.03 * s for s in scales], 0))
        h = g.conv(name, [h, w, b], window if name == "conv" else Window2D("SAME"), q(6 / 255, -128), "RELU6")
    g.model.outputs = [h]
    return g.model


def depthwise_layer(shape, multiplier: int, window: Window2D, seed: int, spread: int = 0):
    """An int8 3x3 DEPTHWISE_CONV_2D quantized per channel (RELU6); with ``spread``, channel i's
    weight scale also divided and its integer bias multiplied by 2^(i % spread), as in VWW's last
    layers: requantization shifts up to spread - 1 apart, the channels of the larger ones
    dominated by their bias (few distinct outputs)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", "i8", (1, *shape), q(0.03, -9))
    out_c = shape[2] * multiplier
    powers = [2 ** (i % spread if spread else 0) for i in range(out_c)]
    scales = [s / p for s, p in zip(_scales(out_c, 0.004), powers)]
    w = g.const("w", rng.integers(-127, 128, (1, 3, 3, out_c)), "i8", qc(scales, 3))
    b = g.const("b", rng.integers(-3000, 3000, (out_c,)) * np.array(powers), "i32", qc([0.03 * s for s in scales], 0))
    g.model.outputs = [g.depthwise("dw", [x, w, b], window, q(6 / 255, -128), "RELU6")]
    return g.model


def depthwise_chain(shape, layers, seed: int):
    """3x3 int8 depthwise layers one after the other (each ``(window, activation, output zero
    point)``), quantized per channel, over an input of ``shape`` (H, W, C)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    h = g.input("x", "i8", (1, *shape), q(0.03, -9))
    for index, (window, activation, zero) in enumerate(layers):
        channels = shape[2]
        scales = _scales(channels, 0.004 + 0.002 * index)
        w = g.const(f"w{index}", rng.integers(-127, 128, (1, 3, 3, channels)), "i8", qc(scales, 0))
        b = g.const(f"b{index}", rng.integers(-3000, 3000, (channels,)), "i32", qc([0.03 * s for s in scales], 0))
        h = g.depthwise(f"dw{index}", [h, w, b], window, q(0.05, zero), activation)
    g.model.outputs = [h]
    return g.model


#: every edge of tl_dwconv3x3_s8_rows's passes: the first column padding (stride 1 and 2), the
#: last (stride 1 and 2), both (3 columns wide), two outputs at the end of a row with and without
#: a padding column (widths 5 and 10), one output left over (single), rows at the top and bottom
#: (heights 2 and 3 too), channel counts with and without a tail, RELU, RELU6 and none (the
#: requantization with its sign term), and an input zero point of either sign
EDGE_CHAINS = [
    ((7, 11, 13), [(Window2D("SAME"), "RELU", -128), (Window2D("SAME", 2, 2), "NONE", 5),
                   (Window2D("SAME"), "RELU6", -128), (Window2D("SAME", 2, 2), "RELU", -128),
                   (Window2D("SAME"), "NONE", -3)]),
    ((5, 5, 8), [(Window2D("SAME"), "RELU6", -128), (Window2D("VALID"), "NONE", 2), (Window2D("SAME"), "RELU", -128),
                 (Window2D("SAME", 2, 2), "RELU6", -128)]),
    ((6, 10, 20), [(Window2D("SAME"), "RELU", -128), (Window2D("VALID", 2, 2), "RELU6", -128),
                   (Window2D("SAME", 2, 1), "NONE", 7)]),
    # stride 2 over 23 columns: a padding column first, a run of two passes inside the input, a
    # padding column last (the rows between a padded top and bottom row)
    ((5, 23, 14), [(Window2D("SAME", 2, 2), "RELU6", -128), (Window2D("SAME"), "NONE", 3)]),
]


@pytest.mark.parametrize("index", range(len(EDGE_CHAINS)))
def test_depthwise_rows_kernel_is_bit_exact_at_every_edge(index, tmp_path):
    needs_board("cortex-m4")
    shape, layers = EDGE_CHAINS[index]
    # the kernel's C is the same in both builds (size keeps one out-of-line copy with run-time
    # sizes, speed inlines it per layer): the chains take turns
    opt = ("speed", "size")[index % 2]
    report = verify(depthwise_chain(shape, layers, 20 + index), "cortex-m4", runs=2, opt=opt, folder=tmp_path)
    assert report["verified"], report["first_difference"]
    kernels = [entry["kernel"] for entry in report["layers"] if entry["macs"]]
    assert kernels == ["tl_dwconv3x3_s8_rows"] * len(layers), kernels


def dense_layer(rows: int, depth: int, units: int, seed: int, activation: str = "RELU"):
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input("x", "i8", (rows, depth), q(0.03, 5))
    w = g.const("w", rng.integers(-127, 128, (units, depth)), "i8", q(0.005))
    b = g.const("b", rng.integers(-3000, 3000, (units,)), "i32", q(0.03 * 0.005))
    g.model.outputs = [g.dense("fc", x, w, b, q(0.1, -3), activation, flavour="micro")]
    return g.model


def in_place_conv():
    """IC's in-place 3x3 layer (16x16x32, SAME, 16 filters) after a 1x1 layer to 64 channels."""
    rng = np.random.default_rng(22)
    g = GraphBuilder()
    h = g.input("x", "i8", (1, 16, 16, 8), q(0.03, -9))
    for name, count, size in (("up", 32, (1, 1)), ("c3", 16, (3, 3))):
        depth = int(g.model.outlet_fact(h).shape[3])
        scales = _scales(count, 0.004)
        w = g.const(f"{name}_w", rng.integers(-127, 128, (count, *size, depth)), "i8", qc(scales, 0))
        b = g.const(f"{name}_b", rng.integers(-3000, 3000, (count,)), "i32", qc([0.03 * s for s in scales], 0))
        h = g.conv(name, [h, w, b], Window2D("SAME"), q(0.05, 3), "NONE")
    g.model.outputs = [h]
    return g.model


#: (name, model, the measured layer's name and kernel, its budget in instructions per MAC at -O2:
#: issue 26's goal for layers of 8 input channels or more where it holds, else the instructions
#: measured when the budget was set plus about 10%)
LAYERS = [
    ("general 3x3, 16 channels", lambda: conv_layer((12, 12, 16), 16, (3, 3), Window2D("SAME"), 1, widen=64),
     "conv", "tl_conv_nhwc_s8_gemm", 1.5),
    ("pointwise 64 to 16, in place", lambda: conv_layer((12, 12, 16), 16, (3, 3), Window2D("SAME"), 1, widen=64),
     "narrow", "tl_conv_nhwc_s8_direct", 1.65),
    ("pointwise, 64 channels", lambda: conv_layer((8, 8, 64), 64, (1, 1), Window2D("SAME"), 4, widen=128),
     "conv", "tl_pointwise_s8_cols", 1.12),
    ("pointwise 6x6, 19 to 19", lambda: conv_layer((6, 6, 19), 19, (1, 1), Window2D("SAME"), 31),
     "conv", "tl_pointwise_s8_cols", 1.32),
    ("pointwise, depth 8 to 16", lambda: conv_layer((12, 12, 8), 16, (1, 1), Window2D("SAME"), 11),
     "conv", "tl_pointwise_s8_shallow", 1.45),
    ("pointwise, depth 16 to 32", lambda: conv_layer((10, 10, 16), 32, (1, 1), Window2D("SAME"), 12),
     "conv", "tl_pointwise_s8_shallow", 1.32),
    ("pointwise stride 2, depth 16 to 32", lambda: conv_layer((12, 12, 16), 32, (1, 1), Window2D("SAME", 2, 2), 13),
     "conv", "tl_pointwise_s8_shallow", 1.32),
    ("3-channel first layer 3x3 stride 2", lambda: conv_layer((16, 16, 3), 8, (3, 3), Window2D("SAME", 2, 2), 2),
     "conv", "tl_conv_nhwc_s8_gemm", 2.65),
    ("10x4 one-channel first layer", lambda: conv_layer((20, 10, 1), 16, (10, 4), Window2D("SAME", 2, 2), 3),
     "conv", "tl_conv_nhwc_s8_gemm", 2.2),
    ("dense, two rows", lambda: dense_layer(2, 128, 64, 5), "fc", "tl_fc_s8_gemm", 1.5),
    ("dense, one row", lambda: dense_layer(1, 128, 64, 5), "fc", "tl_fc_s8_row", 1.6),
    ("dense, one row of 75 to 7 units", lambda: dense_layer(1, 75, 7, 10), "fc", "tl_fc_s8_row_wide", 1.43),
    ("dense head 22 to 2", lambda: dense_layer(1, 22, 2, 40, "NONE"), "fc", "tl_fc_s8_row_wide", 2.2),
    ("general 3x3 in place, 16x16x32 to 16", lambda: in_place_conv(), "c3", "tl_conv_nhwc_s8_direct", 1.5),
    ("dense head 64 to 12", lambda: dense_layer(1, 64, 12, 16, "NONE"), "fc", "tl_fc_s8_row_wide", 1.25),
    ("dense head 64 to 10", lambda: dense_layer(1, 64, 10, 17, "NONE"), "fc", "tl_fc_s8_row_wide", 1.3),
    ("dense 8 to 128, ReLU", lambda: dense_layer(1, 8, 128, 18), "fc", "tl_fc_s8_row_wide", 1.5),
    ("depthwise 3x3 stride 1", lambda: depthwise_layer((10, 10, 32), 1, Window2D("SAME"), 6), "dw",
     "tl_dwconv3x3_s8_rows", 2.5),
    ("depthwise 3x3 stride 2", lambda: depthwise_layer((10, 10, 32), 1, Window2D("SAME", 2, 2), 7), "dw",
     "tl_dwconv3x3_s8_rows", 2.5),
    ("depthwise 3x3 stride 1, 8x8", lambda: depthwise_layer((8, 8, 16), 1, Window2D("SAME"), 6), "dw",
     "tl_dwconv3x3_s8_rows", 2.55),
    # VWW's node 72: every output at the bottom or right border, shifts 12 apart (pre-shifted)
    ("depthwise 3x3 stride 2, 6x6x27", lambda: depthwise_layer((6, 6, 27), 1, Window2D("SAME", 2, 2), 14, 13), "dw",
     "tl_dwconv3x3_s8_rows", 2.5),
    ("depthwise 3x3, 19 channels (a tail of 3)", lambda: depthwise_layer((6, 6, 19), 1, Window2D("SAME"), 9), "dw",
     "tl_dwconv3x3_s8_rows", 2.55),
    ("depthwise multiplier 2", lambda: depthwise_layer((8, 8, 16), 2, Window2D("SAME"), 8), "dw",
     "tl_dwconv_nhwc_s8", 12.8),
]


@pytest.mark.parametrize("name,build,layer,kernel,budget", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_layer_is_bit_exact_within_its_instruction_budget(name, build, layer, kernel, budget, tmp_path):
    needs_board("cortex-m4")
    report = verify(build(), "cortex-m4", runs=2, opt="speed", folder=tmp_path)
    assert report["verified"], report["first_difference"]
    found = [entry for entry in report["layers"] if entry["name"].split(".")[0] == layer and entry["macs"]]
    assert len(found) == 1 and found[0]["kernel"] == kernel, report["layers"]
    assert found[0]["per_mac"] <= budget, found[0]


def kernels_model():
    """tl_conv_gemm.h's kernels in one model: columns of one and three channels (with and without
    padding), a shallow 1x1 convolution of depth 8 (tl_pointwise_s8_shallow), a 3x3 convolution
    with columns, a dense layer of one row."""
    rng = np.random.default_rng(9)
    g = GraphBuilder()
    h = g.input("x", "i8", (1, 11, 9, 1), q(0.03, -9))
    layers = [(3, (3, 3), Window2D("SAME")), (8, (3, 2), Window2D("VALID", 2, 1)), (16, (1, 1), Window2D("SAME")),
              (4, (3, 3), Window2D("SAME"))]
    for index, (filters, kernel, window) in enumerate(layers):
        depth = int(g.model.outlet_fact(h).shape[3])
        scales = [0.01, 4.0, 0.02, 0.01][:filters] if index == 0 else [0.01] * filters  # 4.0: TFLite's recipe
        w = g.const(f"w{index}", rng.integers(-127, 128, (filters, *kernel, depth)), "i8", qc(scales, 0))
        h = g.conv(f"c{index}", [h, w], window, q(0.1, index - 2), "RELU")
    depth = int(np.prod(g.model.outlet_fact(h).shape))
    w = g.const("wd", rng.integers(-127, 128, (6, depth)), "i8", q(0.01))
    # a bias near 2^30: accumulators too big to double, TFLite Micro's recipe on them (mode 2)
    b = g.const("bd", rng.integers(1 << 30, (1 << 30) + 5000, 6) * np.array([1, -1, 1, -1, 1, -1]), "i32",
                q(0.1 * 0.01))
    g.model.outputs = [g.dense("fc", h, w, b, q(2e6, 1), flavour="micro")]
    return g.model


def test_kernels_are_bit_exact_on_the_cortex_m4(tmp_path):
    """tl_conv_gemm.h's kernels over every path kernels_model takes: columns of one and three
    channels at borders and inside, odd counts of pixels and filters, a channel requantized by
    TFLite's recipe (mode 1), a dense layer of one row with accumulators kept single (mode 2)."""
    needs_board("cortex-m4")
    from tractile.compile import generate
    from tractile.compile.target import find_target

    source = generate(kernels_model(), name="m", target=find_target("cortex-m4")).source
    assert "_requant, 1, " in source and "_requant, 2, " in source
    report = verify(kernels_model(), "cortex-m4", runs=3, opt="speed", folder=tmp_path)
    assert report["verified"], report["first_difference"]


def test_kernels_portable_form_is_bit_exact_on_the_host(tmp_path):
    """The same kernels without the DSP extension (a host target asking for them), against the
    interpreter, and under strict C99 warnings with gcc and clang."""
    from dataclasses import replace

    from tractile.compile import compile_model, generate
    from tractile.compile.target import HOST

    from .harness import assert_builds_without_warnings, needs_cc

    needs_cc()
    target, model = replace(HOST, dsp=True), kernels_model()
    compiled = compile_model(model, cache_dir=tmp_path / "cache", target=target)
    kernels = {node["kernel"] for node in compiled.report["nodes"]}
    assert {"tl_conv_nhwc_s8_gemm", "tl_fc_s8_row", "tl_pointwise_s8_shallow"} <= kernels, kernels
    rng = np.random.default_rng(0)
    for _ in range(3):
        values = [rng.integers(-128, 128, (1, 11, 9, 1)).astype(np.int8)]
        assert np.array_equal(compiled.run(values)[0], model.run(values)[0])
    assert_builds_without_warnings(generate(model, name="portable", target=target), tmp_path / "warnings")


@pytest.mark.parametrize("compiler", ["arm-none-eabi-gcc", "clang"])
def test_kernels_build_without_warnings_for_the_cortex_m4(compiler, tmp_path):
    """Every kernel of tl_conv_gemm.h (columns, in place, one dense row) under strict C99 warnings
    for the Cortex-M4, at -O2 and -Os, with the instructions they are written for."""
    import shutil
    import subprocess

    from tractile.compile import generate
    from tractile.compile.target import find_target

    from .harness import WARNING_FLAGS
    from .test_dsp_kernels import M4_FLAGS

    if shutil.which(compiler) is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip(f"{compiler} or arm-none-eabi-gcc not installed")
    source = generate(kernels_model(), name="m4", target=find_target("cortex-m4"))
    second = generate(conv_layer((12, 12, 16), 16, (3, 3), Window2D("SAME"), 1, widen=64), name="m4b",
                      target=find_target("cortex-m4"))
    for kernel in ("tl_conv_nhwc_s8_gemm", "tl_fc_s8_row", "tl_pointwise_s8_shallow"):
        assert f"{kernel}(" in source.source, kernel
    assert "tl_conv_nhwc_s8_direct(" in second.source
    flags = M4_FLAGS if compiler != "clang" else ["--target=arm-none-eabi", *M4_FLAGS, "-isystem",
                                                  "/usr/lib/arm-none-eabi/include"]
    for name, built_source in (("m4", source), ("m4b", second)):
        built_source.write(tmp_path)
        for opt in ("-Os", "-O2"):  # the listing below is the -O2 build's
            built = subprocess.run([compiler, *flags, *WARNING_FLAGS, opt, "-c", f"{name}.c", "-o", f"{name}.o"],
                                   cwd=tmp_path, capture_output=True, text=True)
            assert built.returncode == 0, built.stderr
        listing = subprocess.run(["arm-none-eabi-objdump", "-d", f"{name}.o"], cwd=tmp_path, capture_output=True,
                                 text=True).stdout
        for instruction in ("smlad", "sxtb16", "smmlar", "ssat") + (("ldrd", "sadd16") if name == "m4" else ()):
            assert instruction in listing, f"{compiler}: no {instruction} in {name}"


def pointwise_chain(seed: int, shape: tuple, filters: tuple):
    """Three 1x1 convolutions of ``filters`` output channels: SAME with RELU6 (output zero point
    -128), VALID stride 2 without activation (zero point 3: the requantization's sign term kept),
    SAME with RELU; per-channel scales."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    h = g.input("x", "i8", shape, q(0.03, -9))
    layers = [(Window2D("SAME"), q(6 / 255, -128), "RELU6"), (Window2D("VALID", 2, 2), q(0.1, 3), "NONE"),
              (Window2D("SAME"), q(0.05, -20), "RELU")]
    for index, (count, (window, out_q, activation)) in enumerate(zip(filters, layers)):
        depth = int(g.model.outlet_fact(h).shape[3])
        scales = _scales(count, 0.004)
        w = g.const(f"w{index}", rng.integers(-127, 128, (count, 1, 1, depth)), "i8", qc(scales, 0))
        b = g.const(f"b{index}", rng.integers(-3000, 3000, (count,)), "i32", qc([0.03 * s for s in scales], 0))
        h = g.conv(f"p{index}", [h, w, b], window, out_q, activation)
    g.model.outputs = [h]
    return g.model


def shallow_model():
    """tl_pointwise_s8_shallow over every path: depths 4 (two pixels a pass, an odd count of
    pixels and of filters), 12 (one pixel a pass) and 8 at stride 2 over an odd row width, an
    output range below the zero point (the requantization's sign term kept), per-channel scales."""
    return pointwise_chain(14, (1, 7, 5, 4), (12, 8, 9))


def test_shallow_pointwise_is_bit_exact_on_the_cortex_m4(tmp_path):
    needs_board("cortex-m4")
    report = verify(shallow_model(), "cortex-m4", runs=3, opt="speed", folder=tmp_path)
    assert report["verified"], report["first_difference"]
    kernels = [entry["kernel"] for entry in report["layers"] if entry["macs"]]
    assert kernels == ["tl_pointwise_s8_shallow"] * 3, report["layers"]


def test_common_shift_requantization_equals_tflites_recipe():
    """tl_pw_out's common shift (conv_gemm.common_shift's scaling of a channel by 2^(d+1), Kc, the
    truncating SMMLA's high word shifted by R), in integers on the host: equal to
    MultiplyByQuantizedMultiplier(x, m, -r) + zero for every x >= 0, at most zero below (where the
    lower bound, at least the zero point, clamps both); rounding as SMMLAR does instead is not."""
    from tractile.ops.quantized.fixedpoint import multiply_by_quantized_multiplier

    rng = np.random.default_rng(3)
    rounded_differs = False
    for _ in range(400):
        m, r, d, zero = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(1, 14)), int(rng.integers(1, 6)), \
            int(rng.integers(-128, 128))
        shift, limit = r + d, (1 << (30 - d)) - 1
        x = np.concatenate([rng.integers(-(1 << 20), 1 << 20, 3000), np.arange(-300, 300), [limit, -limit]])
        expected = multiply_by_quantized_multiplier(x, m, -r).astype(np.int64) + zero
        kc = (1 << (d - 1)) + (1 << (shift - 1)) + zero * (1 << shift)
        product = (kc << 32) + (x << (d + 1)) * m
        got = (product >> 32) >> shift
        assert np.array_equal(got[x >= 0], expected[x >= 0]), (m, r, d, zero)
        assert got[x < 0].max() <= zero and expected[x < 0].max() <= zero
        rounded_differs |= not np.array_equal(((product + (1 << 31)) >> 32 >> shift)[x >= 0], expected[x >= 0])
    assert rounded_differs


def _tflite_requantize(x: int, m: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier for a right shift (shift < 0), in Python integers."""
    product = x * m
    nudged = product + (1 << 30 if product >= 0 else 1 - (1 << 30))
    high = (2**31 - 1) if x == m == -(2**31) else (abs(nudged) >> 31) * (1 if nudged >= 0 else -1)  # C's division
    exponent = -shift
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> exponent) + (1 if high & mask > threshold else 0)


def test_shared_shift_requantization_equals_tflites_recipe():
    """tl_dwconv3x3_s8_rows's requantization with one shift for the layer (conv_dsp.shared_shift:
    weights and bias scaled by 2^(1+d) per channel, one SMMLA without rounding, SSAT's asr #R),
    computed exactly in Python integers, against MultiplyByQuantizedMultiplier plus the zero point,
    both clamped to a lower bound at or above the zero point, on accumulators of both signs for
    right shifts of 1 to 12 in one layer."""
    from tractile.compile.ops.conv_dsp import doubled_requant, shared_shift

    rng = np.random.default_rng(3)
    shifts = -np.arange(1, 13)
    multipliers = rng.integers(1 << 30, (1 << 31) - 1, shifts.size)
    checked = 0
    for zero, low in ((-128, -128), (-5, 0), (3, 3), (10, 60)):
        rq, mixed = doubled_requant(multipliers, shifts, zero, shifts.size)
        found = shared_shift(rq, mixed, zero, low, np.zeros(shifts.size, np.int64), 0,
                             np.ones((9, shifts.size), np.int64))
        assert found is not None
        big, scale, words = found
        assert shared_shift(rq, mixed, zero, zero - 1, np.zeros(shifts.size, np.int64), 0,
                            np.ones((9, shifts.size), np.int64)) is None  # a sign term would be needed
        for channel in range(shifts.size):
            m, k, _ = (int(v) for v in words[3 * channel:3 * channel + 3])
            limit = (1 << 31) // int(scale[channel])
            # and the accumulators nearest the outputs' rounding ties (x m / 2^(31 + r) = j + 1/2)
            step = 2 ** (31 - int(shifts[channel])) / int(multipliers[channel])
            ties = [int((j + 0.5) * step) + delta for j in range(-40, 40) for delta in (-1, 0, 1)]
            values = [int(v) for v in rng.integers(-limit, limit, 3000)] + [0, 1, -1, limit - 1, -limit] + \
                [t for t in ties if abs(t) < limit]
            for x in values:
                ours = ((x * int(scale[channel]) * m + (k << 32)) >> 32) >> big
                theirs = _tflite_requantize(x, int(multipliers[channel]), int(shifts[channel])) + zero
                assert min(max(ours, low), 127) == min(max(theirs, low), 127), (channel, x, zero, low)
                checked += 1
    assert checked > 100000


def test_pre_shifted_channels_requantize_as_tflite_for_every_reachable_accumulator():
    """shared_shift over shifts 6 to 19 in one layer (VWW's last depthwise layers: 7 to 19), too far
    apart for every channel's weights to be scaled up to one shift: the channels whose shift
    reaches the common one take a smaller multiplier instead; each channel's output equals the
    interpreter's MultiplyByQuantizedMultiplier plus the zero point, both clamped, for every
    accumulator its bias, weights and int8 inputs can produce."""
    from tractile.compile.ops.conv_dsp import doubled_requant, shared_shift
    from tractile.ops.quantized.fixedpoint import multiply_by_quantized_multiplier

    rng = np.random.default_rng(0)
    channels, zero, low, high, x_offset = 27, -128, -128, 127, 9
    power = np.arange(channels) % 14
    shifts = -(6 + power)
    multipliers = rng.integers(1 << 30, (1 << 31) - 1, channels)
    taps = rng.integers(-127, 128, (9, channels)).astype(np.int64)
    raw_bias = rng.integers(-3000, 3000, channels) << power
    rq, mixed = doubled_requant(multipliers, shifts, zero, channels)
    found = shared_shift(rq, mixed, zero, low, raw_bias, x_offset, taps, high)
    assert found is not None
    big, scale, words = found
    assert big < -shifts.min() + 1 and (scale == 2).sum() > 0  # some channels pre-shifted
    for channel in range(channels):
        m, k = int(words[3 * channel]), int(words[3 * channel + 1])
        w = taps[:, channel]
        base = int(raw_bias[channel]) + x_offset * int(w.sum())
        x = np.arange(base + int(np.minimum(-128 * w, 127 * w).sum()),
                      base + int(np.maximum(-128 * w, 127 * w).sum()) + 1)
        ours = np.clip(((x * int(scale[channel]) * m + (k << 32)) >> 32) >> big, low, high)
        theirs = multiply_by_quantized_multiplier(x, int(multipliers[channel]), int(shifts[channel])) + zero
        assert np.array_equal(ours, np.clip(theirs, low, high)), channel


def assert_portable_and_strict(model, shape: tuple, seed: int, name: str, tmp_path) -> None:
    """The DSP kernels' portable form on the host equals the interpreter on three random inputs,
    and the Cortex-M4 source builds under strict C99 warnings with gcc and clang at -Os and -O2."""
    import shutil
    import subprocess
    from dataclasses import replace

    from tractile.compile import compile_model, generate
    from tractile.compile.target import HOST, find_target

    from .harness import WARNING_FLAGS
    from .test_dsp_kernels import M4_FLAGS

    compiled = compile_model(model, cache_dir=tmp_path / "cache", target=replace(HOST, dsp=True))
    rng = np.random.default_rng(seed)
    for _ in range(3):
        values = [rng.integers(-128, 128, shape).astype(np.int8)]
        assert np.array_equal(compiled.run(values)[0], model.run(values)[0])
    source = generate(model, name=name, target=find_target("cortex-m4"))
    source.write(tmp_path)
    for compiler in ("arm-none-eabi-gcc", "clang"):
        if shutil.which(compiler) is None:
            continue
        flags = M4_FLAGS if compiler != "clang" else ["--target=arm-none-eabi", *M4_FLAGS, "-isystem",
                                                      "/usr/lib/arm-none-eabi/include"]
        for opt in ("-Os", "-O2"):
            built = subprocess.run([compiler, *flags, *WARNING_FLAGS, opt, "-c", f"{name}.c", "-o", f"{name}.o"],
                                   cwd=tmp_path, capture_output=True, text=True)
            assert built.returncode == 0, built.stderr


def wide_dense_model():
    """tl_fc_s8_row_wide over its paths: depth 7 (four groups a pass, a tail of 3 inputs) with
    ReLU (the common shift, the lower bound clamped four outputs at a time), per-channel scales
    with ReLU6 below 127 (both bounds clamped; 14 units: three groups and a pair), a head without
    activation of 10 units over 14 inputs (two groups and a pair, a tail of 2 inputs)."""
    rng = np.random.default_rng(19)
    g = GraphBuilder()
    h = g.input("x", "i8", (1, 7), q(0.03, -9))
    layers = [(32, q(0.1, -3), "RELU", False), (14, q(0.05, -20), "RELU6", True), (10, q(0.2, 4), "NONE", False)]
    for index, (units, out_q, activation, per_channel) in enumerate(layers):
        depth = int(g.model.outlet_fact(h).shape[1])
        scales = _scales(units, 0.005) if per_channel else [0.005] * units
        w_q = qc(scales, 0) if per_channel else q(0.005)
        w = g.const(f"w{index}", rng.integers(-127, 128, (units, depth)), "i8", w_q)
        b = g.const(f"b{index}", rng.integers(-3000, 3000, (units,)), "i32",
                    qc([0.03 * s for s in scales], 0) if per_channel else q(0.03 * 0.005))
        h = g.dense(f"fc{index}", h, w, b, out_q, activation, flavour="micro")
    g.model.outputs = [h]
    return g.model


def test_wide_dense_row_is_bit_exact_on_the_cortex_m4_and_the_host(tmp_path):
    """tl_fc_s8_row_wide on the emulated Cortex-M4 (the SSUB8/SEL clamps), in its portable form on
    the host, and under strict C99 warnings for the Cortex-M4 with gcc and clang at -O2 and -Os."""
    from .harness import needs_cc

    needs_board("cortex-m4")
    report = verify(wide_dense_model(), "cortex-m4", runs=3, opt="speed", folder=tmp_path / "m4")
    assert report["verified"], report["first_difference"]
    assert [entry["kernel"] for entry in report["layers"] if entry["macs"]] == ["tl_fc_s8_row_wide"] * 3
    needs_cc()
    model = wide_dense_model()
    assert_portable_and_strict(model, (1, 7), 1, "wide", tmp_path)


def direct_model():
    """3x3 convolutions reading their inputs in place (tl_conv_nhwc_s8_direct, after a 1x1 layer
    to 32 channels, the arena's peak): pairs of pixels at the borders (padding columns on the
    left of the first, on the right of the second, rows of padding), an odd width (a last single
    pixel), stride 2."""
    rng = np.random.default_rng(21)
    g = GraphBuilder()
    h = g.input("x", "i8", (1, 9, 7, 8), q(0.03, -9))
    layers = [("up", 32, (1, 1), Window2D("SAME")), ("c3", 16, (3, 3), Window2D("SAME")),
              ("up2", 32, (1, 1), Window2D("SAME")), ("c3b", 12, (3, 3), Window2D("SAME", 2, 2))]
    for name, count, size, window in layers:
        depth = int(g.model.outlet_fact(h).shape[3])
        scales = _scales(count, 0.004)
        w = g.const(f"{name}_w", rng.integers(-127, 128, (count, *size, depth)), "i8", qc(scales, 0))
        b = g.const(f"{name}_b", rng.integers(-3000, 3000, (count,)), "i32", qc([0.03 * s for s in scales], 0))
        h = g.conv(name, [h, w, b], window, q(0.05, 3), "NONE")
    g.model.outputs = [h]
    return g.model


def test_in_place_convolution_pairs_at_the_borders_are_bit_exact(tmp_path):
    """tl_conv_nhwc_s8_direct's border pairs on the emulated Cortex-M4 and in the portable form."""
    from dataclasses import replace

    from tractile.compile import compile_model
    from tractile.compile.target import HOST

    from .harness import needs_cc

    needs_board("cortex-m4")
    report = verify(direct_model(), "cortex-m4", runs=3, opt="speed", folder=tmp_path / "m4")
    assert report["verified"], report["first_difference"]
    kernels = {entry["name"].split(".")[0]: entry["kernel"] for entry in report["layers"] if entry["macs"]}
    assert kernels["c3"] == kernels["c3b"] == "tl_conv_nhwc_s8_direct", kernels
    needs_cc()
    model = direct_model()
    compiled = compile_model(model, cache_dir=tmp_path / "cache", target=replace(HOST, dsp=True))
    rng = np.random.default_rng(2)
    for _ in range(2):
        values = [rng.integers(-128, 128, (1, 9, 7, 8)).astype(np.int8)]
        assert np.array_equal(compiled.run(values)[0], model.run(values)[0])


def cols_model():
    """tl_pointwise_s8_cols over its paths: depths with tails of 2 and 3 inputs, odd and even
    counts of channels and of pixels (an odd last pixel run as a pair with itself), stride 2,
    the common shift (RELU6, RELU) and a shift per channel with the requantization's sign term
    (no activation, zero point 3), per-channel scales."""
    return pointwise_chain(23, (1, 5, 7, 22), (15, 10, 9))


def test_small_pointwise_is_bit_exact_on_the_cortex_m4_and_the_host(tmp_path):
    """tl_pointwise_s8_cols on the emulated Cortex-M4 (-O2 and -Os), in its portable form on the
    host, and under strict C99 warnings for the Cortex-M4 with gcc and clang at -O2 and -Os."""
    from .harness import needs_cc

    needs_board("cortex-m4")
    for opt in ("speed", "size"):
        report = verify(cols_model(), "cortex-m4", runs=3, opt=opt, folder=tmp_path / opt)
        assert report["verified"], report["first_difference"]
        assert [entry["kernel"] for entry in report["layers"] if entry["macs"]] == ["tl_pointwise_s8_cols"] * 3
    needs_cc()
    model = cols_model()
    assert_portable_and_strict(model, (1, 5, 7, 22), 4, "cols", tmp_path)
