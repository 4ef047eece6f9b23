"""What every quantized computation shares: scales and zero points read from facts, integer
ranges, TFLite's rounding of a real value, activation ranges, and how an op carries the
recipe it derived from its input facts (:func:`with_recipe`, :func:`recipe_of`).

Quantization lives in the facts: an input's scale and zero point are its fact's ``qparams``;
an op that computes in the quantized domain holds its output's quantization as its ``quant``
attribute (the output fact's ``qparams``). The integer parameters a computation needs
(multipliers, shifts, folded offsets, tables) are derived once, when a plan, the constant
folder or the compiler prepares the op for its input facts (``Op.prepared``).
"""
from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ...fact import QParams, TypedFact

QUANTIZED = (DatumType.I8, DatumType.U8, DatumType.I16)


def scale_of(q: QParams | None, what: str = "tensor") -> float:
    """The per-tensor scale (as float32, like TFLite's TfLiteQuantizationParams)."""
    if q is None:
        raise AnalysisError(f"{what} is not quantized")
    return float(np.float32(q.scale[0]))


def zero_of(q: QParams | None) -> int:
    return int(q.zero_point[0]) if q is not None else 0


def scales_of(q: QParams) -> np.ndarray:
    """All scales (one per channel for per-axis quantization) as float32."""
    return np.asarray(q.scale, dtype=np.float32)


def integer_limits(dtype: DatumType) -> tuple[int, int]:
    info = np.iinfo(dtype.np)
    return int(info.min), int(info.max)


def quantize_value(value: float, q: QParams) -> int:
    """TFLite's ``zero_point + round(value / scale)`` (in float, halves away from zero)."""
    ratio = np.float32(value) / np.float32(scale_of(q))
    return zero_of(q) + int(math.copysign(math.floor(abs(float(ratio)) + 0.5), float(ratio)))


def activation_range(activation: str, q: QParams | None, dtype: DatumType) -> tuple[int, int]:
    """The clamp of a fused activation in the quantized domain (CalculateActivationRangeQuantized)."""
    low, high = integer_limits(dtype)
    if activation == "RELU":
        return max(low, quantize_value(0.0, q)), high
    if activation == "RELU6":
        return max(low, quantize_value(0.0, q)), min(high, quantize_value(6.0, q))
    if activation == "RELU_N1_TO_1":
        return max(low, quantize_value(-1.0, q)), min(high, quantize_value(1.0, q))
    if activation not in ("NONE",):
        raise AnalysisError(f"fused activation {activation} is not supported on quantized tensors")
    return low, high


def is_quantized(dtype: DatumType) -> bool:
    return dtype in QUANTIZED


def quantized_fact(fact: TypedFact) -> bool:
    """Whether ``fact`` is a quantized tensor (an 8- or 16-bit integer type with qparams)."""
    return fact.qparams is not None and fact.dtype in QUANTIZED


def saturate(values: np.ndarray, dtype: DatumType, low: int | None = None, high: int | None = None) -> np.ndarray:
    """Clamp int64 values to [low, high] (the type's range by default) and cast."""
    if low is None:
        low, high = integer_limits(dtype)
    return np.clip(values, low, high).astype(dtype.np)


def clamp_to(values: np.ndarray, low: int, high: int, dtype) -> np.ndarray:
    """Clamp int64 ``values`` (modified in place) to [low, high] and cast them to ``dtype``."""
    np.maximum(values, low, out=values)
    out = np.empty(values.shape, dtype)
    np.minimum(values, high, out=out, casting="unsafe")
    return out


# the prepared-recipe protocol -----------------------------------------------------------------
def with_recipe(op, recipe: Any):
    """A copy of ``op`` (a frozen dataclass) carrying ``recipe``: what ``prepared`` returns."""
    prepared = copy.copy(op)
    prepared.__dict__["recipe"] = recipe
    return prepared


def recipe_of(op) -> Any:
    """The recipe ``op.prepared(facts)`` derived; a RunError when the op was evaluated without
    being prepared for its input facts (a quantized op cannot tell its scales from its values)."""
    recipe = op.__dict__.get("recipe")
    if recipe is None:
        raise RunError(f"{op.name} computes on quantized values and must be prepared for its input facts "
                       "(op.prepared(facts)) before eval")
    return recipe


def cached_recipe(op, inputs: list[TypedFact], derive) -> Any:
    """``derive()`` once per distinct quantization and type of ``inputs`` (and per constant
    input, by identity), kept on the op."""
    key = tuple((f.dtype, f.qparams, tuple(f.shape), id(f.konst) if f.konst is not None else None)
                for f in inputs)
    cache = op.__dict__.setdefault("_recipes", {})
    if key not in cache:
        if len(cache) > 16:
            cache.clear()
        cache[key] = derive()
    return cache[key]
