"""ONNX models the benchmarks build for themselves (fixed random weights)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def _tensor(array: np.ndarray, name: str):
    return numpy_helper.from_array(array, name)


def mlp():
    """The 1 -> 16 -> 16 -> 1 sine-style MLP (ReLU), batch 1."""
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(s).astype(np.float32) for s in [(1, 16), (16,), (16, 16), (16,), (16, 1), (1,)]]
    names = ["w1", "b1", "w2", "b2", "w3", "b3"]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
        helper.make_node("Gemm", ["r1", "w2", "b2"], ["h2"]), helper.make_node("Relu", ["h2"], ["r2"]),
        helper.make_node("Gemm", ["r2", "w3", "b3"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])],
                              [_tensor(w, n) for w, n in zip(weights, names)])
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8), [np.array([[0.5]], np.float32)]


def lstm(hidden: int = 128, steps: int = 100, inputs: int = 128):
    """One forward LSTM layer, batch 1, returning the whole sequence."""
    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(hidden)
    w = (rng.standard_normal((1, 4 * hidden, inputs)) * scale).astype(np.float32)
    r = (rng.standard_normal((1, 4 * hidden, hidden)) * scale).astype(np.float32)
    b = (rng.standard_normal((1, 8 * hidden)) * scale).astype(np.float32)
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y"], hidden_size=hidden)
    graph = helper.make_graph([node], "lstm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, 1, inputs])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [steps, 1, 1, hidden])],
                              [_tensor(w, "w"), _tensor(r, "r"), _tensor(b, "b")])
    x = rng.standard_normal((steps, 1, inputs)).astype(np.float32)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8), [x]


def gru(hidden: int = 128, steps: int = 100, inputs: int = 128):
    """One forward GRU layer (linear_before_reset, as PyTorch exports it), batch 1."""
    rng = np.random.default_rng(3)
    scale = 1 / np.sqrt(hidden)
    w = (rng.standard_normal((1, 3 * hidden, inputs)) * scale).astype(np.float32)
    r = (rng.standard_normal((1, 3 * hidden, hidden)) * scale).astype(np.float32)
    b = (rng.standard_normal((1, 6 * hidden)) * scale).astype(np.float32)
    node = helper.make_node("GRU", ["x", "w", "r", "b"], ["y"], hidden_size=hidden, linear_before_reset=1)
    graph = helper.make_graph([node], "gru",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, 1, inputs])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [steps, 1, 1, hidden])],
                              [_tensor(w, "w"), _tensor(r, "r"), _tensor(b, "b")])
    x = rng.standard_normal((steps, 1, inputs)).astype(np.float32)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8), [x]


def loop_model(iterations: int = 50, size: int = 64):
    """A Loop whose body applies a dense layer to a carried state ``iterations`` times."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["state_in", "w"], ["mm"]), helper.make_node("Tanh", ["mm"], ["state_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("state_in", TensorProto.FLOAT, [1, size])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("state_out", TensorProto.FLOAT, [1, size])])
    loop = helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body)
    graph = helper.make_graph([loop], "loop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])],
                              [_tensor(np.array(iterations, np.int64), "trip"), _tensor(np.array(True), "cond"),
                               _tensor(w, "w")])
    x = rng.standard_normal((1, size)).astype(np.float32)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8), [x]


