"""Pooling over the spatial axes of N,C,... tensors: max (with indices), average, Lp, global;
over N,H,W,C tensors (``data_format="NHWC"``, TFLite's pools, float or quantized) in pool_nhwc."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import QParams, TypedFact
from . import pool_nhwc
from .activations import Activation
from .base import Op, check_alloc, expect_inputs
from .conv_nhwc import DATA_FORMATS
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .quantized.conv import clamp_of
from .quantized.onnxruntime import average_pool_recipe
from .quantized.pool import pool_recipe
from .window import Window, pad_spatial, taps


def _pool_facts(op, inputs, window: Window, qparams: QParams | None = None):
    expect_inputs(inputs, 1, op)
    x = inputs[0]
    data_format = getattr(op, "data_format", "NCHW")
    if data_format not in DATA_FORMATS:
        raise AnalysisError(f"data_format must be one of {', '.join(DATA_FORMATS)}, got {data_format!r}")
    if data_format == "NHWC":
        if x.rank != 4 or window.rank != 2:
            raise AnalysisError(f"an NHWC {op.name} needs a 4-d input and a 2-d window, got {x} and {window}")
        out_h, out_w = window.output_dims(tuple(x.shape[1:3]))
        return TypedFact(x.dtype, (x.shape[0], out_h, out_w, x.shape[3]), qparams=qparams)
    if x.rank != window.rank + 2:
        raise AnalysisError(f"{op.name} with a {window.rank}-d kernel needs a rank {window.rank + 2} input, got {x}")
    return TypedFact(x.dtype, (*x.shape[:2], *window.output_dims(x.shape[2:])), qparams=qparams)


def _lowest(dtype: np.dtype):
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return np.asarray(-np.inf).astype(dtype)


@dataclass(frozen=True)
class MaxPool(Op):
    """Max over each window. With ``with_indices`` a second output holds, for each maximum,
    its flat index in the input (spatial part column-major when ``storage_order`` is 1).

    The output keeps the input's quantization. ``data_format`` "NHWC": (N,H,W,C) tensors;
    ``activation``: one fused by the optimizer (on integers a Clip, applied as a clamp).
    """

    window: Window
    with_indices: bool = False
    storage_order: int = 0
    data_format: str = "NCHW"
    activation: Activation | None = None

    @property
    def nboutputs(self) -> int:
        return 2 if self.with_indices else 1

    def output_facts(self, inputs):
        fact = _pool_facts(self, inputs, self.window, inputs[0].qparams)
        if self.with_indices and self.data_format != "NCHW":
            raise AnalysisError("MaxPool's indices output needs the NCHW data format")
        return [fact, TypedFact(DatumType.I64, fact.shape)] if self.with_indices else [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)
        s.equals(inputs[0].shape[0], outputs[0].shape[0])
        channels = 3 if self.data_format == "NHWC" else 1
        s.equals(inputs[0].shape[channels], outputs[0].shape[channels])

    def eval(self, inputs):
        x = inputs[0]
        if self.data_format == "NHWC":
            return [pool_nhwc.max_pool(x, self.window, self.activation)]
        begins, ends, out = self.window.concrete_pads(x.shape[2:])
        xp = pad_spatial(x, begins, ends, _lowest(x.dtype))
        if self.with_indices:
            return list(self._with_indices(x, xp, begins, out))
        y = None
        for _, view in taps(xp, self.window, out):
            if y is None:
                y = view.copy()
            else:
                np.maximum(y, view, out=y)
        return [pool_nhwc.activate(y, self.activation)]

    def _with_indices(self, x, xp, begins, out):
        y, best = None, None
        for index, (_, view) in enumerate(taps(xp, self.window, out)):
            if y is None:
                y, best = view.copy(), np.zeros(view.shape, dtype=np.int64)
                continue
            better = view > y
            np.copyto(y, view, where=better)
            np.copyto(best, index, where=better)
        kernel_taps = np.array(list(itertools.product(*(range(k) for k in self.window.kernel))),
                               dtype=np.int64).reshape(-1, self.window.rank)
        spatial = x.shape[2:]
        flat = np.zeros(y.shape, dtype=np.int64)
        stride = 1
        axes = range(self.window.rank) if self.storage_order else reversed(range(self.window.rank))
        for axis in axes:
            position = np.arange(out[axis], dtype=np.int64).reshape((-1,) + (1,) * (len(out) - axis - 1))
            coord = (position * self.window.strides[axis] - begins[axis]
                     + kernel_taps[best, axis] * self.window.dilations[axis])
            flat += coord * stride
            stride *= spatial[axis]
        planes = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * len(out))
        return y, flat + planes * stride


@dataclass(frozen=True)
class AveragePool(Op):
    """Average over each window (padding excluded unless ``count_include_pad``).

    ``data_format`` "NHWC": (N,H,W,C) tensors. ``quant``: the output's quantization; set, the
    input is a quantized tensor whose raw values are averaged with TFLite's integer rounding
    (``ops.quantized.pool``); with ``flavour="onnxruntime"``, onnxruntime's QLinearAveragePool
    (float32 averages requantized to ``quant``). ``activation``: one fused by the optimizer (a
    Clip when quantized).
    """

    window: Window
    count_include_pad: bool = False
    data_format: str = "NCHW"
    activation: Activation | None = None
    quant: QParams | None = None
    flavour: str = "reference"

    def _recipe(self, inputs):
        if self.flavour == "onnxruntime":
            assert self.quant is not None
            return cached_recipe(self, inputs, lambda: average_pool_recipe(
                inputs[0], self.quant, clamp_of(self.activation, inputs[0].dtype)))
        return cached_recipe(self, inputs, lambda: pool_recipe(inputs[0], self.activation))

    def prepared(self, inputs):
        return self if self.quant is None else with_recipe(self, self._recipe(inputs))

    def output_facts(self, inputs):
        fact = _pool_facts(self, inputs, self.window, self.quant)
        if self.quant is not None:
            if self.data_format != "NHWC":
                raise AnalysisError("a quantized AveragePool needs the NHWC data format")
            self._recipe(inputs)
        return [fact]

    rules = MaxPool.rules

    def eval(self, inputs):
        x = inputs[0]
        if self.data_format == "NHWC":
            return [pool_nhwc.average_pool(self, x, recipe_of(self) if self.quant is not None else None)]
        spatial = x.shape[2:]
        begins, ends, out = self.window.concrete_pads(spatial)
        compute_type = np.float32 if x.dtype == np.float16 else x.dtype
        xp = pad_spatial(x.astype(compute_type, copy=False), begins, ends, 0)
        total = np.zeros((*x.shape[:2], *out), dtype=compute_type)
        for _, view in taps(xp, self.window, out):
            total += view
        counts = self._counts(spatial, begins, ends, out)
        return [pool_nhwc.activate((total / counts.astype(compute_type)).astype(x.dtype, copy=False),
                                   self.activation)]

    def _counts(self, spatial, begins, ends, out) -> np.ndarray:
        """Elements each window averages: real ones, plus explicit pads if count_include_pad."""
        mask = np.ones(spatial, dtype=np.float64)[None, None]
        if self.count_include_pad:
            explicit = [self.window.explicit_pads(a) for a in range(self.window.rank)]
            if self.window.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                explicit = list(zip(begins, ends))
            mask = pad_spatial(mask, [b for b, _ in explicit], [e for _, e in explicit], 1.0)
            extra_begin = [b - e[0] for b, e in zip(begins, explicit)]
            extra_end = [e - x[1] for e, x in zip(ends, explicit)]
            mask = pad_spatial(mask, extra_begin, extra_end, 0.0)
        else:
            mask = pad_spatial(mask, begins, ends, 0.0)
        counts = np.zeros(out, dtype=np.float64)[None, None]
        for _, view in taps(mask, self.window, out):
            counts = counts + view
        return np.maximum(counts, 1.0)


@dataclass(frozen=True)
class GlobalPool(Op):
    """Reduce every spatial axis to 1 (``mode``: avg, max or lp with exponent ``p``)."""

    mode: str = "avg"
    p: int = 2

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.rank < 3:
            raise AnalysisError(f"{self.name} needs an N,C,... input of rank >= 3, got {x}")
        return [TypedFact(x.dtype, (*x.shape[:2], *([1] * (x.rank - 2))))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)
        s.equals(inputs[0].shape[0], outputs[0].shape[0])
        s.equals(inputs[0].shape[1], outputs[0].shape[1])

    def eval(self, inputs):
        x = inputs[0]
        axes = tuple(range(2, x.ndim))
        if self.mode == "max":
            return [np.max(x, axis=axes, keepdims=True)]
        if self.mode == "lp":
            work = np.abs(x.astype(np.float32 if x.dtype.itemsize < 4 else x.dtype))
            total = np.sum(work ** self.p, axis=axes, keepdims=True)
            return [(total ** (1.0 / self.p)).astype(x.dtype, copy=False)]
        return [np.mean(x, axis=axes, keepdims=True, dtype=np.float32 if x.dtype == np.float16 else None)
                .astype(x.dtype, copy=False)]


@dataclass(frozen=True)
class LpPool(Op):
    """``(sum |x|^p) ^ (1/p)`` over each window (padding contributes nothing); with ``mean``
    (TFLite's L2_POOL_2D, p = 2) the sum is divided by the taps inside the input first.
    ``data_format`` "NHWC": (N,H,W,C) tensors."""

    window: Window
    p: int = 2
    data_format: str = "NCHW"
    mean: bool = False
    count_include_pad: ClassVar[bool] = False

    def output_facts(self, inputs):
        if self.p <= 0:
            raise AnalysisError(f"LpPool needs p > 0, got {self.p}")
        if self.mean and (self.p != 2 or self.data_format != "NHWC"):
            raise AnalysisError("an averaged LpPool (TFLite's L2 pooling) needs p = 2 and NHWC")
        fact = _pool_facts(self, inputs, self.window)
        if not fact.dtype.is_float:
            raise AnalysisError(f"LpPool needs a floating-point input, got {inputs[0]}")
        return [fact]

    rules = MaxPool.rules
    _counts = AveragePool._counts

    def eval(self, inputs):
        x = inputs[0]
        if self.data_format == "NHWC":
            if self.mean:
                return [pool_nhwc.mean_lp_pool(self, x)]
            x = x.transpose(0, 3, 1, 2)
            return [self.eval_nchw(x).transpose(0, 2, 3, 1)]
        return [self.eval_nchw(x)]

    def eval_nchw(self, x: np.ndarray) -> np.ndarray:
        begins, ends, out = self.window.concrete_pads(x.shape[2:])
        work = np.float32 if x.dtype.itemsize < 4 else x.dtype
        powered = np.abs(x.astype(work)) ** self.p
        xp = pad_spatial(powered, begins, ends, 0)
        total = np.zeros((*x.shape[:2], *out), dtype=work)
        for _, view in taps(xp, self.window, out):
            total += view
        return (total ** (1.0 / self.p)).astype(x.dtype, copy=False)


@dataclass(frozen=True)
class MaxUnpool(Op):
    """Scatter pooled values back to their recorded flat indices in a zero tensor of the
    pooling input's inferred shape; an optional output_shape input pads that tensor at the end."""

    window: Window

    def _inferred(self, shape: tuple) -> tuple:
        window = self.window
        spatial = [(size - 1) * window.strides[a] - sum(window.explicit_pads(a)) + window.kernel[a]
                   for a, size in enumerate(shape[2:])]
        return (*shape[:2], *spatial)

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        x, indices = inputs[0], inputs[1]
        if x.rank != self.window.rank + 2:
            raise AnalysisError(f"MaxUnpool with a {self.window.rank}-d kernel needs a rank {self.window.rank + 2} "
                                f"input, got {x}")
        if indices.dtype != DatumType.I64 or indices.shape != x.shape:
            raise AnalysisError(f"indices should be i64 shaped as the input {x}, got {indices}")
        if len(inputs) == 2:
            return [TypedFact(x.dtype, self._inferred(x.shape))]
        shape = inputs[2]
        if shape.rank != 1 or shape.shape[0] != x.rank or not shape.dtype.is_integer:
            raise AnalysisError(f"output_shape should be an integer vector of {x.rank} values, got {shape}")
        value = shape.known_value()
        if value is None:
            return [TypedFact(x.dtype, [fresh_symbol() for _ in range(x.rank)])]
        return [TypedFact(x.dtype, [int(v) if isinstance(v, (int, np.integer)) else v for v in value.tolist()])]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)

    def eval(self, inputs):
        x, indices = inputs[0], inputs[1]
        inferred = self._inferred(x.shape)
        size = int(np.prod(inferred))
        flat = indices.reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= size):
            raise RunError(f"MaxUnpool index {flat[(flat < 0) | (flat >= size)][0]} is out of range for an "
                           f"output of shape {inferred}")
        y = np.zeros(size, dtype=x.dtype)
        y[flat] = x.reshape(-1)
        y = y.reshape(inferred)
        if len(inputs) == 3:
            target = tuple(int(v) for v in inputs[2])
            if len(target) != y.ndim or any(t < i for t, i in zip(target, inferred)):
                raise RunError(f"MaxUnpool output_shape {target} is smaller than the inferred shape {inferred}")
            check_alloc(target, x.dtype, "MaxUnpool output")
            y = pad_spatial(y, [0] * y.ndim, [t - i for t, i in zip(target, inferred)], 0)
        return [y]
