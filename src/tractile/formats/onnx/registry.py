"""The ONNX op registry: ``@onnx_op("Conv", since=11)`` translation functions.

A translation function receives an :class:`OnnxNode` and returns a core op (wired
to the node's present inputs, in order) or a :class:`Translated` (the op plus an
explicit input list mixing node input indices and constant arrays). The loader
picks, per node, the registered version with the highest ``since`` not above the
model's opset for that domain.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import ModelFormatError

REGISTRY: dict[tuple[str, str], list[tuple[int, Callable]]] = {}

_REQUIRED = object()


def onnx_op(op_type: str, since: int = 1, domain: str = "") -> Callable:
    """Register a translation for ``op_type`` from opset ``since`` on."""

    def register(fn: Callable) -> Callable:
        versions = REGISTRY.setdefault((_domain(domain), op_type), [])
        versions.append((since, fn))
        versions.sort(key=lambda item: item[0])
        return fn

    return register


def _domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def lookup(domain: str, op_type: str, opset: int) -> Callable | None:
    """The translation to use for ``op_type`` at ``opset``, or None."""
    versions = REGISTRY.get((_domain(domain), op_type))
    if not versions:
        return None
    chosen = None
    for since, fn in versions:
        if since <= opset:
            chosen = fn
    return chosen


def supported_ops(domain: str = "") -> list[str]:
    return sorted(op for (dom, op) in REGISTRY if dom == _domain(domain))


@dataclass
class Translated:
    """An op with an explicit input list: ints index the node's inputs, arrays become constants."""

    op: Any
    inputs: list = field(default_factory=list)


class OnnxNode:
    """A NodeProto seen by a translation function: typed attribute access and context."""

    def __init__(self, proto, opset: int, context):
        self.proto = proto
        self.opset = opset
        self.context = context
        self.op_type = proto.op_type
        self.domain = _domain(proto.domain)
        self.name = proto.name or (proto.output[0] if proto.output else proto.op_type)
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self._attrs = {a.name: a for a in proto.attribute}

    def __repr__(self) -> str:
        return f'{self.op_type} node "{self.name}"'

    def error(self, message: str) -> ModelFormatError:
        return ModelFormatError(f'{self.op_type} node "{self.name}" (opset {self.opset}): {message}')

    # inputs -------------------------------------------------------------------------------
    def present(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] != ""

    @property
    def input_count(self) -> int:
        """Number of inputs up to the last present one."""
        count = len(self.inputs)
        while count and not self.inputs[count - 1]:
            count -= 1
        return count

    def output_wanted(self, index: int) -> bool:
        return index < len(self.outputs) and self.outputs[index] != ""

    # attributes -------------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default=_REQUIRED) -> Any:
        attribute = self._attrs.get(name)
        if attribute is None:
            if default is _REQUIRED:
                raise self.error(f"missing required attribute {name!r}")
            return default
        if attribute.ref_attr_name:
            raise self.error(f"attribute {name!r} refers to a function attribute outside a function")
        return self.context.attribute_value(attribute, self)

    def int(self, name: str, default=_REQUIRED) -> int:
        value = self.attr(name, default)
        if value is default:
            return value
        if not isinstance(value, (int, np.integer)):
            raise self.error(f"attribute {name!r} should be an int, got {value!r}")
        return int(value)

    def float(self, name: str, default=_REQUIRED) -> float:
        value = self.attr(name, default)
        if value is default:
            return value
        if not isinstance(value, (int, float, np.number)):
            raise self.error(f"attribute {name!r} should be a float, got {value!r}")
        return float(value)

    def ints(self, name: str, default=_REQUIRED) -> tuple[int, ...] | Any:
        value = self.attr(name, default)
        if value is default:
            return value
        if not isinstance(value, (list, tuple)):
            raise self.error(f"attribute {name!r} should be a list of ints, got {value!r}")
        return tuple(int(v) for v in value)

    def floats(self, name: str, default=_REQUIRED) -> tuple[float, ...] | Any:
        value = self.attr(name, default)
        if value is default:
            return value
        return tuple(float(v) for v in value)

    def string(self, name: str, default=_REQUIRED) -> str:
        value = self.attr(name, default)
        if isinstance(value, bytes):
            return value.decode("utf-8")
        return value

    def strings(self, name: str, default=_REQUIRED):
        value = self.attr(name, default)
        if value is default:
            return value
        return tuple(v.decode("utf-8") if isinstance(v, bytes) else v for v in value)

    def tensor(self, name: str, default=_REQUIRED) -> np.ndarray:
        return self.attr(name, default)

    def graph(self, name: str, default=_REQUIRED):
        """A subgraph attribute, parsed by the loader's context (for If/Loop/Scan)."""
        return self.attr(name, default)
