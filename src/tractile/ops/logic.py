"""Comparisons, logical and bitwise ops, Where, and the float tests IsNaN and IsInf.

Comparisons decide on symbolic dims when the sign of the difference is known (dims are
never negative), so a shape computation like ``Where(Equal(shape, -1), ...)`` resolves
during analysis.
"""
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
from .binary import BinaryOp
from .broadcast import broadcast_shapes
from .quantized.common import with_recipe
from .quantized.compare import comparison_recipe
from .symbolic_values import dim_signs, symbolic_result, undecided, value_fact
from .unary import UnaryOp, needs_f32

_BOOL = DatumType.BOOL


@dataclass(frozen=True)
class Comparison(BinaryOp):
    """Base: a bool tensor telling where the relation between the operands holds.

    Quantized 8-bit operands (both facts with qparams) compare as the reals they stand for,
    by TFLite's rescaling (``ops.quantized.compare``), prepared from the facts."""

    elementwise: ClassVar[bool] = True
    output_type: ClassVar[DatumType | None] = _BOOL
    #: the signs of ``a - b`` for which the relation holds
    holds_for: ClassVar[frozenset[int]] = frozenset()
    ufunc: ClassVar[np.ufunc]

    def compute(self, a, b):
        return type(self).ufunc(a, b)

    def output_facts(self, inputs):
        if len(inputs) == 2:
            comparison_recipe(inputs[0], inputs[1])
        return super().output_facts(inputs)

    def prepared(self, inputs):
        recipe = comparison_recipe(inputs[0], inputs[1])
        return self if recipe is None else with_recipe(self, recipe)

    def eval(self, inputs):
        recipe = self.__dict__.get("recipe")
        if recipe is not None:
            return [np.asarray(type(self).ufunc(*recipe(np.asarray(inputs[0]), np.asarray(inputs[1]))))]
        return super().eval(inputs)

    def symbolic(self, x, y):
        signs = dim_signs(x - y)
        if signs <= self.holds_for:
            return True
        if not signs & self.holds_for:
            return False
        raise undecided(self.name, x, y)


def _comparison(name: str, ufunc: np.ufunc, holds_for: set[int], doc: str) -> type:
    return dataclass(frozen=True)(type(name, (Comparison,), {
        "ufunc": ufunc, "holds_for": frozenset(holds_for), "__doc__": doc,
        "__module__": __name__, "__qualname__": name,
    }))


Equal = _comparison("Equal", np.equal, {0}, "``a == b`` (numbers, bools or strings).")
Less = _comparison("Less", np.less, {-1}, "``a < b``.")
Greater = _comparison("Greater", np.greater, {1}, "``a > b``.")
LessOrEqual = _comparison("LessOrEqual", np.less_equal, {-1, 0}, "``a <= b``.")
GreaterOrEqual = _comparison("GreaterOrEqual", np.greater_equal, {0, 1}, "``a >= b``.")
NotEqual = _comparison("NotEqual", np.not_equal, {-1, 1}, "``a != b``.")


def _elementwise(name: str, ufunc: np.ufunc, accepts: str, doc: str) -> type:
    return dataclass(frozen=True)(type(name, (BinaryOp,), {
        "compute": lambda self, a, b: ufunc(a, b), "accepts": accepts, "elementwise": True,
        "widen_small_floats": False, "__doc__": doc, "__module__": __name__, "__qualname__": name,
    }))


And = _elementwise("And", np.logical_and, "bool", "Logical and of bool tensors.")
Or = _elementwise("Or", np.logical_or, "bool", "Logical or of bool tensors.")
Xor = _elementwise("Xor", np.logical_xor, "bool", "Logical exclusive or of bool tensors.")
BitwiseAnd = _elementwise("BitwiseAnd", np.bitwise_and, "integer", "Bitwise and of integer tensors.")
BitwiseOr = _elementwise("BitwiseOr", np.bitwise_or, "integer", "Bitwise or of integer tensors.")
BitwiseXor = _elementwise("BitwiseXor", np.bitwise_xor, "integer", "Bitwise exclusive or of integer tensors.")


@dataclass(frozen=True)
class Not(UnaryOp):
    """Logical negation of a bool tensor."""

    elementwise: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "bool"

    def compute(self, x):
        return np.logical_not(x)


@dataclass(frozen=True)
class BitwiseNot(UnaryOp):
    """Every bit of an integer tensor flipped."""

    elementwise: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "integer"

    def compute(self, x):
        return np.invert(x)


def _as_float(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if needs_f32(x.dtype) else x


@dataclass(frozen=True)
class IsNaN(UnaryOp):
    """True where the float input is NaN."""

    elementwise: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "float"
    output_type: ClassVar[DatumType | None] = _BOOL

    def compute(self, x):
        return np.isnan(_as_float(x))


@dataclass(frozen=True)
class IsInf(UnaryOp):
    """True where the float input is infinite (of the signs asked for)."""

    elementwise: ClassVar[bool] = True

    detect_positive: bool = True
    detect_negative: bool = True
    accepts: ClassVar[str | None] = "float"
    output_type: ClassVar[DatumType | None] = _BOOL

    def compute(self, x):
        x = _as_float(x)
        infinite = np.isinf(x)
        if not self.detect_positive:
            infinite &= x < 0
        if not self.detect_negative:
            infinite &= x > 0
        return infinite


@dataclass(frozen=True)
class Where(Op):
    """``x`` where ``condition`` holds, else ``y``; the three inputs broadcast together."""

    elementwise: ClassVar[bool] = True

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        condition, x, y = inputs
        if condition.dtype != _BOOL:
            raise AnalysisError(f"Where's condition must be bool, got {condition}")
        if x.dtype != y.dtype:
            raise AnalysisError(f"Where's branches must have one datum type, got {x.dtype} and {y.dtype} "
                                f"({x}; {y})")
        # selecting values keeps their quantization (when both branches share it)
        qparams = x.qparams if x.qparams == y.qparams else None
        fact = TypedFact(x.dtype, broadcast_shapes(condition.shape, x.shape, y.shape), qparams=qparams)
        return [value_fact(fact, symbolic_result(self, inputs))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, _BOOL)
        s.equals_all(inputs[1].datum_type, inputs[2].datum_type, outputs[0].datum_type)
        s.given_all([i.shape for i in inputs],
                    lambda s, c, x, y: s.equals(outputs[0].shape, broadcast_shapes(c, x, y)))

    def eval(self, inputs):
        condition, x, y = (np.asarray(v) for v in inputs)
        if condition.dtype == object and any(isinstance(v, TDim) for v in condition.flat):
            raise AnalysisError("Where's condition is symbolic")
        if condition.dtype != bool:
            condition = condition.astype(bool)
        return [np.where(condition, x, y)]

    def declutter(self, model, node):
        fact = node.outputs[0].fact
        if fact.konst is not None and any(model.outlet_fact(o).konst is None for o in node.inputs):
            return ModelPatch.replace_by_const(model, node, [fact.konst], f"symbolic {node.name}")
        condition = model.outlet_fact(node.inputs[0]).konst
        if condition is None or condition.size == 0 or not (condition.all() or not condition.any()):
            return None
        chosen = node.inputs[1 if condition.all() else 2]
        if model.outlet_fact(chosen).same_type_and_shape(fact):
            patch = ModelPatch(model, f"constant condition of {node.name}")
            patch.shunt(OutletId(node.id, 0), patch.tap(chosen))
            patch.obliterate(node.id)
            return patch
        return None

    def cost(self, inputs):
        return {"flops": 0}

