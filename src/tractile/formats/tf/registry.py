"""The TensorFlow op registry: ``@tf_op("Conv2D")`` translation functions.

A translation receives a :class:`TfNode` and returns a core op (wired to the node's data
inputs, in order), a :class:`Translated` (an op and an explicit input list mixing node input
indices, constant arrays and outlets), or the list of outlets it wired itself through
:meth:`TfNode.wire` (for ops that become several core ops, such as an NHWC convolution).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from ...dim import fresh_symbols_scope
from ...errors import TractileError
from ...fact import InferenceFact
from ...graph import OutletId
from .attrs import Attrs

REGISTRY: dict[str, Callable] = {}
#: per model being loaded, the nodes whose output facts were already inferred (``TfNode.input_fact``)
_INFERRED: WeakKeyDictionary = WeakKeyDictionary()


def tf_op(*op_types: str) -> Callable:
    """Register a translation for the TensorFlow ops named ``op_types``."""

    def register(fn: Callable) -> Callable:
        for op_type in op_types:
            REGISTRY[op_type] = fn
        return fn

    return register


def lookup(op_type: str) -> Callable | None:
    return REGISTRY.get(op_type)


def supported_ops() -> list[str]:
    return sorted(REGISTRY)


@dataclass
class Translated:
    """An op with an explicit input list: ints index the node's inputs, arrays become
    constants, outlets are wired as they are."""

    op: Any
    inputs: list = field(default_factory=list)


#: values larger than this (weights) are not propagated by ``TfNode.input_fact``: shapes are what it is for
_LARGEST_INFERRED_VALUE = 256


def _without_large_value(fact):
    value = getattr(fact, "value", None)
    if value is None or np.asarray(value).size <= _LARGEST_INFERRED_VALUE:
        return fact
    return InferenceFact(fact.dtype, fact.shape)


class TfNode(Attrs):
    """A NodeDef seen by a translation: typed attributes, its inputs as outlets or constants,
    and a way to wire several core ops (``wire``)."""

    def __init__(self, proto, scope):
        super().__init__(proto.attr, f'{proto.op} node "{proto.name}"')
        self.proto = proto
        self.scope = scope
        self.op_type = proto.op
        self.name = proto.name
        self.inputs = [name for name in proto.input if not name.startswith("^")]

    def __repr__(self) -> str:
        return self.label

    def input(self, index: int) -> OutletId:
        if not 0 <= index < len(self.inputs):
            raise self.error(f"needs an input {index}, but the node has {len(self.inputs)}")
        return self.scope.outlet(self.inputs[index], self)

    def input_fact(self, index: int):
        """The fact of input ``index``, inferred forward from the graph's inputs and constants
        (the model's facts are not propagated while loading): what a translation may read,
        such as a rank or a dim, to choose its core ops. The model itself is left unchanged."""
        from ...infer.analyse import infer_node
        from ...ops.io import Source

        outlet = self.input(index)
        model = self.scope.model
        known = _INFERRED.setdefault(model, {})
        order: list[int] = []
        stack, seen = [(outlet.node, False)], set()
        while stack:
            node_id, ready = stack.pop()
            if ready:
                order.append(node_id)
            elif node_id not in seen and OutletId(node_id, 0) not in known:
                seen.add(node_id)
                stack.append((node_id, True))
                stack.extend((i.node, False) for i in model.nodes[node_id].inputs)
        with fresh_symbols_scope(model.symbols):
            for node_id in order:
                node = model.nodes[node_id]
                outputs = [o.fact for o in node.outputs]
                if not isinstance(node.op, Source):
                    try:
                        inputs = [_without_large_value(known.get(i, model.outlet_fact(i))) for i in node.inputs]
                        outputs = infer_node(node.op, inputs, outputs)[1]
                    except TractileError:  # the analysis after loading reports it, with its context
                        pass
                for slot, fact in enumerate(outputs):
                    known[OutletId(node_id, slot)] = fact
        return known.get(outlet, model.outlet_fact(outlet))

    def const(self, index: int) -> np.ndarray | None:
        """The value of input ``index`` when it is a constant of the graph, else None."""
        return self.scope.const_value(self.input(index))

    def const_ints(self, index: int, what: str) -> tuple[int, ...]:
        """Input ``index`` as integers; it must be a constant."""
        value = self.const(index)
        if value is None:
            raise self.error(f"input {index} ({what}) must be a constant: tractile needs it when loading")
        return tuple(int(v) for v in np.asarray(value).reshape(-1))

    def wire(self, suffix: str, op, inputs: list) -> list[OutletId]:
        """Wire ``op`` as a node named after this one (``name.suffix``, in the node's name scope;
        just ``name`` when ``suffix`` is empty). Inputs: outlets, node input indices or constant arrays."""
        return self.scope.wire_op(self, suffix, op, inputs)
