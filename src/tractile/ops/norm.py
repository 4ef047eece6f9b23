"""Normalisations over groups of axes: LayerNorm, RMSNorm, GroupNorm (InstanceNorm), MVN, LpNorm.

Statistics run in ``stash`` precision (f32 unless the input is f64) and the
normalised result is cast back to the input's datum type.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .broadcast import broadcast_shapes
from .nn import drop_unused_outputs, normalize_axis
from .quantized.norm import l2_norm_recipe
from .unary import UnaryOp


def compute_dtype(x: np.dtype, stash: DatumType = DatumType.F32) -> np.dtype:
    """The precision statistics run in: the stash type, widened to f64 for f64 inputs."""
    if x == np.float64 or stash == DatumType.F64:
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def _check_float(op: Op, fact: TypedFact) -> None:
    if not fact.dtype.is_float:
        raise AnalysisError(f"{op.name} needs a floating-point input, got {fact}")


def _check_param(name: str, param: TypedFact, x: TypedFact, target: tuple) -> None:
    if param.dtype != x.dtype:
        raise AnalysisError(f"{name} is {param.dtype} but the input is {x.dtype}")
    try:
        fits = broadcast_shapes(target, param.shape) == tuple(target)
    except AnalysisError:
        fits = False
    if not fits:
        raise AnalysisError(f"{name} {param} does not broadcast onto ({','.join(map(str, target))})")


@dataclass(frozen=True)
class LayerNorm(Op):
    """ONNX LayerNormalization: X, Scale, optional B; normalises axes ``axis..`` of X.

    ``outputs`` (1 to 3) says how many of Y, Mean, InvStdDev are produced; the
    statistics have X's leading dims then ones, in the ``stash`` datum type.
    """

    axis: int = -1
    epsilon: float = 1e-5
    stash: DatumType = DatumType.F32
    outputs: int = 1

    @property
    def nboutputs(self) -> int:
        return self.outputs

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        x = inputs[0]
        _check_float(self, x)
        axis = normalize_axis(self.axis, x.rank)
        for name, param in zip(("Scale", "B"), inputs[1:]):
            _check_param(name, param, x, x.shape)
        stats = TypedFact(self.stash, (*x.shape[:axis], *([1] * (x.rank - axis))))
        return [TypedFact(x.dtype, x.shape), stats, stats][:self.outputs]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x = inputs[0]
        axes = tuple(range(normalize_axis(self.axis, x.ndim), x.ndim))
        work = x.astype(compute_dtype(x.dtype, self.stash))
        mean = np.mean(work, axis=axes, keepdims=True)
        centred = work - mean
        inv_std = 1.0 / np.sqrt(np.mean(np.square(centred), axis=axes, keepdims=True) + work.dtype.type(self.epsilon))
        y = centred * inv_std * inputs[1].astype(work.dtype)
        if len(inputs) == 3:
            y += inputs[2].astype(work.dtype)
        stash = self.stash.np
        return [y.astype(x.dtype), mean.astype(stash), inv_std.astype(stash)][:self.outputs]

    def declutter(self, model, node):
        return drop_unused_outputs(model, node)

    def cost(self, inputs):
        return {"flops": 8 * inputs[0].volume}


@dataclass(frozen=True)
class RmsNorm(Op):
    """ONNX RMSNormalization: ``X / sqrt(mean(X², axes axis..) + epsilon) * Scale``."""

    axis: int = -1
    epsilon: float = 1e-5
    stash: DatumType = DatumType.F32

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x = inputs[0]
        _check_float(self, x)
        normalize_axis(self.axis, x.rank)
        _check_param("Scale", inputs[1], x, x.shape)
        return [TypedFact(x.dtype, x.shape)]

    rules = LayerNorm.rules

    def eval(self, inputs):
        x = inputs[0]
        axes = tuple(range(normalize_axis(self.axis, x.ndim), x.ndim))
        work = x.astype(compute_dtype(x.dtype, self.stash))
        rms = np.sqrt(np.mean(np.square(work), axis=axes, keepdims=True) + work.dtype.type(self.epsilon))
        return [(work / rms * inputs[1].astype(work.dtype)).astype(x.dtype)]

    def cost(self, inputs):
        return {"flops": 4 * inputs[0].volume}


@dataclass(frozen=True)
class GroupNorm(Op):
    """GroupNormalization / InstanceNormalization over N,C,... inputs: X, scale, bias.

    Mean and variance run per instance over ``groups`` groups of channels. The
    parameters are per channel, or per group with ``per_group_params`` (opset 18).
    """

    groups: int
    epsilon: float = 1e-5
    stash: DatumType = DatumType.F32
    per_group_params: bool = False

    def group_count(self, channels):
        return self.groups

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        x = inputs[0]
        _check_float(self, x)
        if x.rank < 2:
            raise AnalysisError(f"{self.name} needs an N,C,... input, got {x}")
        channels = x.shape[1]
        groups = self.group_count(channels)
        if isinstance(groups, int) and groups < 1 or isinstance(channels, int) and channels % groups:
            raise AnalysisError(f"{channels} channels cannot be split in {groups} groups")
        expected = groups if self.per_group_params else channels
        for name, param in zip(("scale", "bias"), inputs[1:]):
            if param.rank != 1 or param.shape[0] != expected or param.dtype != x.dtype:
                raise AnalysisError(f"{name} should be a ({expected},) {x.dtype} vector, got {param}")
        return [TypedFact(x.dtype, x.shape)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        for param in inputs[1:]:
            s.equals(param.rank, 1)
            if not self.per_group_params:
                s.equals(param.shape[0], inputs[0].shape[1], why="the input has {} channels, a parameter {}")

    def eval(self, inputs):
        x, scale, bias = inputs
        n, channels = x.shape[:2]
        groups = self.group_count(channels)
        work = x.astype(compute_dtype(x.dtype, self.stash)).reshape(n, groups, -1)
        mean = np.mean(work, axis=2, keepdims=True)
        centred = work - mean
        variance = np.mean(np.square(centred), axis=2, keepdims=True)
        normalised = (centred / np.sqrt(variance + work.dtype.type(self.epsilon))).reshape(x.shape)
        if self.per_group_params:
            scale, bias = (np.repeat(p, channels // groups) for p in (scale, bias))
        shape = (channels,) + (1,) * (x.ndim - 2)
        y = normalised * scale.reshape(shape).astype(work.dtype) + bias.reshape(shape).astype(work.dtype)
        return [y.astype(x.dtype)]

    def cost(self, inputs):
        return {"flops": 8 * inputs[0].volume}


@dataclass(frozen=True)
class InstanceNorm(GroupNorm):
    """InstanceNormalization: a GroupNorm with one group per channel."""

    groups: int = 0

    def group_count(self, channels):
        return channels


@dataclass(frozen=True)
class MeanVarianceNorm(UnaryOp):
    """``(X - E[X]) / (sqrt(E[X²] - E[X]²) + 1e-9)`` over ``axes`` (ONNX MeanVarianceNormalization)."""

    axes: tuple[int, ...] = (0, 2, 3)
    accepts = "float"

    def output_facts(self, inputs):
        facts = super().output_facts(inputs)
        for axis in self.axes:
            normalize_axis(axis, inputs[0].rank, "MeanVarianceNormalization axis")
        return facts

    def compute(self, x):
        axes = tuple(normalize_axis(a, x.ndim) for a in self.axes)
        work = x.astype(compute_dtype(x.dtype))
        mean = np.mean(work, axis=axes, keepdims=True)
        variance = np.mean(np.square(work), axis=axes, keepdims=True) - np.square(mean)
        return ((work - mean) / (np.sqrt(np.maximum(variance, 0)) + work.dtype.type(1e-9))).astype(x.dtype)


@dataclass(frozen=True)
class LpNorm(UnaryOp):
    """``X / max(||X||_p, epsilon)`` along ``axis`` (p = 1 or 2); a zero norm gives zeros.

    Quantized (``quant``), the L2 norm over the last axis of int8 values (TFLite's
    L2_NORMALIZATION, ``ops.quantized.norm``)."""

    axis: int = -1
    p: int = 2
    epsilon: float = 0.0
    accepts = "float"

    def output_facts(self, inputs):
        if self.p not in (1, 2):
            raise AnalysisError(f"LpNormalization supports p = 1 or 2, got {self.p}")
        facts = super().output_facts(inputs)
        normalize_axis(self.axis, inputs[0].rank)
        if self.quant is not None and (self.p != 2 or normalize_axis(self.axis, inputs[0].rank) != inputs[0].rank - 1):
            raise AnalysisError("a quantized LpNorm is an L2 norm over the last axis")
        return facts

    def quantized_recipe(self, x):
        return l2_norm_recipe(x, self.quant)

    def compute(self, x):
        axis = normalize_axis(self.axis, x.ndim)
        work = x.astype(compute_dtype(x.dtype))
        if self.p == 1:
            norm = np.sum(np.abs(work), axis=axis, keepdims=True)
        else:
            norm = np.sqrt(np.sum(np.square(work), axis=axis, keepdims=True))
        if self.epsilon:
            norm = np.maximum(norm, work.dtype.type(self.epsilon))
        safe = np.where(norm == 0, 1, norm)
        return np.where(norm == 0, 0, work / safe).astype(x.dtype)
