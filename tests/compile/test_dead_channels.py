"""Dead-channel elimination (passes/dead_channels.py): int8 layers with all-zero output channels in
various positions; the rewritten model equals the original bit for bit in the interpreter, the
compiled model equals the original's interpreter, and the arena and constants shrink."""
from __future__ import annotations

import numpy as np
import pytest

from tractile.compile import generate
from tractile.compile.report import summary_lines
from tractile.passes.dead_channels import drop_dead_channels, keep_dead_channels

from ..tflite.builder import GraphBuilder, Window2D, q, qc
from .harness import check_against_interpreter, random_input

IN_Q, MID_Q, OUT_Q = q(0.05, -3), q(0.08, -128), q(0.1, 7)
SAME, VALID = Window2D("SAME"), Window2D("VALID")


def _weights(rng, shape, dead=(), axis=0):
    """int8 weights, per-channel quantized along ``axis``, the channels in ``dead`` all zero."""
    w = rng.integers(-90, 91, shape).astype(np.int8)
    w[(slice(None),) * axis + (list(dead),)] = 0
    scales = [0.01 + 0.001 * i for i in range(shape[axis])]
    return w, qc(scales, axis)


def _layer(g, rng, name, x, in_q, out_channels, kernel=1, dead=(), biases=None, window=SAME, out_q=MID_Q,
           activation="RELU", depthwise=False):
    """A TFLite CONV_2D (or DEPTHWISE_CONV_2D) with int32 bias and the given dead channels."""
    in_channels = int(g.model.outlet_fact(x).shape[3])
    shape = (1, kernel, kernel, in_channels) if depthwise else (out_channels, kernel, kernel, in_channels)
    w, w_q = _weights(rng, shape, dead, 3 if depthwise else 0)
    bias = rng.integers(-2000, 2000, out_channels) if biases is None else np.asarray(biases)
    b_q = qc([in_q.scale[0] * s for s in w_q.scale], 0)
    inputs = [x, g.const(f"{name}.w", w, None, w_q), g.const(f"{name}.b", bias, "i32", b_q)]
    build = g.depthwise if depthwise else g.conv
    return build(name, inputs, window, out_q, activation)


def _dense(g, rng, name, x, in_q, units, dead_columns=()):
    depth = 1
    for dim in g.model.outlet_fact(x).shape[1:]:
        depth *= int(dim)
    w = rng.integers(-90, 91, (units, depth)).astype(np.int8)
    w[:, list(dead_columns)] = 0
    b_q = q(in_q.scale[0] * 0.01)
    return g.dense(name, x, g.const(f"{name}.w", w, None, q(0.01)),
                   g.const(f"{name}.b", rng.integers(-3000, 3000, units), "i32", b_q), OUT_Q)


def pointwise_after_conv():
    """3x3 conv with three dead channels (bias negative: the constant is the zero point; positive:
    another value) -> pointwise conv."""
    g, rng = GraphBuilder(), np.random.default_rng(1)
    x = g.input("x", "i8", (1, 6, 7, 4), IN_Q)
    biases = [500, -300, 4000, 800, 1200, -900, 700, 2500]
    h = _layer(g, rng, "conv", x, IN_Q, 8, kernel=3, dead=(1, 2, 5), biases=biases)
    return g.outputs(_layer(g, rng, "pointwise", h, MID_Q, 5, out_q=OUT_Q, activation="NONE")), 3


def depthwise_chain():
    """pointwise (dead 0: constant = zero point; dead 3: a constant the depthwise padding changes at
    the borders, which must stay) -> depthwise 3x3 SAME (its own dead channel 5) -> pointwise."""
    g, rng = GraphBuilder(), np.random.default_rng(2)
    x = g.input("x", "i8", (1, 5, 6, 3), IN_Q)
    biases = [-800, 300, 200, 6000, 900, 100]
    h = _layer(g, rng, "expand", x, IN_Q, 6, dead=(0, 3), biases=biases)
    d = _layer(g, rng, "depthwise", h, MID_Q, 6, kernel=3, dead=(5,), depthwise=True, out_q=q(0.07, -128))
    y = _layer(g, rng, "project", d, q(0.07, -128), 4, out_q=OUT_Q, activation="NONE")
    return g.outputs(y), 4  # expand 0 and 5, depthwise 0 and 5


def dense_after_flatten():
    """conv with dead channels -> flatten (of H, W, C) -> dense: the dense loses those columns."""
    g, rng = GraphBuilder(), np.random.default_rng(3)
    x = g.input("x", "i8", (1, 7, 7, 2), IN_Q)
    h = _layer(g, rng, "conv", x, IN_Q, 6, kernel=3, window=Window2D("VALID", 2, 2), dead=(0, 4))
    return g.outputs(_dense(g, rng, "dense", h, MID_Q, 3)), 2


