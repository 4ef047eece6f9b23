"""onnxruntime's quantized contrib ops (domain ``com.microsoft``), what its quantizer writes in the
QOperator format: QLinearAdd, QLinearMul, QLinearAveragePool, QLinearGlobalAveragePool,
QLinearConcat, QLinearSigmoid, QLinearLeakyRelu and QGemm.

Scales and zero points are inputs (per tensor; QGemm's weights may be per column). Each op
computes by the quantized core op of its family in ``flavour="onnxruntime"`` (onnxruntime's
arithmetic, ``ops.quantized.onnxruntime``), built for the quantization its inputs carry at
run time; ``passes.qlinear`` replaces them by those core ops when the parameters are constant.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .activations import LeakyRelu, Sigmoid
from .array import Concat
from .base import Op, expect_inputs
from .binary import Add, Mul
from .broadcast import broadcast_shapes
from .matmul import MatMul, matmul_shape
from .pool import AveragePool
from .quant import constant_qparams
from .window import Window

EIGHT_BITS = (DatumType.I8, DatumType.U8)
ORT = "onnxruntime"


def qparams_of(scale: TypedFact, zero: TypedFact) -> QParams | None:
    """Per-tensor quantization from constant scale and zero point facts (None when unknown)."""
    if scale.volume != 1 or zero.volume != 1:
        raise AnalysisError(f"scale {scale} and zero point {zero} must hold one value each")
    return constant_qparams(scale, zero, 0, 0)


def run_qparams(scale: np.ndarray, zero: np.ndarray, axis: int | None = None) -> QParams:
    """Quantization from run-time values (``axis`` for a per-channel scale)."""
    scales = tuple(float(np.float32(v)) for v in np.asarray(scale, np.float32).reshape(-1))
    zeros = tuple(int(v) for v in np.asarray(zero).reshape(-1))
    if len(zeros) == 1 and len(scales) > 1:
        zeros = zeros * len(scales)
    return QParams(scales, zeros, axis if len(scales) > 1 else None)


def check_eight_bits(op, *facts: TypedFact) -> None:
    for fact in facts:
        if fact.dtype not in EIGHT_BITS:
            raise AnalysisError(f"{op.name} takes int8 or uint8 tensors, got {fact}")


def _run(op, facts: list[TypedFact], values: list[np.ndarray]) -> np.ndarray:
    return op.prepared(facts).eval(values)[0]


def _fact(value: np.ndarray, q: QParams) -> TypedFact:
    return TypedFact(DatumType.from_numpy(value.dtype), value.shape, qparams=q)


@dataclass(frozen=True)
class QLinearBinary(Op):
    """QLinearAdd / QLinearMul (``kind`` "add" / "mul"): A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp."""

    kind: str = "add"

    def core(self, quant: QParams):
        return (Add if self.kind == "add" else Mul)(quant=quant, flavour=ORT)

    def output_facts(self, inputs):
        expect_inputs(inputs, 8, self)
        a, b, zc = inputs[0], inputs[3], inputs[7]
        check_eight_bits(self, a, b, zc)
        if a.dtype != b.dtype or zc.dtype != a.dtype:
            raise AnalysisError(f"{self.name} takes inputs and output of one type, got {a}, {b} and {zc}")
        return [TypedFact(a.dtype, broadcast_shapes(a.shape, b.shape), qparams=qparams_of(inputs[6], zc))]

    def eval(self, inputs):
        a, sa, za, b, sb, zb, sc, zc = inputs
        facts = [_fact(a, run_qparams(sa, za)), _fact(b, run_qparams(sb, zb))]
        return [_run(self.core(run_qparams(sc, zc)), facts, [a, b])]


@dataclass(frozen=True)
class QLinearAveragePool(Op):
    """QLinearAveragePool (``window``; NCHW, or NHWC with ``channels_last``), and
    QLinearGlobalAveragePool (``window`` None): X, X_scale, X_zp, Y_scale, Y_zp."""

    window: Window | None = None
    count_include_pad: bool = False
    channels_last: bool = False

    def core(self, quant: QParams | None, spatial: tuple) -> AveragePool:
        window = self.window if self.window is not None else Window.make(kernel=spatial)
        return AveragePool(window, self.count_include_pad, data_format="NHWC", quant=quant, flavour=ORT)

    def _spatial(self, x: TypedFact) -> tuple:
        if x.rank != 4:
            raise AnalysisError(f"{self.name} computes 2-d pools, got {x}")
        spatial = tuple(x.shape[1:3] if self.channels_last else x.shape[2:])
        if self.window is None and not all(isinstance(d, int) for d in spatial):
            raise AnalysisError(f"{self.name} needs known spatial dims, got {x}")
        return spatial

    def output_facts(self, inputs):
        expect_inputs(inputs, 5, self)
        x = inputs[0]
        check_eight_bits(self, x, inputs[4])
        quant = qparams_of(inputs[3], inputs[4])
        nhwc = x if self.channels_last else TypedFact(x.dtype, (x.shape[0], *x.shape[2:], x.shape[1]))
        shape = self.core(None, self._spatial(x)).output_facts([nhwc])[0].shape
        if not self.channels_last:
            shape = (shape[0], shape[3], shape[1], shape[2])
        return [TypedFact(x.dtype, shape, qparams=quant)]

    def eval(self, inputs):
        x, sx, zx, sy, zy = inputs
        nhwc = x if self.channels_last else np.transpose(x, (0, 2, 3, 1))
        spatial = tuple(int(d) for d in nhwc.shape[1:3])
        y = _run(self.core(run_qparams(sy, zy), spatial), [_fact(nhwc, run_qparams(sx, zx))], [nhwc])
        return [y if self.channels_last else np.ascontiguousarray(np.transpose(y, (0, 3, 1, 2)))]


@dataclass(frozen=True)
class QLinearConcat(Op):
    """QLinearConcat: Y_scale, Y_zp, then (X, X_scale, X_zp) for each input."""

    axis: int = 0

    def output_facts(self, inputs):
        if len(inputs) < 5 or (len(inputs) - 2) % 3:
            raise AnalysisError(f"{self.name} takes Y_scale, Y_zp and (tensor, scale, zero point) triples, "
                                f"got {len(inputs)} inputs")
        parts = inputs[2::3]
        check_eight_bits(self, *parts, inputs[1])
        fact = Concat(self.axis).output_facts([TypedFact(p.dtype, p.shape) for p in parts])[0]
        return [TypedFact(fact.dtype, fact.shape, qparams=qparams_of(inputs[0], inputs[1]))]

    def eval(self, inputs):
        parts = inputs[2::3]
        facts = [_fact(p, run_qparams(s, z)) for p, s, z in zip(parts, inputs[3::3], inputs[4::3])]
        return [_run(Concat(self.axis, quant=run_qparams(inputs[0], inputs[1]), flavour=ORT), facts, list(parts))]


@dataclass(frozen=True)
class QLinearUnary(Op):
    """QLinearSigmoid (``kind`` "sigmoid") and QLinearLeakyRelu ("leaky_relu", ``alpha``):
    X, X_scale, X_zp, Y_scale, Y_zp."""

    kind: str = "sigmoid"
    alpha: float = 0.01

    def core(self, quant: QParams):
        if self.kind == "sigmoid":
            return Sigmoid(quant=quant, flavour=ORT)
        return LeakyRelu(self.alpha, quant=quant, flavour=ORT)

    def output_facts(self, inputs):
        expect_inputs(inputs, 5, self)
        check_eight_bits(self, inputs[0], inputs[4])
        return [TypedFact(inputs[0].dtype, inputs[0].shape, qparams=qparams_of(inputs[3], inputs[4]))]

    def eval(self, inputs):
        x, sx, zx, sy, zy = inputs
        return [_run(self.core(run_qparams(sy, zy)), [_fact(x, run_qparams(sx, zx))], [x])]


@dataclass(frozen=True)
class QGemm(Op):
    """QGemm with a quantized output: A, A_scale, A_zp, B, B_scale, B_zp, (C: int32 bias),
    Y_scale, Y_zp; ``alpha`` 1, A not transposed."""

    trans_b: bool = False
    has_bias: bool = False

    def core(self, quant: QParams) -> MatMul:
        return MatMul(has_bias=self.has_bias, transpose_b=self.trans_b, quant=quant, flavour=ORT)

    def output_facts(self, inputs):
        expect_inputs(inputs, 9 if self.has_bias else 8, self)
        a, b, zy = inputs[0], inputs[3], inputs[-1]
        check_eight_bits(self, a, b, zy)
        if a.rank != 2 or b.rank != 2:
            raise AnalysisError(f"{self.name} multiplies matrices, got {a} and {b}")
        shape = matmul_shape(a.shape, (b.shape[1], b.shape[0]) if self.trans_b else b.shape)
        return [TypedFact(zy.dtype, shape, qparams=qparams_of(inputs[-2], zy))]

    def eval(self, inputs):
        a, sa, za, b, sb, zb = inputs[:6]
        b_q = run_qparams(sb, zb, 0 if self.trans_b else 1)
        facts = [_fact(a, run_qparams(sa, za)), _fact(b, b_q)]
        values = [a, b]
        if self.has_bias:
            facts.append(TypedFact(DatumType.I32, inputs[6].shape))
            values.append(inputs[6].astype(np.int32))
        return [_run(self.core(run_qparams(inputs[-2], inputs[-1])), facts, values)]
