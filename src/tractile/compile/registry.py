"""The per-op-class registry of C emitters.

An emitter lowers one node into C through an :class:`~tractile.compile.emit.Emit`::

    @emitter(MatMul)
    def matmul(e: Emit) -> None:
        x, w = e.input(0), e.const_input(1)
        ...
        e.call("tl_fc_s8", x, weights, e.output(0), ...)

It raises :class:`Unsupported` (with the reason, without naming the node: lowering adds
it) for configurations it cannot lower; lowering collects every such node before any C is
written. Lookup walks the op's class hierarchy, as for pulsifiers.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .emit import Emit

Emitter = Callable[["Emit"], None]

_EMITTERS: dict[type, Emitter] = {}


class Unsupported(Exception):
    """Raised by an emitter for a node it cannot lower (the message says why)."""


def emitter(*op_classes: type) -> Callable[[Emitter], Emitter]:
    """Register the decorated function as the C lowering of ``op_classes``."""

    def register(function: Emitter) -> Emitter:
        for op_class in op_classes:
            _EMITTERS[op_class] = function
        return function

    return register


def find_emitter(op) -> Emitter | None:
    """The emitter of ``op``'s class or of its nearest registered base class."""
    _load_emitters()
    for cls in type(op).__mro__:
        found = _EMITTERS.get(cls)
        if found is not None:
            return found
    return None


def supported_ops() -> list[str]:
    """The op names the compiler lowers (for error messages and docs)."""
    _load_emitters()
    return sorted({_class_name(cls) for cls in _EMITTERS})


def _class_name(cls: type) -> str:
    """An op class's name; a class whose ``name`` depends on the instance (a property: TFLite's
    binary ops, activations, pools; reductions) is named after the class, with its family's prefix."""
    name = getattr(cls, "name", None)
    if isinstance(name, str):
        return name
    prefix = "Tfl" if cls.__module__.startswith("tractile.ops.tfl.") else ""
    return prefix + cls.__name__


def _load_emitters() -> None:
    from . import ops  # noqa: F401 - importing the package registers every emitter
