"""Activations fused into the op that feeds them (ONNX ``activation`` fields, TFLite's fused ones).

Clamp-like activations (ReLU, ReLU6, Clip) become the ``low``/``high`` bounds every float
kernel takes. The others run as one in-place pass over the kernel's output: the activation
op's own C expression (``c_expression``, written beside its NumPy definition).
"""
from __future__ import annotations

import math

from ...ops.activations import Clip, Relu, Sigmoid, Tanh
from ..emit import Emit
from ..program import CTensor
from ..registry import Unsupported

#: TFLite fused activations that are clamps, as float bounds
TFLITE_CLAMPS = {"NONE": (-math.inf, math.inf), "RELU": (0.0, math.inf), "RELU6": (0.0, 6.0),
                 "RELU_N1_TO_1": (-1.0, 1.0)}
#: expressions with a form of tl_exp.h's that the compiler vectorises on 64-bit hosts (the same
#: expression elsewhere)
VECTOR_FORMS = {Sigmoid.c_formula: "tl_exp_sigmoid_f32(v)"}


def unary_loop(e: Emit, x: CTensor, y: CTensor, expression: str, math_needed: bool = True) -> None:
    """``y[i] = expression(v = x[i])`` over every element (in place when the planner allows)."""
    if math_needed:
        e.uses_math()
    if expression in VECTOR_FORMS:
        e.use("tl_exp.h")
        expression = VECTOR_FORMS[expression]
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {{\n  const float v = {x.var}[i];\n"
           f"  {y.var}[i] = {expression};\n}}")
    x.used = y.used = True
    if not e.code.kernel:
        e.set_kernel("(loop)")


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


def _expression(activation) -> str:
    expression = activation.c_expression() if hasattr(activation, "c_expression") else None
    if expression is None:
        raise Unsupported(f"the fused activation {activation.name} has no C lowering")
    return expression


def fused_float_activation(e: Emit, activation, output: CTensor) -> tuple[float, float]:
    """Bounds for the kernel's clamp; a non-clamp activation is emitted after the kernel
    (call this before emitting the kernel, then :func:`finish_activation` after it)."""
    bounds = clamp_bounds(activation)
    if bounds is not None:
        return bounds
    _expression(activation)
    return (-math.inf, math.inf)


def finish_activation(e: Emit, activation, output: CTensor) -> None:
    """Emit the in-place pass of a fused non-clamp activation (nothing for clamps)."""
    if clamp_bounds(activation) is None:
        unary_loop(e, output, output, _expression(activation))


def tflite_float_activation(e: Emit, activation: str, output: CTensor) -> tuple[float, float]:
    """Bounds of a TFLite fused activation on a float op (TANH runs in place after the kernel)."""
    if activation in TFLITE_CLAMPS:
        return TFLITE_CLAMPS[activation]
    if activation == "TANH":
        return fused_float_activation(e, Tanh(), output)
    raise Unsupported(f"the fused activation {activation} has no C lowering")


def finish_tflite_activation(e: Emit, activation: str, output: CTensor) -> None:
    if activation == "TANH":
        finish_activation(e, Tanh(), output)