def pool_squeeze_dense():
    """pointwise with dead channels -> average pool over the whole map -> squeeze -> dense (vww's
    tail)."""
    from tractile.ops.shape import Squeeze

    g, rng = GraphBuilder(), np.random.default_rng(4)
    x = g.input("x", "i8", (1, 3, 3, 4), IN_Q)
    h = _layer(g, rng, "pointwise", x, IN_Q, 10, dead=(2, 3, 7))
    p = g.pool("pool", "average", h, Window2D("VALID", 3, 3), 3, 3, MID_Q)
    s = g.op("squeeze", Squeeze(), [p, g.const("axes", [1, 2], "i64")])
    return g.outputs(_dense(g, rng, "dense", s, MID_Q, 2)), 3


def requantize_and_activation():
    """conv with dead channels -> QUANTIZE (requantization) -> LEAKY_RELU (not fused) -> pointwise:
    element-wise ops carry the constants through."""
    from tractile.datum import DatumType
    from tractile.ops.quant import Quantize

    g, rng = GraphBuilder(), np.random.default_rng(7)
    x = g.input("x", "i8", (1, 5, 5, 3), IN_Q)
    h = _layer(g, rng, "conv", x, IN_Q, 6, kernel=3, dead=(0, 4), biases=[100, 900, -600, 3000, 5000, 40])
    r = g.op("requantize", Quantize(DatumType("i8"), q(0.12, 10)), [h])
    a = g.activation("leaky", "leaky_relu", r, q(0.1, -20), alpha=0.2)
    return g.outputs(_layer(g, rng, "pointwise", a, q(0.1, -20), 4, out_q=OUT_Q, activation="NONE")), 2


def dense_after_dense():
    """a dense layer's zero units stay (their constant depends on the requantization flavour)."""
    g, rng = GraphBuilder(), np.random.default_rng(8)
    x = g.input("x", "i8", (1, 12), IN_Q)
    w = rng.integers(-90, 91, (6, 12)).astype(np.int8)
    w[[1, 4]] = 0
    h = g.dense("first", x, g.const("first.w", w, None, q(0.01)),
                g.const("first.b", rng.integers(-3000, 3000, 6), "i32", q(IN_Q.scale[0] * 0.01)), MID_Q, "RELU")
    return g.outputs(_dense(g, rng, "second", h, MID_Q, 3)), 0


def residual_add():
    """conv with a dead channel -> pointwise and a residual ADD: the ADD keeps the channel."""
    g, rng = GraphBuilder(), np.random.default_rng(5)
    x = g.input("x", "i8", (1, 4, 4, 4), IN_Q)
    h = _layer(g, rng, "conv", x, IN_Q, 4, kernel=3, dead=(1,))
    p = _layer(g, rng, "pointwise", h, MID_Q, 4)
    return g.outputs(g.binary("add", "add", [h, p], OUT_Q)), 0


def output_layer():
    """the last layer's dead channel is a model output: it stays."""
    g, rng = GraphBuilder(), np.random.default_rng(6)
    x = g.input("x", "i8", (1, 4, 4, 3), IN_Q)
    h = _layer(g, rng, "conv", x, IN_Q, 6, kernel=3, dead=(2, 3))
    return g.outputs(_layer(g, rng, "last", h, MID_Q, 4, dead=(0,), out_q=OUT_Q, activation="NONE")), 2


CASES = [pointwise_after_conv, depthwise_chain, dense_after_flatten, pool_squeeze_dense, requantize_and_activation,
         dense_after_dense, residual_add, output_layer]


