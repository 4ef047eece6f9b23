"""Element-wise unary ops: the shared base and plain math functions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, expect_inputs


@dataclass(frozen=True)
class UnaryOp(Op):
    """Base: one input, one output of the same shape (and datum type unless ``output_type``)."""

    output_type: ClassVar[DatumType | None] = None
    #: datum types the op accepts (None: any)
    accepts: ClassVar[str | None] = None

    def compute(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        fact = inputs[0]
        if self.accepts == "float" and not fact.dtype.is_float:
            raise AnalysisError(f"{self.name} needs a floating-point input, got {fact}")
        return [TypedFact(self.output_type or fact.dtype, fact.shape)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        if self.output_type is None:
            s.equals(inputs[0].datum_type, outputs[0].datum_type)
        else:
            s.equals(outputs[0].datum_type, self.output_type)

    def eval(self, inputs):
        x = inputs[0]
        out = self.compute(x)
        if not isinstance(out, np.ndarray):
            out = np.asarray(out)
        expected = self.output_type.np if self.output_type else x.dtype
        if out.dtype != expected:
            out = out.astype(expected)
        return [out]

    def cost(self, inputs):
        return {"flops": inputs[0].volume}


def _via_f32(fn):
    """Run a float function in f32 for f16/bf16 inputs (NumPy lacks some f16 kernels)."""

    def compute(self, x):
        if x.dtype.kind == "f" and x.dtype.itemsize >= 4:
            return fn(x)
        if x.dtype.kind in "fV" or x.dtype.name in ("bfloat16",):
            return fn(x.astype(np.float32)).astype(x.dtype)
        return fn(x)

    return compute


def _unary(name: str, fn, accepts: str | None = None, doc: str = "") -> type:
    cls = dataclass(frozen=True)(type(name, (UnaryOp,), {
        "compute": _via_f32(fn),
        "accepts": accepts,
        "__doc__": doc or f"Element-wise {name}.",
        "__module__": __name__,
        "__qualname__": name,
    }))
    return cls


Abs = _unary("Abs", np.abs)
Neg = _unary("Neg", np.negative)
Exp = _unary("Exp", np.exp, "float")
Log = _unary("Log", np.log, "float")
Sqrt = _unary("Sqrt", np.sqrt, "float")
Reciprocal = _unary("Reciprocal", np.reciprocal, "float")
Floor = _unary("Floor", np.floor, "float")
Ceil = _unary("Ceil", np.ceil, "float")
