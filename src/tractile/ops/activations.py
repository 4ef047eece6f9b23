"""Activations. Each can run as a node; the simple ones can also be fused into the op
that feeds them.

A fused activation is applied in place on the producer's fresh output buffer
(:meth:`Activation.apply_inplace`), saving a pass over memory. The piecewise-linear
activations live here; the smooth ones (Elu, Gelu, Softplus...) in ``smooth.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from .base import expect_inputs
from .binary import BinaryOp
from .unary import UnaryOp, check_accepts, needs_f32


@dataclass(frozen=True)
class Activation(UnaryOp):
    """An element-wise activation that keeps the datum type (f16/bf16 math runs in f32)."""

    elementwise: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "float"

    def eval(self, inputs):
        x = inputs[0]
        if needs_f32(x.dtype):
            with np.errstate(all="ignore"):
                return [np.asarray(self.compute(x.astype(np.float32))).astype(x.dtype)]
        return super().eval(inputs)

    def apply_inplace(self, y: np.ndarray) -> np.ndarray:
        """Apply to ``y`` (a buffer the caller owns), in place where possible; return the result."""
        return self.compute(y)


def scalar(value: float, like: np.ndarray) -> np.ndarray:
    """``value`` as a 0-d array of ``like``'s type (so it does not widen the computation)."""
    return np.asarray(value, dtype=like.dtype)


@dataclass(frozen=True)
class Relu(Activation):
    accepts: ClassVar[str | None] = "signed"

    def compute(self, x):
        return np.maximum(x, np.zeros((), x.dtype))

    def apply_inplace(self, y):
        return np.maximum(y, 0, out=y)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))``: accurate for large negative x too (exp overflows to a clean 0)."""
    with np.errstate(over="ignore"):
        return np.reciprocal(scalar(1, x) + np.exp(-x))


@dataclass(frozen=True)
class Sigmoid(Activation):
    def compute(self, x):
        return sigmoid(x)

    def apply_inplace(self, y):
        np.negative(y, out=y)
        with np.errstate(over="ignore"):
            np.exp(y, out=y)
        y += 1
        return np.reciprocal(y, out=y)


@dataclass(frozen=True)
class Tanh(Activation):
    def compute(self, x):
        return np.tanh(x)

    def apply_inplace(self, y):
        return np.tanh(y, out=y)


@dataclass(frozen=True)
class LeakyRelu(Activation):
    alpha: float = 0.01

    def compute(self, x):
        return np.where(x >= 0, x, x * scalar(self.alpha, x))

    def apply_inplace(self, y):
        negative = y < 0
        y[negative] *= self.alpha
        return y


@dataclass(frozen=True)
class Clip(Activation):
    """Clamp to ``[low, high]`` (either may be None). ONNX's min/max inputs, when given,
    are read at run time; the declutter pass turns constant ones into attributes."""

    low: float | None = None
    high: float | None = None
    dynamic_low: bool = False
    dynamic_high: bool = False
    accepts: ClassVar[str | None] = "number"

    def output_facts(self, inputs):
        expect_inputs(inputs, 1 + self.dynamic_low + self.dynamic_high, self)
        check_accepts(self, self.accepts, inputs[0])
        for bound in inputs[1:]:
            if bound.dtype != inputs[0].dtype or bound.rank != 0 and bound.volume != 1:
                raise AnalysisError(f"Clip bounds must be scalars of the input's type, got {bound}")
        # clamping integers keeps their quantization: a quantized ReLU is a Clip at the zero point
        return [TypedFact(inputs[0].dtype, inputs[0].shape, qparams=inputs[0].qparams)]

    def rules(self, s, inputs, outputs):
        super().rules(s, inputs[:1], outputs)
        for bound in inputs[1:]:
            s.equals(bound.datum_type, inputs[0].datum_type)

    def _bounds(self, inputs):
        low, high = self.low, self.high
        rest = list(inputs[1:])
        if self.dynamic_low:
            low = rest.pop(0).reshape(())
        if self.dynamic_high:
            high = rest.pop(0).reshape(())
        return low, high

    def eval(self, inputs):
        x = inputs[0]
        low, high = self._bounds(inputs)
        if low is not None:
            x = np.maximum(x, np.asarray(low, dtype=x.dtype))
        if high is not None:
            x = np.minimum(x, np.asarray(high, dtype=x.dtype))
        return [np.asarray(x) if x is not inputs[0] else x.copy()]

    def compute(self, x):
        return self.eval([x])[0]

    def apply_inplace(self, y):
        if self.low is not None and self.high is not None:
            return np.clip(y, self.low, self.high, out=y)
        if self.low is not None:
            return np.maximum(y, self.low, out=y)
        return np.minimum(y, self.high, out=y) if self.high is not None else y

    def declutter(self, model, node):
        from ..patch import ModelPatch

        if not (self.dynamic_low or self.dynamic_high):
            if self.low is None and self.high is None:
                return ModelPatch.shunt_one_op(model, node)
            return None
        bounds = [model.outlet_fact(o).konst for o in node.inputs[1:]]
        if any(b is None for b in bounds):
            return None
        low, high = self._bounds([None, *bounds])
        op = Clip(None if low is None else low.item(), None if high is None else high.item())
        return ModelPatch.replace_single_op(model, node, node.inputs[:1], op)


@dataclass(frozen=True)
class ThresholdedRelu(Activation):
    """``x`` where ``x > alpha``, else 0."""

    alpha: float = 1.0

    def compute(self, x):
        return np.where(x > scalar(self.alpha, x), x, np.zeros((), x.dtype))


@dataclass(frozen=True)
class HardSigmoid(Activation):
    """``max(0, min(1, alpha * x + beta))``."""

    alpha: float = 0.2
    beta: float = 0.5

    def compute(self, x):
        y = x * scalar(self.alpha, x) + scalar(self.beta, x)
        return np.clip(y, scalar(0, x), scalar(1, x))


@dataclass(frozen=True)
class HardSwish(Activation):
    """``x * max(0, min(1, x / 6 + 1 / 2))``."""

    def compute(self, x):
        gate = np.clip(x * scalar(1 / 6, x) + scalar(0.5, x), scalar(0, x), scalar(1, x))
        return x * gate


@dataclass(frozen=True)
class Shrink(Activation):
    """``x + bias`` below ``-lambd``, ``x - bias`` above ``lambd``, 0 between (any numeric type)."""

    bias: float = 0.0
    lambd: float = 0.5
    accepts: ClassVar[str | None] = "number"

    def compute(self, x):
        work = x if x.dtype.kind == "f" else x.astype(np.float64)
        out = np.where(work < scalar(-self.lambd, work), work + scalar(self.bias, work),
                       np.where(work > scalar(self.lambd, work), work - scalar(self.bias, work), 0))
        return out.astype(x.dtype)


@dataclass(frozen=True)
class PRelu(BinaryOp):
    """``x`` where positive, ``slope * x`` elsewhere; the slope broadcasts to ``x``'s shape."""

    elementwise: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "number"

    def output_facts(self, inputs):
        facts = super().output_facts(inputs)
        if facts[0].shape != inputs[0].shape:
            raise AnalysisError(f"PRelu's slope {inputs[1]} does not broadcast to the input {inputs[0]}")
        return facts

    def compute(self, x, slope):
        return np.where(x < 0, x * slope, x)


#: activations that may be fused into the op producing their input
FUSABLE = (Relu, Sigmoid, Tanh, LeakyRelu, Clip)


def fusable(op) -> bool:
    return isinstance(op, FUSABLE) and not (isinstance(op, Clip) and (op.dynamic_low or op.dynamic_high))
