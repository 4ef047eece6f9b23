"""Streaming inference: pulse a model along its time axis and run it chunk by chunk.

    model = tractile.load("kws.onnx", inputs={"x": "1,40,T,f32"})
    pulsed = model.pulse("T", 8)        # 8 frames of T per push
    state = pulsed.start()
    y, = state.push([chunk])            # chunk: 1,40,8
    tail, = state.finish()              # end of stream: the frames still owed

See docs/STREAMING.md for the semantics (streamed axis, pulse, delay, buffers).
The translations of the op families are registered by the modules imported below.
"""
from __future__ import annotations

from ..ops.stream import Delay, PulseMask, StreamContext, StreamOpState
from . import array, cnn, elementwise, nn, recurrent  # noqa: F401 - they register their pulsifiers
from .model import PulsedModel, StreamState
from .registry import find_pulsifier, pulsifier, register_pulsifier
from .stream import Stream, Wire
from .translate import PulseContext, pulse_model

__all__ = [
    "pulse_model", "PulsedModel", "StreamState", "Stream", "Wire", "Delay", "PulseMask", "StreamContext",
    "StreamOpState", "PulseContext", "pulsifier", "register_pulsifier", "find_pulsifier",
]
