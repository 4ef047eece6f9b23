"""Activations. Each can run as a node or be fused into the op that feeds it.

A fused activation is applied in place on the producer's fresh output buffer
(:meth:`Activation.apply_inplace`), saving a pass over memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from .base import expect_inputs
from .unary import UnaryOp


@dataclass(frozen=True)
class Activation(UnaryOp):
    """An element-wise activation that keeps the datum type."""

    accepts = "float"

    def apply_inplace(self, y: np.ndarray) -> np.ndarray:
        """Apply to ``y`` (a buffer the caller owns), in place where possible; return the result."""
        return self.compute(y)


@dataclass(frozen=True)
class Relu(Activation):
    accepts = None

    def compute(self, x):
        return np.maximum(x, np.zeros((), x.dtype))

    def apply_inplace(self, y):
        return np.maximum(y, 0, out=y)


@dataclass(frozen=True)
class Sigmoid(Activation):
    def compute(self, x):
        half = np.asarray(0.5, dtype=x.dtype)
        return half + half * np.tanh(half * x)

    def apply_inplace(self, y):
        y *= 0.5
        np.tanh(y, out=y)
        y *= 0.5
        y += 0.5
        return y


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
        return np.where(x >= 0, x, x * np.asarray(self.alpha, dtype=x.dtype))

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
    accepts = None

    def output_facts(self, inputs):
        expect_inputs(inputs, 1 + self.dynamic_low + self.dynamic_high, self)
        for bound in inputs[1:]:
            if bound.dtype != inputs[0].dtype or bound.rank != 0 and bound.volume != 1:
                raise AnalysisError(f"Clip bounds must be scalars of the input's type, got {bound}")
        return [TypedFact(inputs[0].dtype, inputs[0].shape)]

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
        return [x if x is not inputs[0] else x.copy()]

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


#: activations that may be fused into the op producing their input
FUSABLE = (Relu, Sigmoid, Tanh, LeakyRelu, Clip)


def fusable(op) -> bool:
    return isinstance(op, FUSABLE) and not (isinstance(op, Clip) and (op.dynamic_low or op.dynamic_high))
