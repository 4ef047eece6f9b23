"""The compile-time layout choice: ONNX's float NCHW convolutions and pools reach the NHWC kernels
(``compile/layout.py`` over ``passes/layout.py``), with transposes left only at the graph's edges,
also when streamed; the quantized ONNX islands join through the same mechanism."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile import generate, prepare
from tractile.ops.array import Transpose
from tractile.ops.conv import Conv
from tractile.ops.pool import AveragePool, MaxPool
from tractile.ops.stream import EdgeAveragePool

from ..quantized_onnx import quantize
from .harness import check_against_interpreter, needs_cc


def _model(nodes, inits, shape, name):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def _conv(rng, nodes, inits, name, source, cin, cout, rank, group=1, dilation=1, kernel=3, relu=True, pads=None):
    w = (rng.standard_normal((cout, cin // group, *[kernel] * rank)) / np.sqrt(cin * kernel)).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"{name}.w"),
              numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), f"{name}.b")]
    pads = [dilation * (kernel // 2)] * 2 * rank if pads is None else pads
    out = f"{name}.c" if relu else name
    nodes.append(helper.make_node("Conv", [source, f"{name}.w", f"{name}.b"], [out], group=group,
                                  dilations=[dilation] * rank, pads=pads))
    if relu:
        nodes.append(helper.make_node("Relu", [out], [name]))
    return name


def cnn_2d():
    """conv -> max pool -> depthwise conv + residual, a broadcast constant add -> average pool counting
    its padding -> concat with a 1x1 conv -> global average pool."""
    rng = np.random.default_rng(3)
    nodes, inits = [], []
    x = _conv(rng, nodes, inits, "c1", "x", 3, 8, 2)
    nodes.append(helper.make_node("MaxPool", [x], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    dw = _conv(rng, nodes, inits, "dw", "p1", 8, 8, 2, group=8, relu=False)
    inits.append(numpy_helper.from_array(rng.standard_normal((8, 1, 1)).astype(np.float32), "shift"))
    nodes += [helper.make_node("Add", [dw, "p1"], ["res"]), helper.make_node("Add", ["res", "shift"], ["moved"]),
              helper.make_node("AveragePool", ["moved"], ["p2"], kernel_shape=[3, 3], strides=[1, 1],
                               pads=[1, 1, 1, 1], count_include_pad=1)]
    pw = _conv(rng, nodes, inits, "pw", "p2", 8, 4, 2, kernel=1)
    nodes += [helper.make_node("Concat", ["p2", pw], ["cat"], axis=1),
              helper.make_node("GlobalAveragePool", ["cat"], ["y"])]
    return _model(nodes, inits, [1, 3, 12, 10], "cnn2d")


def tcn_1d():
    """A 1-D conv stack: dilated and grouped convolutions, a max pool, a skip concat."""
    rng = np.random.default_rng(4)
    nodes, inits = [], []
    x = _conv(rng, nodes, inits, "c1", "x", 6, 8, 1)
    x = _conv(rng, nodes, inits, "c2", x, 8, 8, 1, group=2, dilation=2)
    nodes += [helper.make_node("Concat", ["c1", x], ["cat"], axis=1),
              helper.make_node("MaxPool", ["cat"], ["p"], kernel_shape=[2], strides=[2])]
    _conv(rng, nodes, inits, "y", "p", 16, 5, 1, kernel=1, relu=False)
    return _model(nodes, inits, [1, 6, 30], "tcn1d")


def _layouts(model) -> tuple[list[str], int]:
    """The data formats of the prepared model's convolutions and pools, and its Transpose count."""
    formats = []
    for node in model.nodes:
        op = node.op.pool if isinstance(node.op, EdgeAveragePool) else node.op
        if isinstance(op, (Conv, MaxPool, AveragePool)):
            formats.append(op.data_format)
    return formats, sum(isinstance(node.op, Transpose) for node in model.nodes)


@pytest.mark.parametrize("build", [cnn_2d, tcn_1d])
def test_nchw_models_run_nhwc_with_transposes_only_at_the_edges(build, compile_cache):
    model = build()
    prepared = prepare(model)
    formats, transposes = _layouts(prepared)
    assert formats and set(formats) == {"NHWC"}
    assert transposes == (1 if build is cnn_2d else 2)  # 2-D: in (the global pool's exit reshapes); 1-D: in, out
    # the entrance copied by the host's NCHW -> NHWC kernel (three channels interleaved; six in blocks)
    assert "tl_nchw_to_nhwc_u32(" in generate(model, name=build.__name__).source
    check_against_interpreter(model, compile_cache, runs=2, rtol=1e-5, atol=1e-5, name=build.__name__)