def tcn(features: int = 40, channels: int = 64, layers: int = 8, seed: int = 0):
    """A causal dilated TCN over ``[1, features, T]`` (T symbolic): a 1×1 input projection,
    ``layers`` residual blocks (kernel 3, dilation 2**i, ReLU, 1×1 mix), a 1×1 head to 8."""
    rng = np.random.default_rng(seed)
    nodes, weights = [], []

    def conv(name, source, cin, cout, kernel, dilation=1):
        w = (rng.standard_normal((cout, cin, kernel)) / np.sqrt(cin * kernel)).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        weights.extend([_tensor(w, f"{name}.w"), _tensor(b, f"{name}.b")])
        nodes.append(helper.make_node("Conv", [source, f"{name}.w", f"{name}.b"], [name], kernel_shape=[kernel],
                                      dilations=[dilation], pads=[(kernel - 1) * dilation, 0]))
        return name

    h = conv("input", "x", features, channels, 1)
    for layer in range(layers):
        y = conv(f"conv{layer}", h, channels, channels, 3, 2 ** layer)
        nodes.append(helper.make_node("Relu", [y], [f"relu{layer}"]))
        mixed = conv(f"mix{layer}", f"relu{layer}", channels, channels, 1)
        nodes.append(helper.make_node("Add", [h, mixed], [f"res{layer}"]))
        h = f"res{layer}"
    conv("y", h, channels, 8, 1)
    graph = helper.make_graph(nodes, "tcn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, features, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, "T"])], weights)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)


def lstm2(hidden: int = 128, steps: int = 100, inputs: int = 128):
    """Two stacked forward LSTM layers of ``hidden`` units, batch 1."""
    rng = np.random.default_rng(1)
    scale = 1 / np.sqrt(hidden)
    nodes, initializers = [], []
    source = "x"
    for layer in range(2):
        depth = inputs if layer == 0 else hidden
        for name, shape in (("w", (1, 4 * hidden, depth)), ("r", (1, 4 * hidden, hidden)), ("b", (1, 8 * hidden))):
            initializers.append(_tensor((rng.standard_normal(shape) * scale).astype(np.float32), f"{name}{layer}"))
        nodes.append(helper.make_node("LSTM", [source, f"w{layer}", f"r{layer}", f"b{layer}"], [f"y{layer}"],
                                      hidden_size=hidden))
        nodes.append(helper.make_node("Squeeze", [f"y{layer}", "one"], [f"s{layer}"]))
        source = f"s{layer}"
    initializers.append(_tensor(np.array([1], np.int64), "one"))
    graph = helper.make_graph(nodes, "lstm2",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, 1, inputs])],
                              [helper.make_tensor_value_info("s1", TensorProto.FLOAT, [steps, 1, hidden])],
                              initializers)
    x = rng.standard_normal((steps, 1, inputs)).astype(np.float32)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8), [x]


def mobilenet_like(size: int = 224, classes: int = 10):
    """A MobileNet-style CNN: a strided 3x3 stem, six depthwise-separable blocks (depthwise 3x3 +
    ReLU, pointwise 1x1 + ReLU), global average pooling and a dense classifier."""
    rng = np.random.default_rng(2)
    nodes, initializers = [], []

    def conv(name, source, cin, cout, kernel, stride, group=1):
        w = (rng.standard_normal((cout, cin // group, kernel, kernel)) / np.sqrt(cin // group * kernel * kernel))
        initializers.append(_tensor(w.astype(np.float32), f"{name}.w"))
        initializers.append(_tensor(np.zeros(cout, np.float32), f"{name}.b"))
        pad = kernel // 2
        nodes.append(helper.make_node("Conv", [source, f"{name}.w", f"{name}.b"], [f"{name}.c"], group=group,
                                      strides=[stride, stride], pads=[pad] * 4, kernel_shape=[kernel, kernel]))
        nodes.append(helper.make_node("Relu", [f"{name}.c"], [name]))
        return name

    x = conv("stem", "x", 3, 32, 3, 2)
    channels = 32
    for index, (out, stride) in enumerate(((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2))):
        x = conv(f"dw{index}", x, channels, channels, 3, stride, group=channels)
        x = conv(f"pw{index}", x, channels, out, 1, 1)
        channels = out
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"]))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"]))
    initializers.append(_tensor((rng.standard_normal((channels, classes)) / np.sqrt(channels)).astype(np.float32),
                                "fc.w"))
    initializers.append(_tensor(np.zeros(classes, np.float32), "fc.b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"]))
    graph = helper.make_graph(nodes, "mobilenet_like",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])],
                              initializers)
    x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8), [x]
