"""Integer and quantised products: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.

Operands minus their zero points are 9-bit integers; their products summed in
float BLAS are exact (see DESIGN.md): f32 while the largest possible partial sum
stays below 2**24, f64 beyond. So these ops run on BLAS and stay bit-exact.
Accumulators wrap to i32 as ONNX allows; requantisation multiplies by
``scale_a * scale_b / scale_y`` (computed in the scales' type), rounds half to
even and saturates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .conv import convolve
from .matmul import matmul_shape
from .quant import constant_qparams, integer_range
from .window import Window, pad_spatial

EIGHT_BITS = (DatumType.I8, DatumType.U8)


def _check_eight_bits(fact: TypedFact, what: str) -> None:
    if fact.dtype not in EIGHT_BITS:
        raise AnalysisError(f"{what} should be i8 or u8, got {fact}")


def _check_zero_point(zero_point: TypedFact, operand: TypedFact, what: str, per: tuple = ()) -> None:
    """A zero point has the operand's type and is a scalar, a 1-vector or one of ``per`` shapes."""
    if zero_point.dtype != operand.dtype:
        raise AnalysisError(f"{what} is {zero_point.dtype} but its operand is {operand.dtype}")
    if zero_point.rank == 0 or zero_point.shape == (1,) or zero_point.shape in per:
        return
    raise AnalysisError(f"{what} {zero_point} should be a scalar" + (f" or shaped {per}" if per else ""))


def _offset(value: np.ndarray, zero_point: np.ndarray | None, per_row: bool = False) -> np.ndarray:
    """``value - zero_point`` as i32; a per-row zero point of a matrix applies to rows."""
    result = value.astype(np.int32)
    if zero_point is None:
        return result
    zero = zero_point.astype(np.int32)
    if per_row and zero.ndim == 1 and zero.size > 1:
        zero = zero.reshape(-1, 1)
    return result - zero


def exact_floats(a: np.ndarray, b: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer operands as the narrowest float in which BLAS sums of ``depth`` products are exact:
    f32 while ``depth * max|a| * max|b| < 2**24``, else f64."""
    bound = depth * max(int(np.abs(a).max(initial=0)), 1) * max(int(np.abs(b).max(initial=0)), 1)
    dtype = np.float32 if bound < 1 << 24 else np.float64
    return a.astype(dtype), b.astype(dtype)


def wrap_i32(accumulator: np.ndarray) -> np.ndarray:
    """An exact float accumulator as i32, wrapping as 32-bit accumulation would."""
    return accumulator.astype(np.int64).astype(np.int32)


def requantize(accumulator: np.ndarray, multiplier: np.ndarray, zero_point: np.ndarray,
               to: np.dtype) -> np.ndarray:
    """``saturate(round(accumulator * multiplier) + zero_point)`` as ``to``."""
    scaled = np.rint(accumulator * multiplier.astype(np.float64) + zero_point.astype(np.float64))
    low, high = integer_range(DatumType.from_numpy(to))
    return np.clip(scaled, low, high).astype(to)


def output_qparams(scale: TypedFact, zero: TypedFact):
    """The output's quantization when its scale and zero point are constant (per tensor)."""
    return constant_qparams(scale, zero, 0, 0) if scale.volume == 1 and zero.volume == 1 else None


def _matmul_cost(a: TypedFact, b: TypedFact) -> dict:
    flops = 2 * a.shape[-1]
    for dim in matmul_shape(a.shape, b.shape):
        flops = flops * dim
    return {"flops": flops}


def _conv_cost(op, x: TypedFact, w: TypedFact) -> dict:
    flops = 2
    for dim in (*_conv_facts(op, x, w, op.window, op.group), *w.shape[1:]):
        flops = flops * dim
    return {"flops": flops}


def _scale_math_type(*scales: np.ndarray) -> np.dtype:
    kinds = {s.dtype for s in scales}
    return np.dtype(np.float16) if kinds == {np.dtype(np.float16)} else np.dtype(np.float32)


@dataclass(frozen=True)
class MatMulInteger(Op):
    """``(A - a_zero_point) @ (B - b_zero_point)`` as i32; zero points are optional inputs
    (``zero_points`` says which: "", "a", "b" or "ab")."""

    zero_points: str = ""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2 + len(self.zero_points), self)
        a, b = inputs[0], inputs[1]
        _check_eight_bits(a, "A")
        _check_eight_bits(b, "B")
        rest = iter(inputs[2:])
        if "a" in self.zero_points:
            _check_zero_point(next(rest), a, "a_zero_point", ((a.shape[-2],),) if a.rank >= 2 else ())
        if "b" in self.zero_points:
            _check_zero_point(next(rest), b, "b_zero_point", ((b.shape[-1],),))
        return [TypedFact(DatumType.I32, matmul_shape(a.shape, b.shape, "MatMulInteger"))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, DatumType.I32)

    def _zero_points(self, inputs):
        rest = iter(inputs[2:])
        a_zero = next(rest) if "a" in self.zero_points else None
        b_zero = next(rest) if "b" in self.zero_points else None
        return a_zero, b_zero

    def eval(self, inputs):
        a_zero, b_zero = self._zero_points(inputs)
        a = _offset(inputs[0], a_zero, per_row=inputs[0].ndim >= 2)
        b = _offset(inputs[1], b_zero)
        return [wrap_i32(np.matmul(*exact_floats(a, b, a.shape[-1])))]

    def cost(self, inputs):
        return _matmul_cost(inputs[0], inputs[1])