@pytest.mark.parametrize("rank,count_include_pad", [(1, 0), (2, 0), (2, 1)])
def test_streamed_pools_compile_channels_last(rank, count_include_pad, compile_cache):
    """A pulsed NCHW conv and average pool padded along time (and frequency), compiled NHWC: the
    Delays move into the NHWC stretch, an EdgeAveragePool (not counting the padding) keeps its
    rescaling, and pushed frames equal the interpreted stream's."""
    needs_cc()
    rng = np.random.default_rng(11)
    nodes, inits = [], []
    pads = [2, 0] if rank == 1 else [1, 2, 1, 0]
    x = _conv(rng, nodes, inits, "c", "x", 4, 6, rank, pads=pads)
    nodes.append(helper.make_node("AveragePool", [x], ["y"], kernel_shape=[3] * rank, strides=[1] * rank, pads=pads,
                                  count_include_pad=count_include_pad))
    model = _model(nodes, inits, [1, 4, "T"] if rank == 1 else [1, 4, 5, "T"], f"edge{rank}")
    pulsed = model.pulse("T", 2)
    prepared = prepare(pulsed.model)
    formats, transposes = _layouts(prepared)
    assert set(formats) == {"NHWC"} and transposes == 2
    assert any(isinstance(node.op, EdgeAveragePool) for node in prepared.nodes) == (not count_include_pad)
    compiled = pulsed.compile(name=f"edge_pool{rank}{count_include_pad}", cache_dir=compile_cache)
    frames = rng.standard_normal((1, 4, 20) if rank == 1 else (1, 4, 5, 20)).astype(np.float32)
    interpreted = pulsed.start()
    for t in range(0, 20, 2):
        chunk = frames[..., t:t + 2]
        np.testing.assert_allclose(compiled.run([chunk])[0], interpreted.push([chunk])[0], rtol=1e-5, atol=1e-5)


def test_quantized_onnx_islands_join_through_the_same_mechanism(tmp_path):
    """onnxruntime's QDQ model of the small CNN: its quantized convolutions and pools sit in one
    NHWC stretch after declutter, with one Transpose left (the input's)."""
    model = tractile.load(str(quantize(tmp_path, "qdq"))).into_optimized()
    formats, transposes = _layouts(model)
    assert formats and set(formats) == {"NHWC"}
    assert transposes == 1


def crnn_head(reader: str):
    """conv -> max pool (NHWC when compiled) -> flatten of channels and height -> transpose to
    time-major, read by a GRU, a MatMul, or the model's output (nothing summing over the features)."""
    rng = np.random.default_rng(5)
    nodes, inits = [], []
    x = _conv(rng, nodes, inits, "c1", "x", 2, 6, 2)
    inits.append(numpy_helper.from_array(np.asarray([1, 6 * 2, 7], np.int64), "flat"))
    nodes += [helper.make_node("MaxPool", [x], ["p"], kernel_shape=[2, 1], strides=[2, 1]),
              helper.make_node("Reshape", ["p", "flat"], ["f"]),
              helper.make_node("Transpose", ["f"], ["t" if reader else "y"], perm=[2, 0, 1])]  # 7 steps, 12 features
    if reader == "gru":
        hidden = 5
        for name, shape in (("W", (2, 3 * hidden, 12)), ("R", (2, 3 * hidden, hidden)), ("B", (2, 6 * hidden))):
            inits.append(numpy_helper.from_array((rng.standard_normal(shape) / 3).astype(np.float32), name))
        nodes.append(helper.make_node("GRU", ["t", "W", "R", "B"], ["y"], hidden_size=hidden,
                                      direction="bidirectional"))
    elif reader == "matmul":
        inits.append(numpy_helper.from_array(rng.standard_normal((12, 3)).astype(np.float32), "m"))
        nodes.append(helper.make_node("MatMul", ["t", "m"], ["y"]))
    return _model(nodes, inits, [1, 2, 4, 7], f"crnn_{reader or 'output'}")


@pytest.mark.parametrize("reader", ["gru", ""])  # a MatMul reading: tests/unit/test_passes.py
def test_layout_exit_flatten_and_transpose_are_one_copy(reader, compile_cache):
    """The NHWC exit after the pool, the flatten and the transpose to time-major compose into one
    Transpose (``passes/compose_layout.py``); before a product over the features, the features keep
    the NHWC order (channels innermost: whole pixels copied) and the weights are permuted instead."""
    model = crnn_head(reader)
    prepared = prepare(model)
    perms = [node.op.perm for node in prepared.nodes if isinstance(node.op, Transpose)]
    assert len(perms) == 2  # the input's entrance, and the one copy left of the three steps after the pool
    # the pooled NHWC tensor (h 2, w 7, c 6) to (w, c, h), w and c merged; with a product after it, to (w, h, c)
    assert perms[1] == ((1, 0, 2) if reader else (1, 0))
    name = f"crnn_{reader or 'output'}"
    cm = check_against_interpreter(model, compile_cache, runs=2, rtol=1e-5, atol=1e-5, name=name)
    source = cm.source.files[f"{name}.c"]  # two copies; the entrance by the host's NCHW -> NHWC kernel
    assert source.count("tl_copy_blocks(") + source.count("tl_nchw_to_nhwc_u32(") == 2
    assert source.count("tl_nchw_to_nhwc_u32(") >= 1
