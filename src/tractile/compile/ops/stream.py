"""Streaming state: Delay lines as ring buffers in the context, PulseMask at a stream's start.

A compiled stream never ends: the masks a pulsed model applies once the stream's length is
known (its right padding) do not exist in C; push frames to flush the delay instead.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.stream import Delay, PulseMask
from ..emit import Emit
from ..registry import emitter

HEADER = "tl_stream.h"


def _frames(shape: tuple[int, ...], axis: int, itemsize: int) -> tuple[int, int, int]:
    """(outer count, frames, bytes per frame and outer index) of a tensor cut along ``axis``."""
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64)) * itemsize
    return outer, shape[axis], inner


@emitter(Delay)
def delay(e: Emit) -> None:
    op: Delay = e.op
    x, y = e.input(0), e.output(0)
    history = op.delay + op.overlap
    if history == 0:
        e.alias(0, 0)
        return
    outer, pulse, inner = _frames(x.shape, op.axis, np.dtype(x.dtype.np).itemsize)
    capacity = history + pulse
    fill = np.full(outer * capacity * inner // np.dtype(x.dtype.np).itemsize, op.fill, dtype=x.dtype.np)
    ring = e.state("ring", x.dtype, fill.size, initial=fill)
    head = e.state("head", DatumType.I32, 1)
    e.use(HEADER)
    e.call("tl_delay_push", f"(uint8_t *){ring}", head, f"(const uint8_t *){e.arg(x)}", f"(uint8_t *){e.arg(y)}",
           outer, history, pulse, op.overlap, inner)


@emitter(PulseMask)
def pulse_mask(e: Emit) -> None:
    op: PulseMask = e.op
    x, y = e.input(0), e.output(0)
    if op.begin is None or op.begin <= 0:
        e.alias(0, 0)
        return
    itemsize = np.dtype(x.dtype.np).itemsize
    outer, pulse, inner = _frames(x.shape, op.axis, itemsize)
    position = e.state("position", DatumType.I32, 1)
    fill = e.constant("fill", np.asarray([op.value], dtype=x.dtype.np))
    e.overlap(0, 0, 0)
    e.use(HEADER)
    e.call("tl_pulse_mask", f"(const uint8_t *){e.arg(x)}", f"(uint8_t *){e.arg(y)}", position, outer, pulse,
           inner // itemsize, itemsize, op.begin, f"(const uint8_t *){fill}")
