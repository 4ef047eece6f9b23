"""Translations of SOFTMAX and LOG_SOFTMAX (both directions)."""
from __future__ import annotations

from ....ops.tfl.softmax import LogSoftmax, Softmax
from ..registry import (
    OpSpec,
    TflNode,
    tflite_op,
    tflite_writer,
)


@tflite_op("SOFTMAX")
def softmax(node: TflNode):
    options = node.options("SoftmaxOptions")
    return Softmax(beta=float(options.Beta()) if options is not None else 1.0)


@tflite_writer(Softmax)
def write_softmax(op: Softmax, ctx) -> OpSpec:
    return OpSpec("SOFTMAX", ("SoftmaxOptions", {"Beta": op.beta}))


@tflite_op("LOG_SOFTMAX")
def log_softmax(node: TflNode):
    return LogSoftmax()


@tflite_writer(LogSoftmax)
def write_log_softmax(op: LogSoftmax, ctx) -> OpSpec:
    return OpSpec("LOG_SOFTMAX", ("LogSoftmaxOptions", {}))
