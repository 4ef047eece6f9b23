"""Linear quantisation: ONNX's QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and
Quantize / Dequantize between floats and quantized facts (TFLite's QUANTIZE, DEQUANTIZE).

Scales and zero points are inputs. Their shape gives the granularity: one value
(per tensor), a vector along ``axis`` (per axis), or the input's shape with
``axis`` divided in blocks of ``block_size`` (blocked). Rounding is half to even;
integer targets saturate to their range, float8 targets saturate to their largest
finite value when ``saturate`` is set.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .base import Op, expect_inputs
from .nn import normalize_axis
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .quantized.quantize import dequantize_recipe, quantize_recipe

INTEGER_TARGETS = (DatumType.U8, DatumType.I8, DatumType.U16, DatumType.I16, DatumType.U4, DatumType.I4,
                   DatumType.U2, DatumType.I2)
FLOAT8_TARGETS = (DatumType.F8E4M3FN, DatumType.F8E4M3FNUZ, DatumType.F8E5M2, DatumType.F8E5M2FNUZ)
SMALL_FLOAT_TARGETS = (DatumType.F4E2M1, DatumType.F6E2M3, DatumType.F6E3M2)
QUANTIZED_TYPES = INTEGER_TARGETS + FLOAT8_TARGETS + SMALL_FLOAT_TARGETS


def integer_range(dtype: DatumType) -> tuple[int, int]:
    """The (min, max) an integer datum type holds."""
    import ml_dtypes

    info = ml_dtypes.iinfo(dtype.np) if dtype in (DatumType.U4, DatumType.I4, DatumType.U2, DatumType.I2) \
        else np.iinfo(dtype.np)
    return int(info.min), int(info.max)


def check_scale_layout(x_shape: tuple, scale: TypedFact, axis: int, block_size: int, what: str = "scale") -> None:
    """Raise an AnalysisError unless ``scale``'s shape is per tensor, per axis or blocked for ``x_shape``."""
    rank = len(x_shape)
    if scale.rank == 0 or scale.rank == 1 and scale.shape[0] == 1 and not block_size:
        return
    axis = normalize_axis(axis, max(rank, 1), "quantization axis")
    if not block_size:
        if scale.rank != 1 or scale.shape[0] != x_shape[axis]:
            raise AnalysisError(f"{what} {scale} should be a scalar or a ({x_shape[axis]},) vector along axis {axis} "
                                f"of the input ({','.join(map(str, x_shape))})")
        return
    if block_size < 0 or scale.rank != rank:
        raise AnalysisError(f"blocked quantization needs a positive block_size and a {what} of rank {rank}, "
                            f"got block_size {block_size} and {scale}")
    for index, (size, blocks) in enumerate(zip(x_shape, scale.shape)):
        if index == axis:
            if isinstance(size, int) and isinstance(blocks, int) and not (blocks - 1) * block_size < size <= \
                    blocks * block_size:
                raise AnalysisError(f"{what} {scale} has {blocks} blocks of {block_size} along axis {axis}, "
                                    f"which does not cover {size}")
        elif size != blocks:
            raise AnalysisError(f"{what} {scale} does not match the input ({','.join(map(str, x_shape))}) "
                                f"outside axis {axis}")


def same_granularity(zero_point: TypedFact, scale: TypedFact) -> bool:
    """Zero point and scale have one shape (a scalar and a 1-vector count as the same)."""
    def per_tensor(fact):
        return fact.rank == 0 or fact.shape == (1,)

    return zero_point.shape == scale.shape or per_tensor(zero_point) and per_tensor(scale)


def constant_qparams(scale: TypedFact, zero_point: TypedFact | None, axis: int, rank: int) -> QParams | None:
    """The quantization constant scale and zero point inputs describe (per tensor, or per axis
    of a tensor of ``rank``); None unless both are known."""
    if scale.konst is None or zero_point is not None and zero_point.konst is None:
        return None
    scales = tuple(float(np.float32(v)) for v in np.asarray(scale.konst, dtype=np.float32).reshape(-1))
    zeros = tuple(int(v) for v in np.asarray(zero_point.konst).reshape(-1)) if zero_point is not None \
        else (0,) * len(scales)
    if len(scales) == 1 and len(zeros) == 1:
        return QParams(scales, zeros)
    if len(zeros) != len(scales) or rank == 0:
        return None
    return QParams(scales, zeros, normalize_axis(axis, rank))


