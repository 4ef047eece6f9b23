"""FULLY_CONNECTED: float, and int8/uint8/int16 with TFLite's integer requantization.

Integer products run on BLAS: operand products summed in float32 (when every partial
sum stays below 2**24) or float64 (below 2**53) are exact integers. The weights are
prepared once per weight array (transposed, offset, their column sums for the input
zero point), so a run is one matmul plus the requantization.

Two requantizations exist in TFLite. Its reference kernel (``flavour="reference"``, what
``OpResolverType.BUILTIN_REF`` runs) rescales the int32 accumulator in double precision
and rounds halves away from zero; TFLite Micro and TFLite's optimized kernels
(``flavour="micro"``) use the 32-bit fixed-point multiplier with double rounding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from .common import (
    TflOp,
    activation_range,
    apply_float_activation,
    check_activation,
    is_quantized,
    scale_of,
    scales_of,
    zero_of,
)
from .fixedpoint import Requantizer, multiply_by_quantized_multiplier_64, quantize_multiplier, round_half_away, wrap32
from .output import OutputStage

FLAVOURS = ("reference", "micro")


def exact_matmul(a: np.ndarray, b: np.ndarray, bound: float) -> np.ndarray:
    """``a @ b`` of integer-valued operands, exact: float32 BLAS when ``bound`` < 2**24."""
    work = np.float32 if bound < (1 << 24) else np.float64
    return np.matmul(a.astype(work, copy=False), b.astype(work, copy=False))


class IntegerRescale:
    """Accumulators to output integers: TFLite's requantization in either flavour.

    ``wide`` (int16 activations, 64-bit accumulators) uses the int64 multiplier variant
    in the micro flavour.
    """

    def __init__(self, input_scale: float, weight_scales: np.ndarray, output_scale: float, per_channel: bool,
                 flavour: str, wide: bool = False):
        self.flavour = flavour
        self.wide = wide
        si, so = np.float64(input_scale), np.float64(output_scale)
        if flavour == "reference":
            scale = (si * weight_scales.astype(np.float64)) / so
            self.scale = float(scale[0]) if scale.size == 1 else scale
            return
        if per_channel:
            reals = (si * weight_scales.astype(np.float64)) / so
        else:
            reals = np.array([np.float64(np.float32(input_scale) * weight_scales[0]) / so])
        pairs = [quantize_multiplier(r) for r in reals.tolist()]
        self.multiplier = np.array([m for m, _ in pairs], dtype=np.int64)
        self.shift = np.array([s for _, s in pairs], dtype=np.int64)
        if self.multiplier.size == 1:
            self.multiplier, self.shift = int(self.multiplier[0]), int(self.shift[0])
        self.requant = Requantizer.from_pairs(self.multiplier, self.shift)

    def __call__(self, acc: np.ndarray) -> np.ndarray:
        if self.flavour == "reference":
            return round_half_away(acc.astype(np.float64) * self.scale).astype(np.int64)
        if self.wide:
            return multiply_by_quantized_multiplier_64(acc, self.multiplier, self.shift)
        return self.requant(acc)


#: the largest double below 0.5: adding it (signed) then truncating rounds halves away from
#: zero exactly, as C's ``round`` does (adding 0.5 would round 0.49999999999999994 up)
HALF_BELOW = float(np.nextafter(0.5, 0.0))


class IntegerDense:
    """A quantized FULLY_CONNECTED prepared for one weight (and bias) array.

    The matmul runs on the raw input and the offset weights in an exact float type; the
    input zero-point correction (``x_zero * sum(weights)``) is folded into the bias. The
    reference flavour then rescales in double precision (one add, one multiply, a rounding
    of halves away from zero); the micro flavour requantizes in fixed point. 8-bit inputs
    accumulate in int32 in TFLite, which wraps modulo 2^32: when the accumulator's bound
    (products and bias) leaves int32, the exact sum is wrapped the same way first.
    """

    def __init__(self, op: FullyConnected, dtype: DatumType, w: np.ndarray, bias):
        x_q, w_q, y_q = op.iq(0), op.iq(1), op.oq(0)
        weight_scales = scales_of(w_q)
        w_zero = zero_of(w_q) if weight_scales.size == 1 else 0
        offset = w.astype(np.int64) - w_zero
        in_bound = {DatumType.I16: 32768, DatumType.U8: 255}.get(dtype, 128)
        bound = float(in_bound) * float(np.abs(offset).max(initial=0)) * w.shape[1]
        self.work = np.float32 if bound < (1 << 24) and op.flavour != "reference" else np.float64
        self.weights_t = np.ascontiguousarray(offset.T.astype(self.work))
        units = w.shape[0]
        total_bias = np.zeros(units, np.int64) if bias is None else bias.reshape(-1).astype(np.int64)
        total_bias = total_bias - zero_of(x_q) * offset.sum(axis=1)
        self.dtype = dtype.np
        self.zero = zero_of(y_q)
        self.low, self.high = activation_range(op.activation, y_q, dtype)
        self.flavour = op.flavour
        self.rescale = IntegerRescale(scale_of(x_q), weight_scales, scale_of(y_q), weight_scales.size > 1,
                                      op.flavour, dtype == DatumType.I16)
        self.bias = total_bias
        self.bias_f = total_bias.astype(np.float64)
        self.wraps = dtype != DatumType.I16 and bound + float(np.abs(total_bias).max(initial=0)) >= (1 << 31)
        if op.flavour != "reference" and dtype != DatumType.I16:
            self.output = OutputStage(self.rescale.requant, total_bias, self.zero, self.low, self.high, self.dtype,
                                      units, acc_bound=bound)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        if self.wraps:
            total = wrap32(np.rint(rows.astype(self.work) @ self.weights_t).astype(np.int64) + self.bias)
            return np.clip(self.rescale(total) + self.zero, self.low, self.high).astype(self.dtype)
        if self.flavour == "reference":
            scaled = np.matmul(rows, self.weights_t)
            scaled += self.bias_f
            scaled *= self.rescale.scale
            scaled += np.copysign(HALF_BELOW, scaled)
            np.trunc(scaled, out=scaled)
            scaled += self.zero
            np.maximum(scaled, self.low, out=scaled)
            out = np.empty(scaled.shape, self.dtype)
            np.minimum(scaled, self.high, out=out, casting="unsafe")
            return out
        acc = rows.astype(self.work) @ self.weights_t
        if self.dtype != np.int16:
            return self.output(acc)
        total = acc.astype(np.int64) + self.bias
        scaled = self.rescale(total) + self.zero
        return np.clip(scaled, self.low, self.high).astype(self.dtype)


@dataclass(frozen=True)
class FullyConnected(TflOp):
    """``y = activation(x @ W.T + bias)``; x flattened to (batch, W.shape[1]).

    Inputs: x, W (units, depth), optional bias (units). ``keep_num_dims`` keeps x's
    leading dims instead of flattening them to one batch axis.
    """

    activation: str = "NONE"
    keep_num_dims: bool = False
    has_bias: bool = True
    flavour: str = "reference"

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 if self.has_bias else 2, self)
        check_activation(self.activation)
        if self.flavour not in FLAVOURS:
            raise AnalysisError(f"flavour must be one of {FLAVOURS}, got {self.flavour!r}")
        self.check_quantization(inputs)
        x, w = inputs[0], inputs[1]
        if w.rank != 2:
            raise AnalysisError(f"weights must be 2-d (units, depth), got {w}")
        units, depth = w.shape
        if self.has_bias and inputs[2].volume != units:
            raise AnalysisError(f"bias {inputs[2]} should hold {units} values")
        if x.rank == 0:
            raise AnalysisError("the input must have rank >= 1")
        if self.keep_num_dims:
            if x.shape[-1] != depth:
                raise AnalysisError(f"input depth {x.shape[-1]} differs from the weights' {depth}")
            shape = (*x.shape[:-1], units)
        else:
            volume = x.volume
            if isinstance(volume, int) and isinstance(depth, int) and depth and volume % depth:
                raise AnalysisError(f"input {x} does not split in rows of {depth}")
            shape = (volume // depth if depth else 0, units)
        if x.dtype.is_float:
            if w.dtype != x.dtype:
                raise AnalysisError(f"float input with {w.dtype} weights (hybrid kernels) is not supported")
            return [self.fact(0, x.dtype, shape)]
        if not is_quantized(x.dtype) or not is_quantized(w.dtype):
            raise AnalysisError(f"unsupported input/weight types {x.dtype}/{w.dtype}")
        if self.iq(0) is None or self.iq(1) is None or self.oq(0) is None:
            raise AnalysisError("quantized FULLY_CONNECTED needs quantized input, weights and output")
        return [self.fact(0, x.dtype, shape)]

    def _kernel(self, x_dtype, w: np.ndarray, bias) -> IntegerDense:
        cache = self.__dict__.get("_prepared")
        if cache is not None and cache[0] is w and cache[1] is bias and cache[2] == x_dtype:
            return cache[3]
        kernel = IntegerDense(self, DatumType.from_numpy(x_dtype), w, bias)
        self.__dict__["_prepared"] = (w, bias, x_dtype, kernel)
        return kernel

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        depth = w.shape[1]
        rows = x.reshape(-1, depth) if depth else x.reshape(-1, 0)
        if x.dtype.kind == "f":
            y = rows @ w.T
            if self.has_bias:
                y += inputs[2].reshape(-1)
            y = apply_float_activation(y, self.activation)
            return [y.reshape(self._out_shape(x.shape, w.shape[0]))]
        kernel = self._kernel(x.dtype, w, inputs[2] if self.has_bias else None)
        return [kernel(rows).reshape(self._out_shape(x.shape, w.shape[0]))]

    @property
    def in_dtype_wide(self) -> bool:
        """int16 activations (TFLite's 16x8 kernels accumulate in 64 bits)."""
        return self.out_dtype(0, DatumType.I8) == DatumType.I16

    def _out_shape(self, x_shape, units):
        if self.keep_num_dims:
            return (*x_shape[:-1], units)
        return (-1, units)

    def cost(self, inputs):
        x, w = inputs[0], inputs[1]
        return {"flops": 2 * x.volume * w.shape[0]}