@dataclass(frozen=True)
class QLinearMatMul(Op):
    """Quantised matmul: inputs a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp (ONNX order)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 8, self)
        a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = inputs
        for fact, what in ((a, "a"), (b, "b"), (y_zero, "y_zero_point")):
            _check_eight_bits(fact, what)
        for scale in (a_scale, b_scale, y_scale):
            if not scale.dtype.is_float:
                raise AnalysisError(f"scales must be floats, got {scale}")
        shape = matmul_shape(a.shape, b.shape, "QLinearMatMul")
        return [TypedFact(y_zero.dtype, shape, qparams=output_qparams(y_scale, y_zero))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, inputs[7].datum_type)

    def eval(self, inputs):
        a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = inputs
        per_row = a.ndim >= 2
        accumulator = np.matmul(*exact_floats(_offset(a, a_zero, per_row), _offset(b, b_zero), a.shape[-1]))
        work = _scale_math_type(a_scale, b_scale, y_scale)
        a_scale = a_scale.astype(work)
        if per_row and a_scale.ndim == 1 and a_scale.size > 1:
            a_scale = a_scale.reshape(-1, 1)
        multiplier = a_scale * b_scale.astype(work) / y_scale.astype(work)
        return [requantize(accumulator, multiplier, y_zero, y_zero.dtype)]

    def cost(self, inputs):
        return _matmul_cost(inputs[0], inputs[3])


def _conv_accumulate(x: np.ndarray, w: np.ndarray, window: Window, group: int) -> np.ndarray:
    """Exact convolution of offset integer operands, as floats: (N, M, *out)."""
    begins, ends, out = window.concrete_pads(x.shape[2:])
    xf, wf = exact_floats(x, w, int(np.prod(w.shape[1:])))
    return convolve(pad_spatial(xf, begins, ends, 0), wf, window, out, group)


def _conv_facts(op, x: TypedFact, w: TypedFact, window: Window, group: int) -> tuple:
    if x.rank < 3 or w.rank != x.rank:
        raise AnalysisError(f"{op.name} needs input and kernel of the same rank >= 3, got {x} and {w}")
    if x.shape[1] != w.shape[1] * group:
        raise AnalysisError(f"input has {x.shape[1]} channels, the kernel expects {w.shape[1] * group}")
    if not all(isinstance(k, int) for k in w.shape[2:]):
        raise AnalysisError(f"kernel spatial dims must be known, got {w}")
    spatial = window.for_kernel(w.shape[2:]).output_dims(x.shape[2:])
    return (x.shape[0], w.shape[0], *spatial)


def _channel_zero_point(zero_point: np.ndarray | None, rank: int) -> np.ndarray | None:
    if zero_point is None or zero_point.size <= 1:
        return zero_point
    return zero_point.reshape((-1,) + (1,) * (rank - 1))


@dataclass(frozen=True)
class ConvInteger(Op):
    """Convolution of ``x - x_zero_point`` by ``w - w_zero_point`` (per output channel allowed)
    as i32; zero points are optional inputs (``zero_points``: "", "x", "w" or "xw")."""

    window: Window
    group: int = 1
    zero_points: str = ""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2 + len(self.zero_points), self)
        x, w = inputs[0], inputs[1]
        _check_eight_bits(x, "x")
        _check_eight_bits(w, "w")
        rest = iter(inputs[2:])
        if "x" in self.zero_points:
            _check_zero_point(next(rest), x, "x_zero_point")
        if "w" in self.zero_points:
            _check_zero_point(next(rest), w, "w_zero_point", ((w.shape[0],),))
        return [TypedFact(DatumType.I32, _conv_facts(self, x, w, self.window, self.group))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, DatumType.I32)

    def eval(self, inputs):
        rest = iter(inputs[2:])
        x_zero = next(rest) if "x" in self.zero_points else None
        w_zero = next(rest) if "w" in self.zero_points else None
        x, w = inputs[0], inputs[1]
        window = self.window.for_kernel(w.shape[2:])
        accumulator = _conv_accumulate(_offset(x, x_zero), _offset(w, _channel_zero_point(w_zero, w.ndim)),
                                       window, self.group)
        return [wrap_i32(accumulator)]

    def cost(self, inputs):
        return _conv_cost(self, inputs[0], inputs[1])


@dataclass(frozen=True)
class QLinearConv(Op):
    """Quantised convolution: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, optional i32 bias."""

    window: Window
    group: int = 1

    def output_facts(self, inputs):
        expect_inputs(inputs, (8, 9), self)
        x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = inputs[:8]
        for fact, what in ((x, "x"), (w, "w"), (y_zero, "y_zero_point")):
            _check_eight_bits(fact, what)
        _check_zero_point(x_zero, x, "x_zero_point")
        _check_zero_point(w_zero, w, "w_zero_point", ((w.shape[0],),))
        if w_scale.rank > 1 or w_scale.rank == 1 and w_scale.shape[0] not in (1, w.shape[0]):
            raise AnalysisError(f"w_scale {w_scale} should be a scalar or one value per output channel")
        if len(inputs) == 9 and (inputs[8].dtype != DatumType.I32 or inputs[8].shape != (w.shape[0],)):
            raise AnalysisError(f"bias should be an i32 vector of {w.shape[0]} values, got {inputs[8]}")
        return [TypedFact(y_zero.dtype, _conv_facts(self, x, w, self.window, self.group),
                          qparams=output_qparams(y_scale, y_zero))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, inputs[7].datum_type)

    def eval(self, inputs):
        x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero = inputs[:8]
        window = self.window.for_kernel(w.shape[2:])
        accumulator = _conv_accumulate(_offset(x, x_zero), _offset(w, _channel_zero_point(w_zero, w.ndim)),
                                       window, self.group)
        spatial_ones = (1,) * (x.ndim - 2)
        if len(inputs) == 9:
            accumulator = accumulator + inputs[8].astype(np.float64).reshape((-1, *spatial_ones))
        multiplier = (x_scale.astype(np.float32) * w_scale.astype(np.float32) / y_scale.astype(np.float32))
        if multiplier.size > 1:
            multiplier = multiplier.reshape((-1, *spatial_ones))
        else:
            multiplier = multiplier.reshape(())
        return [requantize(accumulator, multiplier, y_zero, y_zero.dtype)]

    def cost(self, inputs):
        return _conv_cost(self, inputs[0], inputs[3])
