"""The host's float 3x3 stride-1 convolutions as Winograd F(2x2, 3x3) (tl_host_wino.h): the
transform's algebra, which layers take it, and the compiled kernel against the interpreter on odd
shapes (odd output rows and columns, SAME and VALID padding, channels not multiples of the vector
width or of the 16-wide blocks, no bias, ReLU, no activation, a Concat's channels in place) for the
AVX2 and portable builds, on two threads bit for bit as on one, and as NEON under qemu-aarch64."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from tractile.compile import generate
from tractile.compile.host import CompiledModel, build_shared_library
from tractile.compile.ops.host_wino import most_tiles, pack, takes, tile_side, transform_filters
from tractile.compile.target import find_target
from tractile.datum import DatumType

from ..tflite.builder import GraphBuilder, Window2D
from .harness import assert_builds_without_warnings, needs_cc, random_input
from .test_host_gemm import _cpu_has, aarch64_output, assert_isa_build_matches, assert_matches, run_inputs

RNG = np.random.default_rng(30)
SAME = Window2D("SAME", 1, 1)


def wino_conv(channels: int, filters: int, shape: tuple, window: Window2D = SAME, activation: str = "RELU",
              bias: bool = True, signed: bool = False):
    """A float 3x3 convolution whose sums do not cancel (nonnegative weights and bias, with
    run_inputs' nonnegative inputs): 1e-5 relative holds whatever the order of the sums; with
    ``signed``, weights of either sign scaled to sums of about unit size."""
    g = GraphBuilder()
    x = g.input("x", "f32", (*shape, channels))
    w = RNG.standard_normal((filters, 3, 3, channels))
    w = g.const("w", w / np.sqrt(9 * channels) if signed else np.abs(w) / (9 * channels), "f32")
    inputs = [x, w, g.const("b", RNG.uniform(0, 1, filters), "f32")] if bias else [x, w]
    return g.outputs(g.conv("y", inputs, window, None, activation))


def wino_fire(channels: int = 16, shape: tuple = (1, 7, 11)):
    """SqueezeNet's fire module: a 1x1 and a 3x3 convolution (Winograd) writing their channels of
    one Concat in place (the 3x3's pixels 23 floats apart), then a 1x1 convolution."""
    from tractile.ops.array import Concat

    g = GraphBuilder()
    x = g.input("x", "f32", (*shape, channels))

    def conv(name: str, source, filters: int, kernel: tuple, depth: int):
        taps = depth * kernel[0] * kernel[1]
        w = g.const(f"{name}_w", np.abs(RNG.standard_normal((filters, *kernel, depth))) / taps, "f32")
        return g.conv(name, [source, w, g.const(f"{name}_b", RNG.uniform(0, 1, filters), "f32")], SAME, None, "RELU")

    squeeze = conv("squeeze", x, 16, (1, 1), channels)
    joined = g.op("joined", Concat(axis=3), [conv("expand1", squeeze, 6, (1, 1), 16),
                                              conv("expand3", squeeze, 17, (3, 3), 16)])
    return g.outputs(conv("next", joined, 5, (1, 1), 23))


MODELS = {
    # F(4x4, 3x3) (up to 135 input channels): odd output rows and columns (7 = 4 + 3, 9 = 4 + 4 + 1),
    # two batches, 19 channels (8 + 8 + 3), 35 filters (16 + 16 + 3)
    "same_odd": lambda: wino_conv(19, 35, (2, 7, 9)),
    # no padding: the last tile row and column read past the input (zeros), half of them stored
    "valid_no_bias": lambda: wino_conv(16, 32, (1, 10, 13), Window2D("VALID", 1, 1), "NONE", bias=False),
    "relu6_wide": lambda: wino_conv(24, 16, (1, 5, 30), activation="RELU6"),
    "concat": wino_fire,
    # F(2x2, 3x3) (136 input channels and more): odd output rows and columns
    "deep_f2": lambda: wino_conv(144, 20, (1, 5, 7)),
}
X86 = {"avx2": ("-mno-avx512f", "-mno-avxvnni"), "portable": ("-mno-avx2", "-mno-fma")}


#: the input and output transforms B^T and A^T by tile side (the kernel's, spelled out in tl_host_wino.h)
BT = {2: [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
      4: [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0],
          [0, 4, 0, -5, 0, 1]]}
AT = {2: [[1, 1, 1, 0], [0, 1, -1, -1]], 4: [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
                                          [0, 1, -1, 8, -8, 1]]}


@pytest.mark.parametrize("tile", [2, 4])
def test_the_transformed_filters_give_the_direct_convolution(tile):
    """A patch by a filter through U = G g G^T, B^T d B and A^T (.) A: the tile's direct outputs."""
    rng = np.random.default_rng(1)
    side = tile + 2
    w = rng.standard_normal((5, 3, 3, 4))
    d = rng.standard_normal((side, side, 4))
    bt, at = np.array(BT[tile], np.float64), np.array(AT[tile], np.float64)
    u = transform_filters(w, tile).reshape(side, side, 4, 5)
    v = np.einsum("ai,ijc,bj->abc", bt, d, bt)
    y = np.einsum("pa,abo,qb->pqo", at, np.einsum("abc,abco->abo", v, u), at)
    direct = np.array([[[np.sum(d[i:i + 3, j:j + 3] * w[o]) for o in range(5)] for j in range(tile)]
                       for i in range(tile)])
    np.testing.assert_allclose(y, direct, rtol=1e-12, atol=1e-12)
    packed = pack(transform_filters(w, tile)).reshape(side * side, 4, 16)
    assert packed.dtype == np.float32
    np.testing.assert_array_equal(packed[:, :, :5], u.reshape(side * side, 4, 5).astype(np.float32))
    np.testing.assert_array_equal(packed[:, :, 5:], 0)


@pytest.mark.parametrize("shape, window, taken", [
    ((16, 3, 3, 16), SAME, True),
    ((16, 3, 3, 15), SAME, False),  # too few input channels
    ((15, 3, 3, 16), SAME, False),  # too few filters
    ((16, 3, 3, 16), Window2D("SAME", 2, 2), False),
    ((16, 3, 3, 16), Window2D("SAME", 1, 1, 2, 2), False),
    ((16, 3, 5, 16), SAME, False),
])
def test_which_layers_take_winograd(shape, window, taken):
    filters, k_h, k_w, channels = shape
    g = GraphBuilder()
    x = g.input("x", "f32", (1, 6, 6, channels))
    w = g.const("w", np.zeros(shape), "f32")
    model = g.outputs(g.conv("y", [x, w], window, None, "RELU"))
    assert ("tl_wino_f32(" in generate(model, name="wino_takes").source) == taken
    assert "tl_wino" not in generate(model, name="wino_mcu", target=find_target("cortex-m4")).source


def test_deep_inputs_keep_the_direct_gemm():
    """ResNet50's 7x7x512 layers: a strip of 128 KiB holds 3 tiles of 512 channels, too few; 4x4
    tiles up to 135 channels (two micro-kernel tiles in 256 KiB), 2x2 from 136."""
    window = SAME.core((3, 3))
    assert most_tiles(512) < 6
    assert [tile_side(c) for c in (16, 64, 128, 135, 136, 256)] == [4, 4, 4, 4, 2, 2]
    assert not takes(DatumType.F32, (512, 3, 3, 512), window, 1, 1)
    assert takes(DatumType.F32, (256, 3, 3, 256), window, 1, 1)
    assert not takes(DatumType.F32, (256, 3, 3, 256), window, -1, 1)


@pytest.mark.skipif(not shutil.which("gcc"), reason="no gcc")
@pytest.mark.parametrize("isa", sorted(X86))
@pytest.mark.parametrize("case", sorted(MODELS))
def test_winograd_matches_the_interpreter(case, isa, compile_cache):
    needs_cc()
    if isa == "avx2" and not _cpu_has("avx2"):
        pytest.skip("this CPU lacks AVX2")
    model = MODELS[case]().into_optimized()
    source = generate(model, name=f"wino_{case}", optimize=False)
    assert source.source.count("tl_wino_f32(") == 1
    assert ("_pitched(" in source.source) == (case == "concat")  # the 1x1 of the Concat's other half
    assert_isa_build_matches(model, source, isa, compile_cache, case, nonnegative=True)


@pytest.mark.parametrize("channels, filters, shape, tile", [(32, 48, (1, 45, 47), 4), (144, 32, (1, 21, 23), 2)])
def test_winograd_with_signed_values_and_two_threads(channels, filters, shape, tile, compile_cache):
    """Signed inputs and weights (sums of about unit size that cancel), within 1e-5 of the output's
    scale of the interpreter, split across two threads with one thread's outputs bit for bit
    (144 tiles in strips of 36; 132 in strips of 12)."""
    needs_cc()
    model = wino_conv(channels, filters, shape, activation="NONE", signed=True).into_optimized()
    source = generate(model, name=f"wino_threads_{tile}", optimize=False)
    assert f", {tile}, " in next(line for line in source.source.splitlines() if "tl_wino_f32(" in line)
    compiled = CompiledModel(source, build_shared_library(source.files, source.name, cache_dir=compile_cache), model)
    inputs = [random_input(fact, RNG) for fact in model.input_facts]
    compiled.set_threads(1)
    (single,) = compiled.run(list(inputs))
    (expected,) = model.run(list(inputs))
    np.testing.assert_allclose(single, expected, rtol=1e-5, atol=1e-5 * float(np.abs(expected).max()))
    compiled.set_threads(2)
    np.testing.assert_array_equal(compiled.run(list(inputs))[0], single)


def test_generated_winograd_code_builds_without_warnings(tmp_path):
    source = generate(MODELS["same_odd"](), name="wino_warnings")
    assert_builds_without_warnings(source, tmp_path)
    assert_builds_without_warnings(source, tmp_path / "avx2", extra_flags=("-march=haswell",))


@pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")),
                    reason="no AArch64 cross compiler or qemu-aarch64 (make toolchains)")
@pytest.mark.parametrize("case", ["same_odd", "deep_f2"])
def test_winograd_neon_under_qemu_matches_the_interpreter(case, tmp_path):
    model = MODELS[case]().into_optimized()
    source = generate(model, name="wino_neon", optimize=False)
    inputs = run_inputs(model, 1, nonnegative=True)[0]
    assert_matches(model, [aarch64_output(model, source, inputs, tmp_path)], inputs, f"{case} on AArch64")
