"""Hybrid (dynamic-range) CONV_2D and DEPTHWISE_CONV_2D built by hand: a float input, int8
weights. The core convolution runs LiteRT's hybrid arithmetic (per channel: images quantized
asymmetrically; per tensor: symmetrically), within 1e-5 of LiteRT's reference kernels, writes
back, and compiles to C equal to the interpreter (host; once on the emulated Cortex-M4). What
LiteRT's hybrid kernels compute wrongly (dilated CONV_2D, per-tensor depthwise weights) is
refused with the node named."""
from __future__ import annotations

import numpy as np
import pytest

from tests.compile.harness import check_against_interpreter
from tests.tflite.builder import GraphBuilder, Window2D, check_model, q, qc
from tractile.errors import TractileError
from tractile.ops.conv import Conv
from tractile.ops.quantized.hybrid import HybridConv

RNG = np.random.default_rng(24)
SAME = Window2D()
SAME_STRIDE_W = Window2D("SAME", 1, 2)


def conv_model(scales: str = "channel", window: Window2D = SAME, activation: str = "RELU",
               shape=(2, 7, 6, 5)):
    """A hybrid CONV_2D of 8 filters 3 x 3; ``scales``: "channel" (distinct per-channel
    scales), "equal" (per channel, all equal: LiteRT's per-tensor kernel) or "tensor"."""
    g = GraphBuilder()
    x = g.input("x", "f32", shape)
    w_q = {"channel": qc(np.linspace(0.01, 0.03, 8), 0), "equal": qc(np.full(8, 0.02), 0), "tensor": q(0.02)}[scales]
    w = g.const("w", RNG.integers(-127, 128, (8, 3, 3, shape[3])), "i8", w_q)
    b = g.const("b", RNG.standard_normal(8).astype(np.float32))
    return g.outputs(g.conv("y", [x, w, b], window, activation=activation))


def depthwise_model(multiplier: int = 2, window: Window2D = SAME_STRIDE_W, per_channel: bool = True,
                    activation: str = "RELU6"):
    g = GraphBuilder()
    x = g.input("x", "f32", (1, 8, 7, 3))
    units = 3 * multiplier
    w_q = qc(np.linspace(0.01, 0.03, units), 3) if per_channel else q(0.02)
    w = g.const("w", RNG.integers(-127, 128, (1, 3, 3, units)), "i8", w_q)
    b = g.const("b", RNG.standard_normal(units).astype(np.float32))
    return g.outputs(g.depthwise("y", [x, w, b], window, activation=activation))


def runs(model, count: int = 3):
    return [[(RNG.standard_normal(tuple(f.shape)) * 2 + 0.6 * k).astype(np.float32) for f in model.input_facts]
            for k in range(count)]


CASES = {
    "per_channel": lambda: conv_model(),
    "per_tensor_strided": lambda: conv_model("tensor", Window2D("SAME", 2, 2), "NONE"),
    "equal_scales_valid": lambda: conv_model("equal", Window2D("VALID", 1, 2), "RELU6"),
    "depthwise": lambda: depthwise_model(),
    "depthwise_dilated": lambda: depthwise_model(1, Window2D("SAME", 1, 1, 2, 2), activation="NONE"),
}

SYMMETRIC = ("per_tensor_strided", "equal_scales_valid")


@pytest.mark.parametrize("case", CASES)
def test_hybrid_convolution_matches_litert_and_compiles(case, compile_cache):
    model = CASES[case]()
    recipe = _recipe(model)
    assert isinstance(recipe, HybridConv)
    # LiteRT quantizes images symmetrically only for one (or one repeated) weight scale
    assert recipe.asymmetric == (case not in SYMMETRIC)
    inputs = runs(model)
    check_model(model, inputs)
    check_against_interpreter(model.into_optimized(), compile_cache, inputs=inputs, name=f"hybrid_{case}")


def _recipe(model):
    node = next(n for n in model.nodes if isinstance(n.op, Conv))
    return node.op.prepared([model.outlet_fact(i) for i in node.inputs]).__dict__["recipe"]


@pytest.mark.parametrize("build,message", [
    (lambda: conv_model(window=Window2D("SAME", 1, 1, 2, 2)), "ignore dilations"),
    (lambda: depthwise_model(per_channel=False), "one weight scale per output channel"),
])
def test_what_litert_computes_wrongly_is_refused(build, message):
    with pytest.raises(TractileError, match=message) as error:
        build()
    assert '"y' in str(error.value)


def test_hybrid_convolutions_verify_on_the_cortex_m4(tmp_path):
    from tests.compile.test_targets import needs_board
    from tractile.compile.targets.verify import verify

    needs_board("cortex-m4")
    g = GraphBuilder()
    x = g.input("x", "f32", (1, 6, 5, 4))
    w = g.const("w", RNG.integers(-127, 128, (6, 3, 3, 4)), "i8", qc(np.linspace(0.01, 0.02, 6), 0))
    y = g.conv("c", [x, w, g.const("b", RNG.standard_normal(6).astype(np.float32))], Window2D(), activation="RELU")
    d = g.const("d", RNG.integers(-127, 128, (1, 3, 3, 6)), "i8", qc(np.linspace(0.02, 0.03, 6), 3))
    model = g.outputs(g.depthwise("dw", [y, d], Window2D("VALID", 2, 1)))
    report = verify(model.into_optimized(), "cortex-m4", runs=2, folder=tmp_path)
    assert report["verified"], report["first_difference"]


def test_hybrid_convolutions_are_neither_streamed_nor_computed_by_rows():
    """Each image is quantized whole: a stream's chunk or a band of rows would be quantized on
    its own range. Streaming is refused; row banding leaves the convolution whole."""
    import tractile
    from tractile.compile.bands import bandable
    from tractile.compile.rows import row_geometry
    from tractile.formats.tflite.writer import write_model

    data = write_model(conv_model(window=Window2D("VALID"), shape=(1, 9, 3, 5)))
    model = tractile.load(data, inputs=["1,T,3,5,f32"])
    with pytest.raises(TractileError, match="hybrid convolution quantizes each whole image"):
        model.pulse("T", 1)
    typed = conv_model(shape=(1, 7, 6, 5)).into_optimized()
    node = next(n for n in typed.nodes if isinstance(n.op, Conv))
    assert not bandable(typed, node) and row_geometry(typed, node) is None
