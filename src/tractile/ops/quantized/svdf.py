"""TFLite's integer SVDF, the recipe of a quantized core ``Svdf``: the feature projection
requantized into the memory's type (int16 as in TFLite, int8 with a zero point as in TFLite
Micro, which keyword models use), the time reduction requantized to the int8 output."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import integer_limits, scale_of, zero_of
from .fixedpoint import Requantizer, wrap32, wrap_bits


@dataclass
class SvdfQuantization:
    """The zero points and the two requantizations of an integer SVDF."""

    x_zero: int
    state_zero: int
    output_zero: int
    first: Requantizer
    second: Requantizer


def svdf_quantization(inputs: list[TypedFact], state_q: QParams | None, quant: QParams) -> SvdfQuantization:
    x_q, features_q, times_q = inputs[0].qparams, inputs[1].qparams, inputs[2].qparams
    if x_q is None or features_q is None or times_q is None or state_q is None:
        raise AnalysisError("an integer SVDF needs a quantized input, weights and state")
    state_scale = np.float32(scale_of(state_q))
    first = np.float32(np.float32(scale_of(x_q)) * np.float32(scale_of(features_q))) / state_scale
    second = np.float32(state_scale * np.float32(scale_of(times_q))) / np.float32(scale_of(quant))
    return SvdfQuantization(zero_of(x_q), zero_of(state_q), zero_of(quant),
                            Requantizer([np.float64(np.float32(first))]),
                            Requantizer([np.float64(np.float32(second))]))


def run_integer_svdf(recipe: SvdfQuantization, memory: np.ndarray, x: np.ndarray, features: np.ndarray,
                     times: np.ndarray, bias, rank: int, out_dtype: DatumType) -> np.ndarray:
    """One invocation on ``memory`` (batch, filters, frames), already shifted by one frame."""
    batch, filters = memory.shape[0], memory.shape[1]
    units = filters // rank
    state_dtype = DatumType.from_numpy(memory.dtype)
    offset = x.astype(np.float64) - recipe.x_zero
    dots = wrap32(np.rint(offset @ features.T.astype(np.float64)).astype(np.int64))  # int32 sums wrap, as TFLite's
    low, high = integer_limits(state_dtype)
    projected = np.clip(recipe.first(dots), low, high) + recipe.state_zero
    memory[:, :, -1] = wrap_bits(projected, 8 * memory.dtype.itemsize).astype(memory.dtype)
    centred = memory.astype(np.int64) - recipe.state_zero
    scratch = np.einsum("bfm,fm->bf", centred, times.astype(np.int64))
    acc = scratch.reshape(batch, units, rank).sum(axis=2)
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    acc = wrap32(acc)
    lo, hi = integer_limits(out_dtype)
    return np.clip(recipe.second(acc) + recipe.output_zero, lo, hi).astype(out_dtype.np)
