"""Compiled streaming: pulsed models lowered to C with ring buffers in the context."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile

from .harness import needs_cc


def delayed_mix_proto():
    """y = W @ concat(x[t], x[t-3]): a delay line feeding a product."""
    ints = lambda name, values: numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    weights = np.random.default_rng(0).standard_normal((1, 5, 8)).astype(np.float32)
    nodes = [helper.make_node("Pad", ["x", "p"], ["padded"], mode="constant"),
             helper.make_node("Slice", ["padded", "s", "e", "a"], ["late"]),
             helper.make_node("Concat", ["x", "late"], ["both"], axis=1),
             helper.make_node("MatMul", ["w", "both"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [ints("p", [0, 0, 3, 0, 0, 0]), ints("s", [0]), ints("e", [-3]), ints("a", [2]),
                               numpy_helper.from_array(weights, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def push_all(compiled, x: np.ndarray, pulse: int, axis: int = 2) -> np.ndarray:
    """Push whole chunks of ``x`` along ``axis``; the outputs concatenated, delay dropped."""
    chunks = [compiled.run([np.take(x, range(t, t + pulse), axis=axis)])[0]
              for t in range(0, x.shape[axis] - pulse + 1, pulse)]
    return np.concatenate(chunks, axis=axis)[:, :, compiled.delay:]


@pytest.mark.parametrize("pulse", [1, 2, 7, 16])
def test_pushed_chunks_equal_the_batch_model(pulse, compile_cache):
    needs_cc()
    model = tractile.load(delayed_mix_proto())
    compiled = model.pulse("T", pulse).compile(name=f"delayed{pulse}", cache_dir=compile_cache)
    assert f"#define DELAYED{pulse}_PULSE {pulse}" in compiled.source.header
    x = np.random.default_rng(pulse).standard_normal((1, 4, 64)).astype(np.float32)
    batch = model.run([x])[0]
    got = push_all(compiled, x, pulse)
    np.testing.assert_allclose(got, batch[:, :, :got.shape[2]], rtol=1e-5, atol=1e-6)
    assert compiled.report["state_bytes"] >= 4 * 3 * 4
    compiled.reset()
    again = push_all(compiled, x, pulse)
    np.testing.assert_array_equal(again, got)


def test_streams_are_independent_contexts(compile_cache):
    needs_cc()
    compiled = tractile.load(delayed_mix_proto()).pulse("T", 1).compile(name="delayed_ctx", cache_dir=compile_cache)
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((1, 4, 20)).astype(np.float32) for _ in range(2))
    first, second = compiled.state(), compiled.state()
    interleaved_a, interleaved_b = [], []
    for t in range(20):
        interleaved_a.append(first.run([a[:, :, t:t + 1]])[0])
        interleaved_b.append(second.run([b[:, :, t:t + 1]])[0])
    alone = compiled.state()
    alone_b = [alone.run([b[:, :, t:t + 1]])[0] for t in range(20)]
    np.testing.assert_array_equal(np.concatenate(interleaved_b, 2), np.concatenate(alone_b, 2))


def test_cli_streams_compiled_and_compiles_pulsed(tmp_path, capsys):
    needs_cc()
    import onnx

    from tractile.cli.main import main as cli_main

    path = tmp_path / "delayed.onnx"
    onnx.save(delayed_mix_proto(), path)
    assert cli_main(["stream", str(path), "--pulse", "4", "--compiled", "--check", "--length", "30"]) == 0
    printed = capsys.readouterr().out
    assert "the compiled stream matches the batch model" in printed and "ring buffers" in printed
    assert cli_main(["compile", str(path), "-i", "1,4,T,f32", "--pulse", "3", "-o", str(tmp_path / "c")]) == 0
    header = (tmp_path / "c" / "delayed.h").read_text()
    assert "#define DELAYED_PULSE 3" in header and "#define DELAYED_INPUT0_SHAPE {1, 4, 3}" in header


def tcn_proto(strided: bool):
    """Dilated causal convolutions with a residual branch (and a stride-2 convolution)."""
    rng = np.random.default_rng(3)
    weights, nodes = [], []

    def conv(name, source, cin, cout, kernel, dilation=1, stride=1, pads=None):
        weights.append(numpy_helper.from_array((rng.standard_normal((cout, cin, kernel)) / 3).astype(np.float32),
                                               f"{name}.w"))
        weights.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), f"{name}.b"))
        nodes.append(helper.make_node("Conv", [source, f"{name}.w", f"{name}.b"], [name], dilations=[dilation],
                                      strides=[stride], pads=pads or [(kernel - 1) * dilation, 0]))
        return name

    h = conv("inp", "x", 5, 8, 1)
    y = conv("c1", h, 8, 8, 3, 2)
    nodes.append(helper.make_node("Relu", [y], ["r1"]))
    nodes.append(helper.make_node("Add", [h, "r1"], ["res"]))
    y = conv("c2", "res", 8, 8, 3, 4)
    nodes.append(helper.make_node("Tanh", [y], ["t2"]))
    last = conv("down", "t2", 8, 6, 4, 1, 2, [2, 0]) if strided else "t2"
    nodes.append(helper.make_node("Sigmoid", [last], ["y"]))
    graph = helper.make_graph(nodes, "tcn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("strided,pulse", [(False, 1), (False, 2), (False, 7), (False, 16), (True, 2), (True, 16)])
def test_compiled_tcn_pushes_equal_the_batch_model(strided, pulse, compile_cache):
    needs_cc()
    model = tractile.load(tcn_proto(strided))
    pulsed = model.pulse("T", pulse)
    compiled = pulsed.compile(name=f"tcn{int(strided)}p{pulse}", cache_dir=compile_cache)
    x = np.random.default_rng(pulse).standard_normal((1, 5, 96)).astype(np.float32)
    batch = model.run([x])[0]
    starts = range(0, 96 - pulse + 1, pulse)
    chunks = [compiled.run([x[:, :, t:t + pulse]])[0] for t in starts]
    got = np.concatenate(chunks, axis=2)[:, :, compiled.delay:]
    assert got.shape[2] > 80 // (4 if strided else 2)
    np.testing.assert_allclose(got, batch[:, :, :got.shape[2]], rtol=1e-5, atol=1e-5)
    interpreted = pulsed.start()
    pushed = np.concatenate([interpreted.push([x[:, :, t:t + pulse]])[0] for t in starts], axis=2)
    np.testing.assert_allclose(np.concatenate(chunks, axis=2), pushed, rtol=1e-5, atol=1e-5)
    assert compiled.report["state_bytes"] > 0


@pytest.mark.parametrize("pulse", [2, 4, 16])
@pytest.mark.parametrize("pool", ["MaxPool", "AveragePool"])
def test_compiled_pooling_along_time(pool, pulse, compile_cache):
    needs_cc()
    rng = np.random.default_rng(9)
    w = numpy_helper.from_array(rng.standard_normal((6, 4, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[2, 0]),
             helper.make_node(pool, ["c"], ["y"], kernel_shape=[3], strides=[2], pads=[2, 0])]
    graph = helper.make_graph(nodes, "pooled", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    compiled = model.pulse("T", pulse).compile(name=f"pool{pool[0]}{pulse}", cache_dir=compile_cache)
    x = rng.standard_normal((1, 4, 64)).astype(np.float32)
    chunks = [compiled.run([x[:, :, t:t + pulse]])[0] for t in range(0, 64, pulse)]
    got = np.concatenate(chunks, axis=2)[:, :, compiled.delay:]
    batch = model.run([x])[0]
    assert got.shape[2] >= 24
    np.testing.assert_allclose(got, batch[:, :, :got.shape[2]], rtol=1e-5, atol=1e-6)