def broadcast_param(value: np.ndarray, x_shape: tuple, axis: int, block_size: int) -> np.ndarray:
    """A scale or zero point reshaped (or repeated, for blocks) to broadcast onto ``x_shape``."""
    if value.size == 1 and not block_size:
        return value.reshape(())
    axis = normalize_axis(axis, len(x_shape))
    if not block_size:
        shape = [1] * len(x_shape)
        shape[axis] = value.size
        return value.reshape(shape)
    return np.repeat(value, block_size, axis=axis).take(np.arange(x_shape[axis]), axis=axis)


def _work_float(dtype: np.dtype) -> np.dtype:
    """NumPy-native float for ``dtype`` (exotic floats and small ints compute in f32)."""
    if dtype in (np.float16, np.float32, np.float64):
        return np.dtype(dtype)
    return np.dtype(np.float32)


def _division_type(x: np.dtype, scale: np.dtype) -> np.dtype:
    """The precision of ``x / scale``: NumPy's promotion (f64 for i32 inputs), bf16 when both are."""
    if x.kind in "iu":
        return np.dtype(np.float64)
    try:
        return np.result_type(x, scale)
    except TypeError:
        return np.dtype(np.float32)


def quantize(scaled: np.ndarray, zero_point: np.ndarray | None, to: DatumType, saturate: bool = True) -> np.ndarray:
    """``scaled`` (= x / scale) plus the zero point, rounded and saturated into ``to``."""
    if to in INTEGER_TARGETS:
        low, high = integer_range(to)
        rounded = np.rint(scaled)
        if zero_point is not None:
            rounded = rounded + zero_point.astype(np.float64)
        return np.clip(rounded, low, high).astype(to.np)
    value = scaled.astype(np.float32) if scaled.dtype != np.float64 else scaled
    if zero_point is not None:
        value = value + zero_point.astype(value.dtype)
    if to in FLOAT8_TARGETS and saturate:
        import ml_dtypes

        largest = float(ml_dtypes.finfo(to.np).max)
        value = np.clip(value, -largest, largest)
    with np.errstate(over="ignore", invalid="ignore"):
        return value.astype(to.np)


@dataclass(frozen=True)
class QuantizeLinear(Op):
    """``saturate(round(x / scale) + zero_point)`` into ``to``; inputs x, scale, optional zero point.

    ``to`` None means the zero point's type (u8 without one). ``precision`` (a float
    datum type) forces the division's precision, else it is the wider of x's and the scale's.
    """

    to: DatumType | None = None
    axis: int = 1
    block_size: int = 0
    saturate: bool = True
    precision: DatumType | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        x, scale = inputs[0], inputs[1]
        if not (x.dtype.is_float or x.dtype == DatumType.I32) or not scale.dtype.is_float:
            raise AnalysisError(f"QuantizeLinear needs a float or i32 input and a float scale, got {x} and {scale}")
        to = self._target(inputs[2].dtype if len(inputs) == 3 else None)
        if to not in QUANTIZED_TYPES:
            raise AnalysisError(f"QuantizeLinear cannot quantize to {to}")
        check_scale_layout(x.shape, scale, self.axis, self.block_size)
        if len(inputs) == 3:
            zero_point = inputs[2]
            if zero_point.dtype != to or not same_granularity(zero_point, scale):
                raise AnalysisError(f"zero point {zero_point} should be {to} and shaped as the scale {scale}")
        qparams = None
        if to in INTEGER_TARGETS and not self.block_size:
            qparams = constant_qparams(scale, inputs[2] if len(inputs) == 3 else None, self.axis, x.rank)
        return [TypedFact(to, x.shape, qparams=qparams)]

    def _target(self, zero_point_type: DatumType | None) -> DatumType:
        return self.to or zero_point_type or DatumType.U8

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        if self.to is not None or len(inputs) < 3:
            s.equals(outputs[0].datum_type, self._target(None))
        else:
            s.equals(outputs[0].datum_type, inputs[2].datum_type)

    def eval(self, inputs):
        x, scale = inputs[0], inputs[1]
        precision = self.precision.np if self.precision is not None else _division_type(x.dtype, scale.dtype)
        work = _work_float(precision)
        scale = broadcast_param(scale.astype(work), x.shape, self.axis, self.block_size)
        zero_point = None
        if len(inputs) == 3:
            zero_point = broadcast_param(inputs[2], x.shape, self.axis, self.block_size)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = x.astype(work) / scale
        if precision != work:
            scaled = scaled.astype(precision).astype(work)
        to = self._target(DatumType.from_numpy(inputs[2].dtype) if len(inputs) == 3 else None)
        return [quantize(scaled, zero_point, to, self.saturate)]

    def cost(self, inputs):
        return {"flops": 3 * inputs[0].volume}


