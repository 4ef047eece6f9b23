"""Expansion of ONNX functions (model-local, or schema function bodies) into their nodes."""
from __future__ import annotations

from ...errors import UnsupportedOpError


def expand_function(builder, node) -> None:
    """Wire the body of the function ``node`` calls; raise if there is none."""
    raise UnsupportedOpError(f"{node!r}: {node.domain or 'ai.onnx'}::{node.op_type} (opset {node.opset}) "
                             "is not supported")
