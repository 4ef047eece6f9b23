"""ONNX training optimisers (domain ai.onnx.preview.training): Adagrad, Momentum, Adam."""
from __future__ import annotations

from ....ops.training import Adagrad, Adam, Momentum, Optimizer
from ..registry import OnnxNode, onnx_op

DOMAIN = "ai.onnx.preview.training"


def _count(node: OnnxNode, cls: type[Optimizer]) -> int:
    """The number of optimised tensors, from the inputs (R, T, then X, G and the states of each)."""
    groups = 2 + len(cls.states)
    tensors, rest = divmod(node.input_count - 2, groups)
    if tensors < 1 or rest or not all(node.present(i) for i in range(node.input_count)):
        raise node.error(f"needs R, T, then X, G, {', '.join(cls.states)} per optimised tensor "
                         f"({groups} groups of equal length), got {node.input_count} inputs")
    if len(node.outputs) != tensors * (groups - 1):
        raise node.error(f"optimising {tensors} tensor(s) gives {tensors * (groups - 1)} outputs, "
                         f"the node has {len(node.outputs)}")
    return tensors


@onnx_op("Adagrad", since=1, domain=DOMAIN)
def adagrad(node: OnnxNode):
    return Adagrad(_count(node, Adagrad), node.float("norm_coefficient", 0.0), node.float("decay_factor", 0.0),
                   node.float("epsilon", 1e-6))


@onnx_op("Momentum", since=1, domain=DOMAIN)
def momentum(node: OnnxNode):
    mode = node.string("mode")
    if mode not in ("standard", "nesterov"):
        raise node.error(f"mode must be 'standard' or 'nesterov', got {mode!r}")
    return Momentum(_count(node, Momentum), node.float("alpha"), node.float("beta"), node.float("norm_coefficient"),
                    mode == "nesterov")


@onnx_op("Adam", since=1, domain=DOMAIN)
def adam(node: OnnxNode):
    return Adam(_count(node, Adam), node.float("alpha", 0.9), node.float("beta", 0.999),
                node.float("epsilon", 1e-6), node.float("norm_coefficient", 0.0),
                node.float("norm_coefficient_post", 0.0))
