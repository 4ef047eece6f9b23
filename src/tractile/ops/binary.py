"""Broadcasting element-wise binary ops: arithmetic (Add, Sub, Mul, Div, Pow...)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..dim import TDim
from ..errors import AnalysisError
from ..fact import TypedFact
from ..graph import OutletId
from ..patch import ModelPatch
from .base import Op, expect_inputs


def broadcast_shapes(*shapes) -> tuple:
    """NumPy broadcasting over dims that may be symbolic (a symbol against n>1 gives n)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        result = 1
        for dim in dims:
            if dim == 1 or dim == result:
                continue
            if result == 1:
                result = dim
            elif isinstance(result, TDim) and isinstance(dim, int):
                result = dim
            elif isinstance(result, int) and isinstance(dim, TDim):
                continue
            elif isinstance(result, TDim) and isinstance(dim, TDim):
                continue
            else:
                raise AnalysisError(
                    "cannot broadcast shapes " + " and ".join("(" + ",".join(map(str, s)) + ")" for s in shapes)
                    + f": axis {axis} has {result} and {dim}")
        out.append(result)
    return tuple(out)


def _arr(value) -> np.ndarray:
    return value if isinstance(value, np.ndarray) else np.asarray(value)


@dataclass(frozen=True)
class BinaryOp(Op):
    """Base: both inputs share a datum type; the output broadcasts their shapes."""

    #: datum type of the output when it is not the inputs' (comparisons: bool)
    output_type: ClassVar[DatumType | None] = None
    #: whether both operands must have the same datum type
    same_types: ClassVar[bool] = True

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def result_type(self, a: DatumType, b: DatumType) -> DatumType:
        return self.output_type or a

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        a, b = inputs
        if self.same_types and a.dtype != b.dtype:
            raise AnalysisError(f"{self.name} needs operands of one datum type, got {a.dtype} and {b.dtype} "
                                f"({a}; {b})")
        shape = broadcast_shapes(a.shape, b.shape)
        fact = TypedFact(self.result_type(a.dtype, b.dtype), shape)
        if a.sym_value is not None or b.sym_value is not None:
            fact.sym_value = _symbolic(self, a, b)
        return [fact]

    def rules(self, s, inputs, outputs):
        if self.same_types:
            s.equals(inputs[0].datum_type, inputs[1].datum_type,
                     why=f"{self.name} operands have different datum types: {{}} and {{}}")
        if self.output_type is not None:
            s.equals(outputs[0].datum_type, self.output_type)
        elif self.same_types:
            s.equals(outputs[0].datum_type, inputs[0].datum_type)
        s.given_all([inputs[0].shape, inputs[1].shape],
                    lambda s, a, b: s.equals(outputs[0].shape, broadcast_shapes(a, b)))

    def eval(self, inputs):
        a, b = inputs
        out = _arr(self.compute(a, b))
        if self.output_type is None and out.dtype != a.dtype and a.dtype != object:
            out = out.astype(a.dtype)
        return [out]

    def cost(self, inputs):
        return {"flops": broadcast_volume(inputs)}

    def declutter(self, model, node):
        return _neutral_operand(self, model, node)


def broadcast_volume(inputs) -> object:
    total = 1
    for dim in broadcast_shapes(*(f.shape for f in inputs)):
        total = total * dim
    return total


def _symbolic(op, a: TypedFact, b: TypedFact):
    va, vb = a.known_value(), b.known_value()
    if va is None or vb is None:
        return None
    try:
        return np.asarray(op.eval([va.astype(object), vb.astype(object)])[0], dtype=object)
    except Exception:  # noqa: BLE001 - a symbolic value is a bonus, never required
        return None


def _neutral_operand(op, model, node):
    """x+0, x-0, x*1, x/1, x**1 -> x when the constant does not change x's shape or type."""
    neutral = getattr(op, "neutral", None)
    if neutral is None:
        return None
    slots = (1, 0) if getattr(op, "commutative", False) else (1,)
    for slot in slots:
        konst = model.outlet_fact(node.inputs[slot]).konst
        if konst is None or konst.dtype == object or not np.all(konst == neutral):
            continue
        other = node.inputs[1 - slot]
        if model.outlet_fact(other).same_type_and_shape(node.outputs[0].fact):
            patch = ModelPatch(model, f"drop neutral operand of {node.name}")
            patch.shunt(OutletId(node.id, 0), patch.tap(other))
            patch.obliterate(node.id)
            return patch
    return None


@dataclass(frozen=True)
class Add(BinaryOp):
    neutral: ClassVar[float] = 0
    commutative: ClassVar[bool] = True

    def compute(self, a, b):
        return a + b


@dataclass(frozen=True)
class Sub(BinaryOp):
    neutral: ClassVar[float] = 0

    def compute(self, a, b):
        return a - b


@dataclass(frozen=True)
class Mul(BinaryOp):
    neutral: ClassVar[float] = 1
    commutative: ClassVar[bool] = True

    def compute(self, a, b):
        return a * b


@dataclass(frozen=True)
class Div(BinaryOp):
    """Division; integers truncate toward zero (as C, ONNX and TFLite do)."""

    neutral: ClassVar[float] = 1

    def compute(self, a, b):
        if a.dtype == object or b.dtype == object:
            return a // b
        if a.dtype.kind in "iu":
            if a.dtype.kind == "u":
                return np.floor_divide(a, b)
            quotient = np.floor_divide(a, b)
            inexact = (quotient * b != a) & ((a < 0) != (b < 0))
            return quotient + inexact.astype(a.dtype)
        return a / b


@dataclass(frozen=True)
class Pow(BinaryOp):
    """``a ** b``; the exponent may have another datum type (the result has the base's)."""

    same_types: ClassVar[bool] = False
    neutral: ClassVar[float] = 1

    def compute(self, a, b):
        if a.dtype.kind in "iu":
            return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
        if b.dtype != a.dtype:
            b = b.astype(a.dtype)
        if a.dtype == np.float16:
            return np.power(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
        return np.power(a, b)

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, inputs[0].datum_type)
        s.given_all([inputs[0].shape, inputs[1].shape],
                    lambda s, a, b: s.equals(outputs[0].shape, broadcast_shapes(a, b)))
