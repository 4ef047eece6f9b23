"""The per-op-class registry of streaming translations ("pulsifiers").

A pulsifier translates one node of the batch model into the pulsed model::

    @pulsifier(Transpose)
    def transpose(ctx: PulseContext, node: Node) -> list[Wire]:
        x = ctx.input(node, 0)
        ...
        return ctx.keep(node, [x], axes=[new_axis])

It is called only for nodes that read at least one streamed wire (the others are copied
as they are). It returns one :class:`~tractile.pulse.stream.Wire` per node output and
raises :class:`~tractile.errors.AnalysisError` (without naming the node: the translator
adds it) when the node cannot stream.

Lookup walks the op's class hierarchy, so a family base (``UnaryOp``, ``BinaryOp``)
covers its members; a member that works along an axis registers its own pulsifier.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..graph import Node
    from .stream import Wire
    from .translate import PulseContext

Pulsifier = Callable[["PulseContext", "Node"], list["Wire"]]

_PULSIFIERS: dict[type, Pulsifier] = {}


def pulsifier(*op_classes: type) -> Callable[[Pulsifier], Pulsifier]:
    """Register the decorated function as the streaming translation of ``op_classes``."""

    def register(function: Pulsifier) -> Pulsifier:
        for op_class in op_classes:
            _PULSIFIERS[op_class] = function
        return function

    return register


def register_pulsifier(op_class: type, function: Pulsifier) -> None:
    """Register ``function`` for ``op_class`` (for ops defined outside tractile)."""
    _PULSIFIERS[op_class] = function


def find_pulsifier(op) -> Pulsifier | None:
    """The pulsifier of ``op``'s class or of its nearest registered base class."""
    for cls in type(op).__mro__:
        found = _PULSIFIERS.get(cls)
        if found is not None:
            return found
    return None
