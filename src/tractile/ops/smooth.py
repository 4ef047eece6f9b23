"""Smooth activations: the exponential family (Elu, Celu, Selu), Gelu, Softplus, Softsign,
Mish and Swish. Each keeps its input's datum type; f16/bf16 math runs in f32."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import AnalysisError
from .activations import Activation, scalar, sigmoid
from .quantized import activation as quantized
from .unary import c_float, erf


def _exp_below_zero(x: np.ndarray, alpha: float) -> np.ndarray:
    """``alpha * (exp(x) - 1)`` where x < 0, ``x`` elsewhere."""
    return np.where(x < 0, scalar(alpha, x) * np.expm1(np.minimum(x, scalar(0, x))), x)


@dataclass(frozen=True)
class Elu(Activation):
    """``x`` for x >= 0, ``alpha * (exp(x) - 1)`` below."""

    alpha: float = 1.0

    def compute(self, x):
        return _exp_below_zero(x, self.alpha)

    def c_expression(self):
        return f"(v >= 0.0f ? v : {c_float(self.alpha)} * TL_EXPM1F(v))"

    def quantized_recipe(self, x):
        if self.alpha != 1.0:
            raise AnalysisError(f"a quantized Elu needs alpha 1, got {self.alpha}")
        return quantized.table_recipe("elu", x, self.quant)


@dataclass(frozen=True)
class Celu(Activation):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    alpha: float = 1.0

    def output_facts(self, inputs):
        if self.alpha == 0:
            raise AnalysisError("Celu's alpha must not be 0")
        return super().output_facts(inputs)

    def compute(self, x):
        alpha = scalar(self.alpha, x)
        return np.maximum(x, scalar(0, x)) + np.minimum(scalar(0, x), alpha * np.expm1(x / alpha))


@dataclass(frozen=True)
class Selu(Activation):
    """``gamma * x`` for x > 0, ``gamma * alpha * (exp(x) - 1)`` below."""

    alpha: float = 1.67326319217681884765625
    gamma: float = 1.05070102214813232421875

    def compute(self, x):
        return scalar(self.gamma, x) * _exp_below_zero(x, self.alpha)


@dataclass(frozen=True)
class Gelu(Activation):
    """``x * Phi(x)`` with the normal CDF exact (``approximate="none"``) or through tanh."""

    approximate: str = "none"

    def output_facts(self, inputs):
        if self.approximate not in ("none", "tanh"):
            raise AnalysisError(f"Gelu's approximate must be 'none' or 'tanh', got {self.approximate!r}")
        return super().output_facts(inputs)

    def compute(self, x):
        if self.approximate == "tanh":
            # (1 + tanh(z)) / 2 is sigmoid(2 z), which keeps its precision for very negative x
            inner = scalar(math.sqrt(8 / math.pi), x) * (x + scalar(0.044715, x) * x * x * x)
            return x * sigmoid(inner)
        wide = x.astype(np.float64)
        return (0.5 * wide * (1.0 + erf(wide * math.sqrt(0.5), accuracy=np.float64))).astype(x.dtype)

    def c_expression(self):
        if self.approximate == "tanh":
            cubic = f"(v + {c_float(0.044715)} * v * v * v)"
            return f"(0.5f * v * (1.0f + tanhf({c_float(math.sqrt(2 / math.pi))} * {cubic})))"
        return f"(0.5f * v * erfcf(v * {c_float(-math.sqrt(0.5))}))"

    def quantized_recipe(self, x):
        return quantized.table_recipe("gelu_approximate" if self.approximate == "tanh" else "gelu", x, self.quant)


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` without overflow."""
    return np.logaddexp(scalar(0, x), x)


@dataclass(frozen=True)
class Softplus(Activation):
    """``log(1 + exp(x))``."""

    c_formula: ClassVar[str | None] = "((v > 0.0f ? v : 0.0f) + TL_LOG1PF(expf(-fabsf(v))))"

    def compute(self, x):
        return softplus(x)


@dataclass(frozen=True)
class Softsign(Activation):
    """``x / (1 + |x|)``."""

    c_formula: ClassVar[str | None] = "(v / (fabsf(v) + 1.0f))"

    def compute(self, x):
        return x / (scalar(1, x) + np.abs(x))


@dataclass(frozen=True)
class Mish(Activation):
    """``x * tanh(softplus(x))``."""

    def compute(self, x):
        return x * np.tanh(softplus(x))


@dataclass(frozen=True)
class Swish(Activation):
    """``x * sigmoid(alpha * x)``."""

    alpha: float = 1.0

    def compute(self, x):
        return x * sigmoid(scalar(self.alpha, x) * x)
