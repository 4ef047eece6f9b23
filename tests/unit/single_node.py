"""Single-node ONNX models for op tests: run them through tractile and onnxruntime."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

import tractile

from ..conftest import run_onnxruntime


def single_node(op_type: str, inputs: dict, outputs: int | list[str] = 1, opset: int = 18,
                constants: tuple[str, ...] = (), **attrs):
    """A model of one ``op_type`` node.

    ``inputs`` maps input names to example arrays (None for an omitted optional input);
    names in ``constants`` become initializers, the others graph inputs of the arrays'
    type and shape. Returns ``(model, feeds)`` where ``feeds`` lists the graph inputs' values.
    """
    names = [f"y{i}" for i in range(outputs)] if isinstance(outputs, int) else list(outputs)
    graph_inputs, initializers, feeds = [], [], []
    for name, array in inputs.items():
        if array is None:
            continue
        array = np.asarray(array)
        if name in constants:
            initializers.append(numpy_helper.from_array(array, name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(array.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, array.shape))
            feeds.append(array)
    node_inputs = ["" if array is None else name for name, array in inputs.items()]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    node = helper.make_node(op_type, node_inputs, names, **attrs)
    graph = helper.make_graph([node], "test", graph_inputs,
                              [helper.make_empty_tensor_value_info(n) for n in names], initializers)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return proto, feeds


def run_tractile(proto, feeds: list[np.ndarray]) -> list[np.ndarray]:
    """Load, optimize and run with fact checking on (every value is checked against its fact)."""
    typed = tractile.load(proto)
    return typed.plan().state(check_facts=True).run(list(feeds))


def check_node(op_type: str, inputs: dict, outputs: int = 1, opset: int = 18, constants: tuple[str, ...] = (),
               rtol: float = 1e-5, atol: float = 1e-6, **attrs) -> list[np.ndarray]:
    """Run one node through tractile and onnxruntime; assert equal shapes, dtypes and values."""
    proto, feeds = single_node(op_type, inputs, outputs, opset, constants, **attrs)
    got = run_tractile(proto, feeds)
    expected = run_onnxruntime(proto, feeds)
    assert len(got) == len(expected)
    for index, (g, e) in enumerate(zip(got, expected)):
        assert g.shape == e.shape, f"output {index}: shape {g.shape}, onnxruntime {e.shape}"
        assert g.dtype == e.dtype, f"output {index}: dtype {g.dtype}, onnxruntime {e.dtype}"
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {index}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"output {index}")
    return got


def run_node(op_type: str, inputs: dict, outputs: int = 1, opset: int = 18, constants: tuple[str, ...] = (),
             **attrs) -> list[np.ndarray]:
    """Run one node through tractile only (for opsets or cases onnxruntime lacks)."""
    proto, feeds = single_node(op_type, inputs, outputs, opset, constants, **attrs)
    return run_tractile(proto, feeds)


def typed_node(op_type: str, inputs: dict, outputs: int = 1, opset: int = 18, constants: tuple[str, ...] = (),
               **attrs):
    """The typed (not yet optimized) model of one node."""
    proto, _ = single_node(op_type, inputs, outputs, opset, constants, **attrs)
    return tractile.load(proto, optimize=False).into_typed()
