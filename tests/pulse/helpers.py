"""Build small streaming models with tractile's graph API and check them against the batch model."""
from __future__ import annotations

import numpy as np

from tractile.fact_spec import parse_fact
from tractile.model import TypedModel
from tractile.ops import Add, Conv, Mul, Relu, Sigmoid, Tanh, Window

PULSES = (1, 2, 7, 16)
#: a length that is a multiple of none of the pulses above but 1
LENGTH = 37


class Builder:
    """A TypedModel under construction, with seeded random weights."""

    def __init__(self, spec: str = "1,4,T,f32", seed: int = 0):
        self.model = TypedModel()
        self.rng = np.random.default_rng(seed)
        self.x = self.model.add_source("x", parse_fact(spec).to_typed())

    def const(self, name, value):
        return self.model.add_const(name, np.asarray(value, dtype=np.float32))

    def weights(self, name, *shape):
        return self.const(name, self.rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:])))

    def node(self, name, op, *inputs):
        return self.model.wire_node(name, op, list(inputs))[0]

    def conv(self, name, x, cin, cout, kernel, dilation=1, stride=1, pads=(0, 0), bias=True, group=1):
        w = self.weights(f"{name}.w", cout, cin // group, kernel)
        inputs = [x, w] + ([self.weights(f"{name}.b", cout)] if bias else [])
        window = Window.make((kernel,), (stride,), (dilation,), pads)
        return self.node(name, Conv(window, group), *inputs)

    def output(self, *outlets):
        self.model.outputs = list(outlets)
        return self.model


def wavenet(channels: int = 4, dilations=(1, 2, 4, 8)) -> TypedModel:
    """Gated dilated causal convolutions with residual and skip connections."""
    b = Builder(f"1,{channels},T,f32")
    x = b.conv("input", b.x, channels, channels, 1)
    skips = None
    for d in dilations:
        filt = b.node(f"tanh{d}", Tanh(), b.conv(f"filter{d}", x, channels, channels, 2, d, pads=(d, 0)))
        gate = b.node(f"sigm{d}", Sigmoid(), b.conv(f"gate{d}", x, channels, channels, 2, d, pads=(d, 0)))
        z = b.node(f"gated{d}", Mul(), filt, gate)
        skip = b.conv(f"skip{d}", z, channels, channels, 1)
        skips = skip if skips is None else b.node(f"skips{d}", Add(), skips, skip)
        x = b.node(f"res{d}", Add(), x, b.conv(f"res_conv{d}", z, channels, channels, 1))
    y = b.conv("head", b.node("head_relu", Relu(), skips), channels, 3, 1)
    return b.output(y)


def stream(pulsed, inputs: list[np.ndarray], stream_axis: int | None = None) -> list[np.ndarray]:
    """Push ``inputs`` chunk by chunk (the last chunk given to finish), return every output's
    frames with the first ``delay`` dropped."""
    axis = next(s.axis for s in pulsed.input_streams if s is not None) if stream_axis is None else stream_axis
    streamed = [s is not None for s in pulsed.input_streams]
    length = next(v.shape[axis] for v, s in zip(inputs, streamed) if s)
    pulse = pulsed.pulse
    state = pulsed.start()
    pieces: list[list[np.ndarray]] = [[] for _ in pulsed.output_streams]

    def chunk(start, stop):
        index = (slice(None),) * axis + (slice(start, stop),)
        return [v[index] if s else v for v, s in zip(inputs, streamed)]

    full = length // pulse
    for k in range(full):
        for index, out in enumerate(state.push(chunk(k * pulse, (k + 1) * pulse))):
            pieces[index].append(out)
    tail = state.finish(chunk(full * pulse, length) if length % pulse else None)
    results = []
    for index, (out_stream, last) in enumerate(zip(pulsed.output_streams, tail)):
        pushed = np.concatenate(pieces[index], axis=out_stream.axis) if pieces[index] else last[:0]
        owed = out_stream.delay + out_stream.dim.eval({pulsed.symbol: length}) \
            if not isinstance(out_stream.dim, int) else out_stream.delay + out_stream.dim
        if pushed.shape[out_stream.axis] < owed:
            assert pushed.shape[out_stream.axis] + last.shape[out_stream.axis] == owed, "finish gave too few frames"
        else:  # the pushes already went past the end of a shorter output: finish owes nothing
            assert last.shape[out_stream.axis] == 0
        joined = np.concatenate([pushed, last], axis=out_stream.axis)
        results.append(joined[(slice(None),) * out_stream.axis + (slice(out_stream.delay, owed),)])
    return results


def assert_streams_like_batch(model, inputs, pulses=PULSES, symbol="T", atol=1e-5):
    """For each pulse, the streamed outputs minus the delay equal the batch outputs; returns
    the pulsed models."""
    expected = model.run(inputs)
    pulsed_models = []
    for pulse in pulses:
        pulsed = model.pulse(symbol, pulse)
        got = stream(pulsed, inputs)
        for index, (value, reference) in enumerate(zip(got, expected)):
            assert value.shape == reference.shape, f"pulse {pulse}, output {index}: {value.shape} vs {reference.shape}"
            np.testing.assert_allclose(value, reference, rtol=1e-5, atol=atol,
                                       err_msg=f"pulse {pulse}, output {index}, delay {pulsed.delays[index]}")
        pulsed_models.append(pulsed)
    return pulsed_models


def random_input(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
