"""What pulsing tracks on every wire: the streamed axis, its pulse and its delay.

A wire of a pulsed model carries, at push ``k``, ``pulse`` frames along ``axis``: the
frames ``[k*pulse - delay, (k+1)*pulse - delay)`` of the tensor the batch model computes
on that wire. Frames with a negative index come before the stream started; their values
mean nothing and are dropped by the caller (the first ``delay`` frames of an output).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from ..dim import Dim
from ..errors import AnalysisError
from ..graph import OutletId


@dataclass(frozen=True)
class Stream:
    """The streaming facts of a wire (tract's pulsed fact, less the typed part).

    ``axis``: the streamed axis; ``dim``: its length in the batch model (an expression
    of the stream symbol, e.g. ``T`` or ``(T-3)/2+1``); ``delay``: how many frames late
    the wire is; ``pulse``: frames per push on this wire (the model's pulse divided by
    the strides met on the way).
    """

    axis: int
    dim: Dim
    delay: int
    pulse: int

    def moved(self, axis: int, dim: Dim | None = None) -> Stream:
        """The same stream on another axis (and length) of a reshaped or reduced tensor."""
        return replace(self, axis=axis, dim=self.dim if dim is None else dim)

    def delayed(self, frames: int) -> Stream:
        return replace(self, delay=self.delay + frames)

    def __str__(self) -> str:
        return f"stream(axis {self.axis}, {self.dim} frames, pulse {self.pulse}, delay {self.delay})"


class Wire(NamedTuple):
    """A wire of the pulsed model standing for a wire of the batch model."""

    outlet: OutletId
    stream: Stream | None

    @property
    def streamed(self) -> bool:
        return self.stream is not None


class Unavailable:
    """Stands for a batch wire that has no meaning in the pulsed model (a shape computed
    from the stream length, a final state...). Reading it raises ``error``; wires nobody
    reads cost nothing.

    ``outlet``, when set, is a pulsed wire computing the same value except where it depends
    on the stream's length (the shape of a chunk instead of the stream's). Computations on
    it whose batch value does not involve the stream symbol (a batch size taken from a
    shape, say) are valid again.
    """

    __slots__ = ("error", "outlet")

    def __init__(self, error: AnalysisError, outlet: OutletId | None = None):
        self.error = error
        self.outlet = outlet

    def __repr__(self) -> str:
        return f"Unavailable({self.error})"
