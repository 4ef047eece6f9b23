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
from ..fact import QParams, TypedFact
from .base import expect_inputs
from .binary import BinaryOp
from .broadcast import broadcast_shapes
from .quantized import activation as quantized
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .unary import UnaryOp, c_float, check_accepts, needs_f32


@dataclass(frozen=True)
class Activation(UnaryOp):
    """An element-wise activation that keeps the datum type (f16/bf16 math runs in f32); with
    ``quant`` set, on quantized values by its integer recipe (``ops.quantized.activation``)."""

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
    c_formula: ClassVar[str | None] = "(v < 0.0f ? 0.0f : v)"

    def compute(self, x):
        return np.maximum(x, np.zeros((), x.dtype))

    def apply_inplace(self, y):
        return np.maximum(y, 0, out=y)

    def quantized_recipe(self, x):
        return quantized.relu_recipe(x, self.quant, 0.0, None)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))``: accurate for large negative x too (exp overflows to a clean 0)."""
    with np.errstate(over="ignore"):
        return np.reciprocal(scalar(1, x) + np.exp(-x))


@dataclass(frozen=True)
class Sigmoid(Activation):
    c_formula: ClassVar[str | None] = "(1.0f / (1.0f + expf(-v)))"

    def compute(self, x):
        return sigmoid(x)

    def quantized_recipe(self, x):
        return quantized.sigmoid_recipe(x, self.quant)

    def apply_inplace(self, y):
        np.negative(y, out=y)
        with np.errstate(over="ignore"):
            np.exp(y, out=y)
        y += 1
        return np.reciprocal(y, out=y)


@dataclass(frozen=True)
class Tanh(Activation):
    c_formula: ClassVar[str | None] = "tanhf(v)"

    def compute(self, x):
        return np.tanh(x)

    def quantized_recipe(self, x):
        return quantized.sigmoid_recipe(x, self.quant, tanh=True)

    def apply_inplace(self, y):
        return np.tanh(y, out=y)


@dataclass(frozen=True)
class LeakyRelu(Activation):
    alpha: float = 0.01

    def compute(self, x):
        return np.where(x >= 0, x, x * scalar(self.alpha, x))

    def c_expression(self):
        return f"(v >= 0.0f ? v : v * {c_float(self.alpha)})"

    def apply_inplace(self, y):
        negative = y < 0
        y[negative] *= self.alpha
        return y

    def quantized_recipe(self, x):
        return quantized.leaky_relu_recipe(x, self.quant, self.alpha)


@dataclass(frozen=True)
class Clip(Activation):
    """Clamp to ``[low, high]`` (either may be None). ONNX's min/max inputs, when given,
    are read at run time; the declutter pass turns constant ones into attributes.

    Without ``quant``, integers clamp as they are (a quantized ReLU whose output keeps the
    input's quantization is a Clip at integer bounds, and the output keeps the qparams); with
    ``quant``, the bounds are real values and the input is requantized (TFLite's ReLU family).
    """

    low: float | None = None
    high: float | None = None
    dynamic_low: bool = False
    dynamic_high: bool = False
    accepts: ClassVar[str | None] = "number"

    def output_facts(self, inputs):
        if self.quant is not None:
            if self.dynamic_low or self.dynamic_high:
                raise AnalysisError("a quantized Clip needs constant bounds")
            return super().output_facts(inputs)
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

    def quantized_recipe(self, x):
        return quantized.relu_recipe(x, self.quant, self.low, self.high)

    def eval(self, inputs):
        if self.quant is not None:
            return [recipe_of(self)(np.asarray(inputs[0]))]
        x = inputs[0]
        low, high = self._bounds(inputs)
        if low is not None:
            x = np.maximum(x, np.asarray(low, dtype=x.dtype))
        if high is not None:
            x = np.minimum(x, np.asarray(high, dtype=x.dtype))
        return [np.asarray(x) if x is not inputs[0] else x.copy()]

    def compute(self, x):
        return self.eval([x])[0]

    def c_expression(self):
        if self.dynamic_low or self.dynamic_high:
            return None
        low = "v" if self.low is None else f"(v < {c_float(self.low)} ? {c_float(self.low)} : v)"
        return low if self.high is None else f"({low} > {c_float(self.high)} ? {c_float(self.high)} : {low})"

    def apply_inplace(self, y):
        if self.low is not None and self.high is not None:
            return np.clip(y, self.low, self.high, out=y)
        if self.low is not None:
            return np.maximum(y, self.low, out=y)
        return np.minimum(y, self.high, out=y) if self.high is not None else y

    def declutter(self, model, node):
        from ..patch import ModelPatch

        if self.quant is not None:
            return None
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

    def c_expression(self):
        return f"(v > {c_float(self.alpha)} ? v : 0.0f)"


@dataclass(frozen=True)
class HardSigmoid(Activation):
    """``max(0, min(1, alpha * x + beta))``."""

    alpha: float = 0.2
    beta: float = 0.5

    def compute(self, x):
        y = x * scalar(self.alpha, x) + scalar(self.beta, x)
        return np.clip(y, scalar(0, x), scalar(1, x))

    def c_expression(self):
        value = f"v * {c_float(self.alpha)} + {c_float(self.beta)}"
        return f"({value} < 0.0f ? 0.0f : ({value} > 1.0f ? 1.0f : {value}))"


@dataclass(frozen=True)
class HardSwish(Activation):
    """``x * max(0, min(1, x / 6 + 1 / 2))``."""

    c_formula: ClassVar[str | None] = "(v * (v < -3.0f ? 0.0f : (v > 3.0f ? 1.0f : v / 6.0f + 0.5f)))"

    def compute(self, x):
        gate = np.clip(x * scalar(1 / 6, x) + scalar(0.5, x), scalar(0, x), scalar(1, x))
        return x * gate

    def quantized_recipe(self, x):
        return quantized.hard_swish_recipe(x, self.quant)


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
    """``x`` where positive, ``slope * x`` elsewhere; the slope broadcasts to ``x``'s shape.

    ``quant``: the output's quantization; set, ``x`` and the slope are quantized tensors (the
    slope may have another type) and TFLite's integer recipe applies."""

    elementwise: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "number"

    quant: QParams | None = None

    def _recipe(self, inputs):
        return cached_recipe(self, inputs, lambda: quantized.prelu_recipe(inputs[0], inputs[1], self.quant))

    def output_facts(self, inputs):
        if self.quant is None:
            facts = super().output_facts(inputs)
        else:
            expect_inputs(inputs, 2, self)
            self._recipe(inputs)
            shape = broadcast_shapes(inputs[0].shape, inputs[1].shape)
            facts = [TypedFact(inputs[0].dtype, shape, qparams=self.quant)]
        if facts[0].shape != inputs[0].shape:
            raise AnalysisError(f"PRelu's slope {inputs[1]} does not broadcast to the input {inputs[0]}")
        return facts

    def prepared(self, inputs):
        return self if self.quant is None else with_recipe(self, self._recipe(inputs))

    def eval(self, inputs):
        if self.quant is not None:
            return [recipe_of(self)(np.asarray(inputs[0]), np.asarray(inputs[1]))]
        return super().eval(inputs)

    def compute(self, x, slope):
        return np.where(x < 0, x * slope, x)


#: activations that may be fused into the op producing their input
FUSABLE = (Relu, Sigmoid, Tanh, LeakyRelu, Clip)


def fusable(op) -> bool:
    return isinstance(op, FUSABLE) and op.quant is None and not (
        isinstance(op, Clip) and (op.dynamic_low or op.dynamic_high))
