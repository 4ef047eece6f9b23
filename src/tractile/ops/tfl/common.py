"""What every TFLite-semantics op shares: the :class:`TflOp` base, quantization and activations.

A :class:`TflOp` carries the quantization of its inputs (``in_q``) and outputs (``out_q``)
and its output datum types (``out_dtypes``), as a TFLite operator sees them in its tensors.
Kernels derive their fixed-point parameters from these once (cached), so ``eval`` only
does arithmetic.
"""
from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from ..base import Op

#: TFLite's fused activation functions, by their schema names
ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT")

@dataclass(frozen=True)
class TflOp(Op):
    """Base of the TFLite ops: quantization and datum types of the operator's tensors.

    ``in_q[i]`` / ``out_q[j]``: the :class:`QParams` of input i / output j (None when not
    quantized); ``out_dtypes``: output datum types when the op cannot infer them;
    ``version``: the operator version read from (and written to) .tflite files.
    """

    _: KW_ONLY
    in_q: tuple = ()
    out_q: tuple = ()
    out_dtypes: tuple = ()
    version: int = field(default=1, compare=False)

    def __init_subclass__(cls, **kwargs):
        named = "name" in cls.__dict__
        super().__init_subclass__(**kwargs)
        if not named:
            cls.name = "Tfl" + cls.__name__

    def derived(self, key, build):
        """A kernel parameter derived once per ``key`` (e.g. a datum type) from the op's attributes."""
        cache = self.__dict__.get("_derived")
        if cache is None:
            cache = self.__dict__["_derived"] = {}
        if key not in cache:
            cache[key] = build()
        return cache[key]

    # quantization ------------------------------------------------------------------------
    def iq(self, index: int) -> QParams | None:
        return self.in_q[index] if index < len(self.in_q) else None

    def oq(self, index: int = 0) -> QParams | None:
        return self.out_q[index] if index < len(self.out_q) else None

    def out_dtype(self, index: int, default: DatumType) -> DatumType:
        return self.out_dtypes[index] if index < len(self.out_dtypes) and self.out_dtypes[index] else default

    def fact(self, index: int, dtype: DatumType, shape) -> TypedFact:
        """The fact of output ``index`` (its datum type may come from ``out_dtypes``)."""
        return TypedFact(self.out_dtype(index, dtype), shape, qparams=self.oq(index))

    def check_quantization(self, inputs: list[TypedFact]) -> None:
        """Raise unless the input facts carry the quantization this op was built for."""
        for index, fact in enumerate(inputs):
            expected = self.iq(index)
            if expected is not None and fact.qparams is not None and fact.qparams != expected:
                raise AnalysisError(f"input {index} is quantized as {fact.qparams}, the op expects {expected}")

    def attributes(self):
        shown = super().attributes()
        for key in ("in_q", "out_q"):
            if key in shown:
                del shown[key]
        if "out_dtypes" in shown:
            shown["out_dtypes"] = [str(d) for d in self.out_dtypes]
        return shown


def apply_float_activation(y: np.ndarray, activation: str) -> np.ndarray:
    """A fused activation applied in place on a float result (returns it)."""
    if activation == "NONE":
        return y
    if activation == "RELU":
        return np.maximum(y, 0, out=y)
    if activation == "RELU6":
        return np.clip(y, 0, 6, out=y)
    if activation == "RELU_N1_TO_1":
        return np.clip(y, -1, 1, out=y)
    if activation == "TANH":
        return np.tanh(y, out=y)
    if activation == "SIGN_BIT":
        return np.signbit(y).astype(y.dtype)
    raise AnalysisError(f"unknown fused activation {activation}")


def check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise AnalysisError(f"unknown fused activation {activation!r}; expected one of {', '.join(ACTIVATIONS)}")



def expect_dtype(fact: TypedFact, allowed, what: str) -> None:
    if fact.dtype not in allowed:
        raise AnalysisError(f"{what} must be {' or '.join(str(d) for d in allowed)}, got {fact}")




def same_padding(size: int, kernel: int, stride: int, dilation: int, padding: str) -> tuple[int, int, int]:
    """(output size, padding before, padding after) of TFLite's SAME/VALID windows."""
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        out = (size + stride - 1) // stride
    elif padding == "VALID":
        out = (size + stride - effective) // stride
    else:
        raise AnalysisError(f"padding must be SAME or VALID, got {padding!r}")
    if out < 0:
        raise AnalysisError(f"a window of {effective} does not fit in {size}")
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2, total - total // 2
