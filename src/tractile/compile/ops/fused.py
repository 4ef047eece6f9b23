"""Activations fused into the op that feeds them (ONNX ``activation`` fields, TFLite's fused ones).

Clamp-like activations (ReLU, ReLU6, Clip) become the ``low``/``high`` bounds every float
kernel takes. The others run as one in-place pass over the kernel's output, emitted by the
function registered for their class with :func:`inplace_activation`.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from ...ops.activations import Clip, Relu
from ..emit import Emit
from ..program import CTensor
from ..registry import Unsupported

InplaceActivation = Callable[[Emit, object, CTensor], None]

_INPLACE: dict[type, InplaceActivation] = {}

#: TFLite fused activations that are clamps, as float bounds
TFLITE_CLAMPS = {"NONE": (-math.inf, math.inf), "RELU": (0.0, math.inf), "RELU6": (0.0, 6.0),
                 "RELU_N1_TO_1": (-1.0, 1.0)}


def inplace_activation(*op_classes: type) -> Callable[[InplaceActivation], InplaceActivation]:
    """Register how an activation runs in place over a float tensor (``fn(e, op, tensor)``)."""

    def register(function: InplaceActivation) -> InplaceActivation:
        for op_class in op_classes:
            _INPLACE[op_class] = function
        return function

    return register


def clamp_bounds(activation) -> tuple[float, float] | None:
    """The float bounds of a clamp-like fused activation (None: no activation), or None if
    the activation is not a clamp."""
    if activation is None:
        return (-math.inf, math.inf)
    if type(activation) is Relu:
        return (0.0, math.inf)
    if type(activation) is Clip and not (activation.dynamic_low or activation.dynamic_high):
        low = -math.inf if activation.low is None else float(activation.low)
        high = math.inf if activation.high is None else float(activation.high)
        return (low, high)
    return None


def fused_float_activation(e: Emit, activation, output: CTensor) -> tuple[float, float]:
    """Bounds for the kernel's clamp; a non-clamp activation is emitted after the kernel
    (call this before emitting the kernel, then :func:`finish_activation` after it)."""
    bounds = clamp_bounds(activation)
    if bounds is not None:
        return bounds
    for cls in type(activation).__mro__:
        if cls in _INPLACE:
            return (-math.inf, math.inf)
    raise Unsupported(f"the fused activation {activation.name} has no C lowering")


def finish_activation(e: Emit, activation, output: CTensor) -> None:
    """Emit the in-place pass of a fused non-clamp activation (nothing for clamps)."""
    if clamp_bounds(activation) is not None:
        return
    for cls in type(activation).__mro__:
        function = _INPLACE.get(cls)
        if function is not None:
            function(e, activation, output)
            return
    raise Unsupported(f"the fused activation {activation.name} has no C lowering")


def tflite_float_activation(e: Emit, activation: str, output: CTensor) -> tuple[float, float]:
    """Bounds of a TFLite fused activation on a float op (TANH runs in place after the kernel)."""
    if activation in TFLITE_CLAMPS:
        return TFLITE_CLAMPS[activation]
    if activation == "TANH":
        from ...ops.activations import Tanh

        return fused_float_activation(e, Tanh(), output)
    raise Unsupported(f"the fused activation {activation} has no C lowering")


def finish_tflite_activation(e: Emit, activation: str, output: CTensor) -> None:
    if activation == "TANH":
        from ...ops.activations import Tanh

        finish_activation(e, Tanh(), output)