@dataclass(frozen=True)
class DequantizeLinear(Op):
    """``(x - zero_point) * scale`` as ``to`` (the scale's type unless ONNX's output_dtype says)."""

    folds_when_typing: ClassVar[bool] = False

    to: DatumType | None = None
    axis: int = 1
    block_size: int = 0

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        x, scale = inputs[0], inputs[1]
        if x.dtype not in QUANTIZED_TYPES + (DatumType.I32,) or not scale.dtype.is_float:
            raise AnalysisError(f"DequantizeLinear needs a quantized input and a float scale, got {x} and {scale}")
        check_scale_layout(x.shape, scale, self.axis, self.block_size)
        if len(inputs) == 3:
            zero_point = inputs[2]
            if zero_point.dtype != x.dtype or not same_granularity(zero_point, scale):
                raise AnalysisError(f"zero point {zero_point} should be {x.dtype} and shaped as the scale {scale}")
        to = self.to or scale.dtype
        if not to.is_float:
            raise AnalysisError(f"DequantizeLinear outputs floats, not {to}")
        return [TypedFact(to, x.shape)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        if self.to is not None:
            s.equals(outputs[0].datum_type, self.to)
        else:
            s.equals(outputs[0].datum_type, inputs[1].datum_type)

    def eval(self, inputs):
        x, scale = inputs[0], inputs[1]
        values = x.astype(np.float32)
        if len(inputs) == 3:
            values = values - broadcast_param(inputs[2].astype(np.float32), x.shape, self.axis, self.block_size)
        y = values * broadcast_param(scale.astype(np.float32), x.shape, self.axis, self.block_size)
        return [y.astype((self.to or DatumType.from_numpy(scale.dtype)).np)]

    def cost(self, inputs):
        return {"flops": 2 * inputs[0].volume}


@dataclass(frozen=True)
class DynamicQuantizeLinear(Op):
    """u8 quantisation of an f32 tensor with a scale and zero point computed from its range
    (widened to include 0); outputs y, scale, zero point."""

    @property
    def nboutputs(self) -> int:
        return 3

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.dtype != DatumType.F32:
            raise AnalysisError(f"DynamicQuantizeLinear needs an f32 input, got {x}")
        return [TypedFact(DatumType.U8, x.shape), TypedFact(DatumType.F32, ()), TypedFact(DatumType.U8, ())]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        x = inputs[0]
        high = np.float32(max(0.0, float(np.max(x)))) if x.size else np.float32(0)
        low = np.float32(min(0.0, float(np.min(x)))) if x.size else np.float32(0)
        scale = np.float32((high - low) if high != low else 1.0) / np.float32(255)
        zero_point = np.rint(np.clip(np.float32(0) - low / scale, 0, 255))
        y = np.clip(np.rint(x / scale) + zero_point, 0, 255).astype(np.uint8)
        return [y, np.asarray(scale, dtype=np.float32), np.asarray(zero_point).astype(np.uint8)]


@dataclass(frozen=True)
class Quantize(Op):
    """Quantize to ``to`` integers of the quantization ``quant`` (the output fact's qparams):
    floats with TFLite's rounding (halves away from zero), a quantized input requantized from
    its fact's qparams (``ops.quantized.quantize``)."""

    elementwise: ClassVar[bool] = True

    to: DatumType
    quant: QParams

    def _recipe(self, inputs: list[TypedFact]):
        return cached_recipe(self, inputs, lambda: quantize_recipe(inputs[0], self.quant, self.to))

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        self._recipe(inputs)
        return [TypedFact(self.to, inputs[0].shape, qparams=self.quant)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(outputs[0].datum_type, self.to)

    def prepared(self, inputs):
        return with_recipe(self, self._recipe(inputs))

    def eval(self, inputs):
        return [recipe_of(self)(np.asarray(inputs[0]))]

    def cost(self, inputs):
        return {"flops": 2 * inputs[0].volume}


@dataclass(frozen=True)
class Dequantize(Op):
    """The real values (float32) of a quantized input, from its fact's qparams."""

    elementwise: ClassVar[bool] = True

    def _recipe(self, inputs: list[TypedFact]):
        return cached_recipe(self, inputs, lambda: dequantize_recipe(inputs[0]))

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        self._recipe(inputs)
        return [TypedFact(DatumType.F32, inputs[0].shape)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(outputs[0].datum_type, DatumType.F32)

    def prepared(self, inputs):
        return with_recipe(self, self._recipe(inputs))

    def eval(self, inputs):
        return [recipe_of(self)(np.asarray(inputs[0]))]

    def cost(self, inputs):
        return {"flops": 2 * inputs[0].volume}