def _channels(model) -> int:
    return int(model.properties["dead_channels_removed"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_dead_channels_fold_exactly(case, compile_cache):
    model, expected = case()
    typed = model.into_optimized()
    folded = drop_dead_channels(typed)
    assert _channels(folded) == expected
    rng = np.random.default_rng(0)
    inputs = [[random_input(f, rng) for f in typed.input_facts] for _ in range(6)]
    inputs.append([np.full(tuple(int(d) for d in f.shape), -128, np.int8) for f in typed.input_facts])
    for values in inputs:
        for before, after in zip(typed.run(values), folded.run(values)):
            assert before.dtype == after.dtype and np.array_equal(before, after)
    cm = check_against_interpreter(typed, compile_cache, inputs=inputs, name=f"dead_{case.__name__}")
    assert cm.source.report["dead_channels_removed"] == expected
    if expected:
        kept = generate(keep_dead_channels(typed.compact()))
        assert kept.report["dead_channels_removed"] == 0
        assert cm.source.report["arena_bytes"] < kept.report["arena_bytes"]
        assert cm.source.report["constants_bytes"] < kept.report["constants_bytes"]
        assert any(f"{expected} constant channels removed" in line for line in summary_lines(cm.source.report))


def test_quantized_onnx_model(tmp_path, compile_cache):
    """An ONNX model with zero output channels quantized by onnxruntime (QDQ, per channel): its NHWC
    island loses the channels and still equals the interpreter (and so onnxruntime) bit for bit."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    from onnx import TensorProto, helper, numpy_helper

    import tractile

    rng = np.random.default_rng(7)
    shape = (1, 4, 6, 6)

    def init(name, dims, dead=()):
        value = (rng.standard_normal(dims) * 0.3).astype(np.float32)
        value[list(dead)] = 0
        return numpy_helper.from_array(value, name)

    inits = [init("w1", (8, 4, 3, 3), (2, 5)), numpy_helper.from_array(
        np.array([0.1, 0.2, -0.3, 0.1, 0.2, 0.4, 0.1, 0.1], np.float32), "b1"), init("w2", (6, 8, 1, 1)),
        init("b2", (6,))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]), helper.make_node("Conv", ["r1", "w2", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 6, 6])], inits)
    source, target = tmp_path / "f.onnx", tmp_path / "q.onnx"
    source.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                         ir_version=8).SerializeToString())

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter({"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(3))

        def get_next(self):
            return next(self.feeds, None)

    quantization.quantize_static(str(source), str(target), Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8, per_channel=True)
    typed = tractile.load(target).into_optimized()
    folded = drop_dead_channels(typed)
    assert _channels(folded) == 2
    inputs = [[rng.standard_normal(shape).astype(np.float32)] for _ in range(4)]
    for values in inputs:
        assert np.array_equal(typed.run(values)[0], folded.run(values)[0])
    check_against_interpreter(typed, compile_cache, inputs=inputs, name="dead_onnx", atol=0, rtol=0)


def test_cortex_m4_firmware_equals_the_original(tmp_path):
    """The depthwise chain built for the Cortex-M4 (QEMU): the firmware of the rewritten model,
    checked against the interpreter of the original; fewer instructions than without the pass."""
    from tractile.compile.targets.verify import build_source, verify_source, with_flavour

    from .test_targets import needs_board

    needs_board("cortex-m4")
    model, expected = depthwise_chain()
    typed = model.into_optimized()
    _, source, board = build_source(typed, "cortex-m4")
    assert source.report["dead_channels_removed"] == expected
    original = with_flavour(typed, board.target.flavour)
    report = verify_source(source, original, board, runs=3, folder=tmp_path / "after", opt="speed")
    assert report["verified"], report["first_difference"]
    _, kept, _ = build_source(keep_dead_channels(typed.compact()), "cortex-m4")
    baseline = verify_source(kept, original, board, runs=1, folder=tmp_path / "before", opt="speed")
    assert report["cycles_per_inference"] < baseline["cycles_per_inference"]
    assert report["flash_bytes"]["model"] < baseline["flash_bytes"]["model"]


def test_verify_checks_the_firmware_against_the_model_as_loaded(tmp_path, monkeypatch):
    """verify's oracle is the model as the user loaded it, not as compile rewrote it: a
    dead-channel pass that gets a folded bias wrong shows as a difference on the device."""
    from tractile.compile.targets.verify import verify
    from tractile.ops.io import Const
    from tractile.passes import dead_channels
    from tractile.passes.driver import run_passes
    from tractile.patch import ModelPatch

    from .test_targets import needs_board

    needs_board("cortex-m4")
    model, _ = depthwise_chain()
    honest = dead_channels.drop_dead_channels

    def corrupt(model, node):  # the same wrong bias however often compile prepares the model
        if not (isinstance(node.op, Const) and node.name.startswith("project.b")) or (node.op.value == 4321).all():
            return None
        return ModelPatch.replace_single_op(model, node, [], Const(np.full_like(node.op.value, 4321)))

    def wrong(model):
        return run_passes(honest(model), [("corrupt", corrupt)])

    monkeypatch.setattr(dead_channels, "drop_dead_channels", wrong)
    report = verify(model.into_optimized(), "cortex-m4", runs=2, opt="speed", folder=tmp_path)
    assert not report["verified"]
    assert report["first_difference"].startswith("run 0: output 0")
