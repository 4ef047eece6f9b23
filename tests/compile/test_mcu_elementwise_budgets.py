"""int8 ADD/SUB/MUL, average pooling and MEAN on the Cortex-M4's DSP paths (ops/binary_dsp.py,
ops/pool_dsp.py): bit for bit with the interpreter in QEMU on odd shapes and broadcasting, and
within instruction budgets per element. QEMU counts instructions deterministically (-icount): budgets, not timings."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, Window2D
from tractile.compile import compile_model, generate
from tractile.compile.ops import binary_dsp
from tractile.compile.target import HOST
from tractile.compile.targets.verify import verify
from tractile.ops.quantized.binary import BinaryRecipe
from tractile.ops.quantized.common import recipe_of
from tractile.ops.reduce import Reduce

from .harness import WARNING_FLAGS, assert_builds_without_warnings, assert_same_outputs, q, random_input
from .test_dsp_kernels import M4_FLAGS
from .test_targets import needs_board


def odd_shapes_model():
    """ADD with a fused ReLU over 105 elements (six words of 16 and nine alone), SUB broadcasting
    a [1,1,7,1] tensor (a broadcast value per run of 3), MUL by a per-channel vector with RELU6
    (both clamps), SUB of a scalar, and a MUL whose requantization has no right shift."""
    g = GraphBuilder()
    a = g.input("a", "i8", (1, 5, 7, 3), q(0.031, -7))
    d = g.input("d", "i8", (1, 5, 7, 3), q(0.047, 21))
    b = g.input("b", "i8", (1, 1, 7, 1), q(0.012, 3))
    c = g.input("c", "i8", (3,), q(0.02, -100))
    s = g.binary("sum", "add", [a, d], q(0.05, 11), "RELU")
    t = g.binary("difference", "sub", [s, b], q(0.06, -5))
    u = g.binary("product", "mul", [t, c], q(0.06, -20), "RELU6")
    v = g.binary("shifted", "sub", [d, g.const("one", [[[[9]]]], "i8", q(0.1, 0))], q(0.045, 0))
    w = g.binary("unshifted", "mul", [a, d], q(0.002, -3))  # an output multiplier in [0.5, 1): no shift
    return g.outputs(s, t, u, v, w)


def test_dsp_binary_ops_are_bit_exact_on_odd_shapes_and_broadcasting(tmp_path):
    needs_board("cortex-m4")
    model = odd_shapes_model()
    report = verify(model, "cortex-m4", runs=4, folder=tmp_path)
    assert report["verified"], report["first_difference"]
    kernels = {layer["name"]: layer["kernel"] for layer in report["layers"]}
    assert [kernels[name] for name in ("sum.pre", "difference", "product.pre", "shifted", "unshifted")] == \
        ["(dsp loop)"] * 5, kernels
    source = (tmp_path / "model.c").read_text()
    assert "TL_RQ8_NOSHIFT(" in source and "TL_RQ8_RELU(" in source and "tl_out_s8(v + (" in source


def test_portable_targets_keep_the_portable_loop():
    source = generate(odd_shapes_model(), name="odd", target="cortex-m3")
    assert "tl_binary_dsp.h" not in source.files and "TL_RQ8" not in source.files["odd.c"]


def test_dsp_binary_ops_portable_form_matches_the_interpreter(compile_cache, tmp_path):
    """The same generated loops without the DSP extension (a host target asking for them: the
    header's C forms), against the interpreter, and under strict warnings with gcc and clang."""
    model = odd_shapes_model()
    target = replace(HOST, dsp=True)
    compiled = compile_model(model, name="odd_dsp", cache_dir=compile_cache, target=target)
    assert "TL_RQ8(" in compiled.source.source
    rng = np.random.default_rng(1)
    for _ in range(3):
        inputs = [random_input(f, rng) for f in compiled.input_facts]
        assert_same_outputs(model.run(inputs), compiled.run(inputs))
    assert_builds_without_warnings(generate(model, name="odd_dsp", target=target), tmp_path)


@pytest.mark.parametrize("kind,scales,activation", [("add", (0.031, 0.012, 0.05), "RELU"),
                                                     ("sub", (0.2, 0.0013, 0.02), "NONE"),
                                                     ("mul", (0.031, 0.012, 0.0005), "NONE"),
                                                     ("mul", (0.05, 0.07, 0.3), "RELU6")])
def test_every_pair_of_int8_inputs_is_bit_exact(kind, scales, activation, compile_cache):
    """All 65,536 pairs of inputs through the DSP path's C forms (host), against the interpreter."""
    model = every_pair_model(kind, scales, activation)
    compiled = compile_model(model, name=f"every_{kind}", cache_dir=compile_cache, target=replace(HOST, dsp=True))
    assert "TL_RQ8" in compiled.source.source
    inputs = every_pair()
    assert_same_outputs(model.run(inputs), compiled.run(inputs))


@pytest.mark.parametrize("kind,scales,activation", [("add", (0.031, 0.012, 0.05), "RELU"),
                                                     ("mul", (0.05, 0.07, 0.3), "RELU6")])
def test_every_pair_of_int8_inputs_is_bit_exact_on_the_cortex_m4(kind, scales, activation, tmp_path):
    """ADD with ReLU (the accumulator clamped at 0 by USAT) and MUL (SXTAB16/SMULBB products) with
    RELU6 below 127 (SSAT's limit less an offset added back by UADD8): every pair in QEMU."""
    needs_board("cortex-m4")
    model = every_pair_model(kind, scales, activation)
    report = verify(model, "cortex-m4", runs=0, inputs=[every_pair()], folder=tmp_path)
    assert report["verified"] and report["inputs_checked"] == 1, report["first_difference"]
    source = (tmp_path / "model.c").read_text()
    assert "TL_RQ8_RELU(" in source and ("tl_smulbb(" in source) == (kind == "mul"), source[:2000]
    assert ("TL_ADD4_S8(" in source) == (kind == "mul") and "TL_MAX4_S8(" not in source


def every_pair_model(kind: str, scales: tuple, activation: str):
    g = GraphBuilder()
    a = g.input("a", "i8", (256 * 256,), q(scales[0], -9))
    b = g.input("b", "i8", (256 * 256,), q(scales[1], 17))
    return g.outputs(g.binary("y", kind, [a, b], q(scales[2], 6), activation))


def every_pair() -> list[np.ndarray]:
    every = np.arange(-128, 128, dtype=np.int8)
    return [np.repeat(every, 256), np.tile(every, 256)]


@pytest.mark.parametrize("compiler", ["arm-none-eabi-gcc", "clang"])
def test_dsp_kernels_build_without_warnings_for_the_cortex_m4(compiler, tmp_path):
    if shutil.which(compiler) is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip(f"{compiler} or arm-none-eabi-gcc not installed")
    flags = M4_FLAGS if compiler != "clang" else ["--target=arm-none-eabi", *M4_FLAGS, "-isystem",
                                                  "/usr/lib/arm-none-eabi/include"]
    listing = ""
    for name, model in (("binary", odd_shapes_model()), ("pools", pool_mean_model()), ("budget", budget_model())):
        generate(model, name=name, target="cortex-m4").write(tmp_path)
        for opt in ("-Os", "-O2"):
            built = subprocess.run([compiler, *flags, *WARNING_FLAGS, opt, "-c", f"{name}.c", "-o", f"{name}.o"],
                                   cwd=tmp_path, capture_output=True, text=True)
            assert built.returncode == 0, built.stderr
        listing += subprocess.run(["arm-none-eabi-objdump", "-d", f"{name}.o"], cwd=tmp_path, capture_output=True,
                                  text=True).stdout
    for instruction in ("smmlar", "ssat", "bfi", "ssub8", "sel", "sxtab16", "usat", "uadd8", "smulbb", "smultt"):
        assert instruction in listing, f"{compiler}: no {instruction}"


def budget_model():
    g = GraphBuilder()
    a = g.input("a", "i8", (1, 16, 16, 32), q(0.031, -7))
    b = g.input("b", "i8", (1, 16, 16, 32), q(0.012, 3))
    c = g.input("c", "i8", (32,), q(0.02, -100))
    return g.outputs(g.binary("relu_sum", "add", [a, b], q(0.05, 11), "RELU"),
                     g.binary("sum", "add", [a, b], q(0.05, 11)),
                     g.binary("product", "mul", [a, b], q(0.002, 11)),
                     g.binary("channel_sum", "add", [a, c], q(0.05, 11)),
                     g.binary("channel_product", "mul", [a, c], q(0.06, -20), "RELU6"))


# measured (arm-none-eabi-gcc 12), instructions per element at -O2 / -Os: ADD with ReLU 9.32 / 9.88,
# ADD 9.32 / 9.63, MUL 7.94 / 8.69, ADD of a per-channel vector 9.13 / 9.13, MUL by a per-channel
# vector with RELU6 (both bounds) 7.41 / 8.38 (before issue 26's MUL round, -O2: 9.88, 9.32, 9.31,
# 9.63 and 10.13; TFLite's recipe in C took 35 and 21). -Os figures move by a few tenths with the
# registers the rest of the function leaves free.
BUDGETS = {"speed": {"relu_sum.pre": 9.5, "sum": 9.5, "product": 8.2, "channel_sum": 9.4, "channel_product.pre": 7.7},
           "size": {"relu_sum.pre": 10.0, "sum": 10.0, "product": 9.0, "channel_sum": 9.5, "channel_product.pre": 8.7}}


@pytest.mark.parametrize("opt", ["speed", "size"])
def test_int8_add_and_mul_take_at_most_ten_instructions_per_element(opt, tmp_path):
    needs_board("cortex-m4")
    report = verify(budget_model(), "cortex-m4", runs=1, opt=opt, folder=tmp_path)
    assert report["verified"], report["first_difference"]
    per_element = {layer["name"]: layer["count"] / (16 * 16 * 32) for layer in report["layers"]
                   if layer["kernel"] == "(dsp loop)"}
    assert set(per_element) == set(BUDGETS[opt]), per_element
    for name, budget in BUDGETS[opt].items():
        assert per_element[name] <= budget, (name, per_element)


def test_rescaled_tables_are_the_interpreters_recipe():
    """The tables hold twice TFLite's rescaled inputs (SUB's second negated); an ADD whose two
    rescaled values could sum to 2^30 is refused (and keeps the portable loop)."""
    model = odd_shapes_model()
    node = model.node_by_name("difference")
    recipe = recipe_of(node.op.prepared(model.node_input_facts(node.id)))
    assert isinstance(recipe, BinaryRecipe)
    tables = binary_dsp.rescaled_tables(recipe)
    assert tables is not None
    every = np.arange(-128, 128, dtype=np.int64)
    assert recipe.r1 is not None and recipe.r2 is not None
    np.testing.assert_array_equal(tables[0], 2 * recipe.r1((every - recipe.z1) << recipe.left))
    np.testing.assert_array_equal(tables[1], -2 * recipe.r2((every - recipe.z2) << recipe.left))
    m, k, r = binary_dsp.output_constants(recipe) or (0, 0, 0)
    assert r >= 1 and k == (1 << (r - 1)) + recipe.zo * (1 << r)


# --- int8 average and max pooling and MEAN (ops/pool_dsp.py, tl_pool_dsp.h) ----------------------------------

def pool_mean_model():
    """An average pool (3x3, stride 2, SAME: windows of 4 to 9 taps; 11 channels, 8 through the
    DSP loop and 3 alone) with a fused RELU6, a global one (8x8 over 16 channels), and MEAN over
    H and W of 300 pixels (two halfword passes of at most 256) and 12 channels; max pools of the
same two inputs (2x2 stride 2 over 16 channels; 3x3 SAME over 11 channels with RELU6: two words
and three channels alone, both clamps)."""
    g = GraphBuilder()
    x = g.input("x", "i8", (1, 7, 9, 11), q(0.05, -3))
    g_in = g.input("g", "i8", (1, 8, 8, 16), q(0.04, 5))
    m_in = g.input("m", "i8", (1, 20, 15, 12), q(0.07, -11))
    pooled = g.pool("pooled", "average", x, Window2D("SAME", 2, 2), 3, 3, q(0.05, -3), "RELU6")
    whole = g.pool("whole", "average", g_in, Window2D("VALID", 1, 1), 8, 8, q(0.04, 5))
    mean = g.op("mean", Reduce("mean", (1, 2), keepdims=False, quant=q(0.02, 3)), [m_in])
    largest = g.pool("largest", "max", x, Window2D("SAME", 2, 2), 3, 3, q(0.05, -3), "RELU6")
    peaks = g.pool("peaks", "max", g_in, Window2D("VALID", 2, 2), 2, 2, q(0.04, 5))
    return g.outputs(pooled, whole, mean, largest, peaks)


def test_int8_pools_and_mean_are_bit_exact_on_the_cortex_m4(tmp_path):
    needs_board("cortex-m4")
    report = verify(pool_mean_model(), "cortex-m4", runs=4, opt="speed", folder=tmp_path)
    assert report["verified"], report["first_difference"]
    kernels = {layer["name"].removesuffix(".pre"): layer["kernel"] for layer in report["layers"]}
    assert kernels["pooled"] == kernels["whole"] == "tl_avg_pool_nhwc_s8_dsp", kernels
    assert kernels["mean"] == "tl_mean_pixels_s8_dsp", kernels
    assert kernels["largest"] == kernels["peaks"] == "tl_max_pool_nhwc_s8_dsp", kernels
    counts = {layer["name"].removesuffix(".pre"): layer["count"] for layer in report["layers"]}
    # measured at -O2 (arm-none-eabi-gcc 12), instructions per input element: the global average
    # pool 1.72, MEAN 2.27, the 2x2 max pool 1.48 (the portable kernels: 5.18, 5.09, 8.00)
    assert counts["whole"] / (8 * 8 * 16) <= 1.9, counts
    assert counts["mean"] / (20 * 15 * 12) <= 2.5, counts
    assert counts["peaks"] / (8 * 8 * 16) <= 1.65, counts


def test_int8_pools_and_mean_portable_form_match_the_interpreter(compile_cache):
    model = pool_mean_model()
    compiled = compile_model(model, name="pools_dsp", cache_dir=compile_cache, target=replace(HOST, dsp=True))
    assert "tl_mean_pixels_s8_dsp(" in compiled.source.source and "tl_max_pool_nhwc_s8_dsp(" in compiled.source.source
    rng = np.random.default_rng(2)
    for _ in range(3):
        inputs = [random_input(f, rng) for f in compiled.input_facts]
        assert_same_outputs(model.run(inputs), compiled.run(inputs))
