"""Stream a model that takes one window of samples per call (an audio front end) over a stream of
samples: each push takes ``hop`` samples, a delay line keeps the last window, the model runs once.

    front = pulse_frames(preprocessor, hop=320)   # 480-sample windows every 320 samples
    state = front.start()
    features, = state.push([samples[:, :320]])    # [1, 40]: one frame of features per push

The windows are those of ``model`` run on ``samples[..., k*hop : k*hop + window]`` for k = 0, 1...;
the first ``delay`` pushes (until a whole window is in) run the model on silence (a window of
zeros), and their outputs are dropped by the caller as any pulsed model's first ``delay``
frames. (A model with memory sees that silence: TFLite Micro's front end keeps its noise
estimate at zero through it, so its stream equals its frame-by-frame runs exactly.)
"""
from __future__ import annotations

import numpy as np

from ..dim import symbol as make_symbol
from ..errors import TractileError
from ..fact import TypedFact
from ..graph import OutletId
from ..model import TypedModel
from ..ops.io import Const
from ..ops.shape import Reshape
from ..ops.stream import Delay, PulseMask
from .model import PulsedModel
from .stream import Stream


def window_of(model: TypedModel) -> tuple[TypedFact, int]:
    """The input fact of a one-input model with known dims, and its window (the last axis)."""
    if len(model.inputs) != 1:
        raise TractileError(f"streaming frames needs a model of one input (the window), this one has "
                            f"{len(model.inputs)}")
    fact = model.input_facts[0]
    shape = fact.concrete_shape()
    if shape is None or not shape:
        raise TractileError(f"streaming frames needs an input of known shape whose last axis is the window, got {fact}")
    return fact, int(shape[-1])


def delay_frames(window: int, hop: int) -> int:
    """Pushes before the first whole window: ceil((window - hop) / hop)."""
    return -(-(window - hop) // hop)


def pulse_frames(model: TypedModel, hop: int, symbol: str = "T") -> PulsedModel:
    """``model`` (one input whose last axis is a window of samples) as a stream of ``hop``
    samples per push (the stream's axis is the input's last; its length is ``symbol``): each
    output gains a leading axis of one frame per push, ``delay_frames(window, hop)`` late."""
    fact, window = window_of(model)
    if not 1 <= hop <= window:
        raise TractileError(f"the hop must be 1 to {window} samples (the model's window), got {hop}")
    late = delay_frames(window, hop)
    shape = tuple(int(d) for d in fact.concrete_shape())
    axis = len(shape) - 1
    pulsed = TypedModel()
    name = model.input_names()[0]
    source = pulsed.add_source(name, TypedFact(fact.dtype, shape[:-1] + (hop,), qparams=fact.qparams))
    history = Delay(axis=axis, delay=late * hop + hop - window, overlap=window - hop, shape=shape[:-1] + (hop,),
                    dtype=fact.dtype.np.name)
    windowed = pulsed.wire_node(f"{name}.window", history, [source])[0]
    silence = PulseMask(axis=axis, begin=late * window, end=None)
    wires: dict[OutletId, OutletId] = {model.inputs[0]: pulsed.wire_node(f"{name}.silence", silence, [windowed])[0]}
    for node_id in model.eval_order():
        node = model.nodes[node_id]
        if OutletId(node_id, 0) == model.inputs[0]:
            continue
        produced = pulsed.wire_node(node.name, node.op, [wires[i] for i in node.inputs])
        for slot, outlet in enumerate(produced):
            wires[OutletId(node_id, slot)] = outlet
            if OutletId(node_id, slot) in model.outlet_labels:
                pulsed.outlet_labels[outlet] = model.outlet_labels[OutletId(node_id, slot)]
    stream_length = make_symbol(symbol)
    frames = (stream_length - window) // hop + 1
    outputs = []
    for outlet, label in zip(model.outputs, model.output_names()):
        out_shape = tuple(int(d) for d in model.outlet_fact(outlet).shape)
        target = pulsed.wire_node(f"{label}.frame_shape", Const(np.array((1,) + out_shape, dtype=np.int64)), [])[0]
        outputs.append(pulsed.wire_node(f"{label}.frame", Reshape(), [wires[outlet], target])[0])
    pulsed.outputs = outputs
    pulsed.set_output_names(model.output_names())
    pulsed.properties.update(model.properties)
    return PulsedModel(pulsed, symbol, hop, [Stream(axis, stream_length, 0, hop)],
                       [Stream(0, frames, late, 1) for _ in outputs])


def run_frames(model: TypedModel, samples: np.ndarray, hop: int) -> list[np.ndarray]:
    """The reference a frame stream equals: ``model`` run (one state, in order) on every whole
    window of ``samples`` (last axis) every ``hop`` samples; outputs stacked on a leading axis."""
    fact, window = window_of(model)
    state = model.plan().state()
    count = (samples.shape[-1] - window) // hop + 1 if samples.shape[-1] >= window else 0
    results = [state.run([samples[..., k * hop:k * hop + window]]) for k in range(count)]
    if not results:
        return [np.zeros((0,) + tuple(int(d) for d in f.shape), f.dtype.np) for f in model.output_facts]
    return [np.stack([r[index] for r in results]) for index in range(len(model.outputs))]
