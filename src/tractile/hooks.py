"""What the core calls but does not implement: running, rewriting, compiling, streaming, writing.

The model classes (``tractile.model``) offer ``plan()``, ``declutter()``, ``compile()``,
``pulse()``... as methods, but the code behind them lives in upper layers (``runtime``,
``passes``, ``compile``, ``pulse``, ``formats``) that themselves build on the model. Each
such entry point is looked up here by name; ``tractile.entry_points`` provides them all
when the ``tractile`` package is imported, so the core never imports upwards.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import TractileError

_PROVIDED: dict[str, Callable[..., Any]] = {}


def provide(name: str, function: Callable[..., Any]) -> None:
    """Register ``function`` as the implementation of the core's entry point ``name``."""
    _PROVIDED[name] = function


def provided(name: str) -> Callable[..., Any]:
    """The implementation of entry point ``name``."""
    try:
        return _PROVIDED[name]
    except KeyError:
        raise TractileError(f"nothing provides {name!r}: import tractile (its package registers every entry "
                            "point) before using the model classes") from None
