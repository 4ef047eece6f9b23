"""TensorFlow fake quantization: FakeQuantWithMinMaxArgs, FakeQuantWithMinMaxVars and
FakeQuantWithMinMaxVarsPerChannel, as float element-wise ops.

TensorFlow first *nudges* the range so that zero is exactly representable: with the integer
range [qmin, qmax] (qmin = 1 when ``narrow_range``, qmax = 2^num_bits - 1), the scale is
(max - min) / (qmax - qmin), the zero point qmin - min / scale is rounded (halves away from
zero) and clamped to [qmin, qmax], and the nudged bounds are (qmin - zero point) * scale and
(qmax - zero point) * scale. The output is the input clamped to the nudged bounds, then
snapped to the grid: floor((x - nudged_min) / scale + 0.5) * scale + nudged_min, the division
being a product by the float32 reciprocal of the scale. Everything is computed in float32,
as TensorFlow does. The range must be known when loading (attributes, or constant inputs).
"""
from __future__ import annotations

import numpy as np

from ....ops import binary, unary
from ..registry import TfNode, Translated, tf_op


def nudged_range(low: np.ndarray, high: np.ndarray, num_bits: int, narrow_range: bool):
    """The nudged (min, max, scale), float32, elementwise over ``low`` and ``high``."""
    low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
    qmin, qmax = np.float32(1 if narrow_range else 0), np.float32((1 << num_bits) - 1)
    scale = ((high - low) / (qmax - qmin)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        zero_from_min = (qmin - low / scale).astype(np.float32)
    exact = zero_from_min.astype(np.float64)  # adding 0.5 to a float32 is exact in float64
    rounded = np.sign(exact) * np.floor(np.abs(exact) + 0.5)
    zero_point = np.where(zero_from_min < qmin, qmin, np.where(zero_from_min > qmax, qmax, rounded))
    zero_point = zero_point.astype(np.float32)
    return ((qmin - zero_point) * scale).astype(np.float32), ((qmax - zero_point) * scale).astype(np.float32), scale


def _fake_quant(node: TfNode, low, high):
    num_bits = node.int("num_bits", 8)
    if not 2 <= num_bits <= 16:
        raise node.error(f"num_bits must be between 2 and 16, got {num_bits}")
    if np.any(np.asarray(low) > np.asarray(high)):
        raise node.error(f"min {np.asarray(low).tolist()} is above max {np.asarray(high).tolist()}")
    nudged_min, nudged_max, scale = nudged_range(low, high, num_bits, node.bool("narrow_range", False))
    with np.errstate(divide="ignore"):
        inverse = (np.float32(1) / scale).astype(np.float32)
    clamped = node.wire("clamp_low", binary.Max(), [0, nudged_min])
    clamped = node.wire("clamp_high", binary.Min(), clamped + [nudged_max])
    steps = node.wire("shift", binary.Sub(), clamped + [nudged_min])
    steps = node.wire("steps", binary.Mul(), steps + [inverse])
    steps = node.wire("steps_half", binary.Add(), steps + [np.float32(0.5)])
    steps = node.wire("floor", unary.Floor(), steps)
    values = node.wire("scaled", binary.Mul(), steps + [scale])
    return Translated(binary.Add(), values + [nudged_min])


@tf_op("FakeQuantWithMinMaxArgs")
def fake_quant_args(node: TfNode):
    return _fake_quant(node, np.float32(node.float("min", -6.0)), np.float32(node.float("max", 6.0)))


def _range_input(node: TfNode, index: int, what: str, per_channel: bool) -> np.ndarray:
    value = node.const(index)
    if value is None:
        raise node.error(f"input {index} ({what}) must be a constant: tractile nudges the range when loading")
    value = np.asarray(value, np.float32)
    if per_channel and value.ndim != 1:
        raise node.error(f"{what} should be a vector (one value per channel), got shape {value.shape}")
    if not per_channel and value.size != 1:
        raise node.error(f"{what} should be a scalar, got shape {value.shape}")
    return value if per_channel else value.reshape(())


@tf_op("FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel")
def fake_quant_vars(node: TfNode):
    per_channel = node.op_type.endswith("PerChannel")
    return _fake_quant(node, _range_input(node, 1, "min", per_channel), _range_input(node, 2, "max", per_channel))
