"""Broadcasting element-wise binary ops: arithmetic (Add, Sub, Mul, Div, Pow, Mod, Max, Min,
BitShift), the ``BinaryOp`` base they share with comparisons and logic, and ONNX's Mean.

Shape computations run through these ops on symbolic values (object arrays of ints
and TDims): each op's ``symbolic`` says what it does to one pair of items.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..datum import DatumType
from ..dim import TDim
from ..errors import AnalysisError, TractileError
from ..fact import QParams, TypedFact
from ..graph import OutletId
from ..patch import ModelPatch
from .base import Op, expect_inputs
from .broadcast import broadcast_shapes, broadcast_volume
from .expansion import Expansion, VariadicChain
from .quantized import onnxruntime
from .quantized.binary import binary_recipe
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .quantized.conv import clamp_of
from .symbolic_values import dim_signs, is_symbolic_array, symbolic_apply, symbolic_result, undecided, value_fact
from .unary import check_accepts, needs_f32

if TYPE_CHECKING:
    from .activations import Activation


def _arr(value) -> np.ndarray:
    return value if isinstance(value, np.ndarray) else np.asarray(value)


# the base ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BinaryOp(Op):
    """Base: both inputs share a datum type; the output broadcasts their shapes."""

    #: datum type of the output when it is not the inputs' (comparisons: bool)
    output_type: ClassVar[DatumType | None] = None
    #: whether both operands must have the same datum type
    same_types: ClassVar[bool] = True
    #: category of datum types the operands may have (a key of ``unary.ACCEPTS``; None: any)
    accepts: ClassVar[str | None] = None
    #: whether f16/bf16/f8 operands are computed in f32 (and cast back)
    widen_small_floats: ClassVar[bool] = True
    rules_in_output_facts: ClassVar[bool] = True

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def symbolic(self, x, y):
        """The result on one pair of items that may be TDims (raise when it cannot be told)."""
        raise TractileError(f"{self.name} has no symbolic form")

    def result_type(self, a: DatumType, b: DatumType) -> DatumType:
        return self.output_type or a

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        a, b = inputs
        if self.same_types and a.dtype != b.dtype:
            raise AnalysisError(f"{self.name} needs operands of one datum type, got {a.dtype} and {b.dtype} "
                                f"({a}; {b})")
        check_accepts(self, self.accepts, a, "first operand")
        check_accepts(self, self.accepts, b, "second operand")
        if not (a.has_rank and b.has_rank):
            from .dynrank import broadcast_fact

            return [broadcast_fact(self.result_type(a.dtype, b.dtype), [a, b])]
        shape = broadcast_shapes(a.shape, b.shape)
        fact = TypedFact(self.result_type(a.dtype, b.dtype), shape)
        return [value_fact(fact, symbolic_result(self, [a, b]))]

    def rules(self, s, inputs, outputs):
        if self.same_types:
            s.equals(inputs[0].datum_type, inputs[1].datum_type,
                     why=f"{self.name} operands have different datum types: {{}} and {{}}")
        if self.output_type is not None:
            s.equals(outputs[0].datum_type, self.output_type)
        else:
            s.equals(outputs[0].datum_type, inputs[0].datum_type)
        s.given_all([inputs[0].shape, inputs[1].shape],
                    lambda s, a, b: s.equals(outputs[0].shape, broadcast_shapes(a, b)))

    def eval(self, inputs):
        a, b = inputs
        if type(a) is not np.ndarray or type(b) is not np.ndarray:
            a, b = _arr(a), _arr(b)
        if (a.dtype == object or b.dtype == object) and (is_symbolic_array(a) or is_symbolic_array(b)):
            out = symbolic_apply(self.symbolic, a, b)
            return [out.astype(bool) if self.output_type == DatumType.BOOL else out]
        target = self.output_type.np if self.output_type is not None else a.dtype
        if self.widen_small_floats and needs_f32(a.dtype):
            out = _arr(self.compute(a.astype(np.float32), b.astype(np.float32) if needs_f32(b.dtype) else b))
        else:
            out = _arr(self.compute(a, b))
        if out.dtype != target and a.dtype != object:
            out = out.astype(target)
        return [out]

    def cost(self, inputs):
        return {"flops": broadcast_volume(inputs)}

    def declutter(self, model, node):
        fact = node.outputs[0].fact
        if fact.konst is not None and any(model.outlet_fact(o).konst is None for o in node.inputs):
            return ModelPatch.replace_by_const(model, node, [fact.konst], f"symbolic {node.name}")
        return _neutral_operand(self, model, node)


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


# arithmetic ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Arithmetic(BinaryOp):
    """Base of the arithmetic ops that have a quantized form (Add, Sub, Mul, Div, Max, Min,
    SquaredDifference).

    ``quant``: the output's quantization; set, both inputs are quantized tensors (their facts'
    qparams) and the op follows TFLite's integer recipe (``ops.quantized.binary``), prepared
    once per plan. ``activation``: an activation fused by the optimizer, applied to the result
    (on quantized ops a Clip whose bounds are integers of the output type).
    ``pot_scale_int16``: TFLite's choice of the shift-and-saturate path for int16 ADD/SUB
    with power-of-two scales. ``flavour="onnxruntime"``: onnxruntime's QLinearAdd / QLinearMul
    float32 arithmetic instead (``ops.quantized.onnxruntime``).
    """

    kind: ClassVar[str] = ""
    #: the plain form is BinaryOp's; the quantized one only adds the recipe's checks
    rules_in_output_facts: ClassVar[bool] = True

    quant: QParams | None = None
    activation: Activation | None = None
    pot_scale_int16: bool = True
    flavour: str = "reference"

    def _clamp(self) -> tuple[float, float] | None:
        activation = self.activation
        if activation is None:
            return None
        low, high = getattr(activation, "low", None), getattr(activation, "high", None)
        if type(activation).__name__ != "Clip" or getattr(activation, "dynamic_low", False):
            raise AnalysisError(f"a quantized {self.name} can only fuse a Clip, got {activation.name}")
        return (-np.inf if low is None else low, np.inf if high is None else high)

    def _recipe(self, inputs: list[TypedFact]):
        assert self.quant is not None
        if self.flavour == "onnxruntime":
            return cached_recipe(self, inputs, lambda: onnxruntime.binary_recipe(
                self.kind, inputs[0], inputs[1], self.quant, clamp_of(self.activation, inputs[0].dtype)))
        return cached_recipe(self, inputs, lambda: binary_recipe(self.kind, inputs[0], inputs[1], self.quant,
                                                                 self._clamp(), self.pot_scale_int16))

    def output_facts(self, inputs):
        if self.quant is None:
            return super().output_facts(inputs)
        expect_inputs(inputs, 2, self)
        self._recipe(inputs)
        shape = broadcast_shapes(inputs[0].shape, inputs[1].shape)
        return [TypedFact(inputs[0].dtype, shape, qparams=self.quant)]

    def prepared(self, inputs):
        return self if self.quant is None else with_recipe(self, self._recipe(inputs))

    def eval(self, inputs):
        if self.quant is not None:
            return [recipe_of(self)(_arr(inputs[0]), _arr(inputs[1]))]
        out = super().eval(inputs)
        if self.activation is not None:
            return [self.activation.apply_inplace(out[0])]
        return out

    @property
    def is_plain(self) -> bool:
        """Neither quantized nor carrying a fused activation: the op's bare arithmetic, which
        algebraic rewrites (folding into a Conv, bias fusion) may move around."""
        return self.quant is None and self.activation is None

    def declutter(self, model, node):
        if not self.is_plain:
            return None
        return super().declutter(model, node)


@dataclass(frozen=True)
class Add(Arithmetic):
    kind: ClassVar[str] = "add"
    elementwise: ClassVar[bool] = True
    neutral: ClassVar[float] = 0
    commutative: ClassVar[bool] = True

    def compute(self, a, b):
        return a + b

    def symbolic(self, x, y):
        return x + y


@dataclass(frozen=True)
class Sub(Arithmetic):
    kind: ClassVar[str] = "sub"
    elementwise: ClassVar[bool] = True
    neutral: ClassVar[float] = 0

    def compute(self, a, b):
        return a - b

    def symbolic(self, x, y):
        return x - y


@dataclass(frozen=True)
class Mul(Arithmetic):
    kind: ClassVar[str] = "mul"
    elementwise: ClassVar[bool] = True
    neutral: ClassVar[float] = 1
    commutative: ClassVar[bool] = True

    def compute(self, a, b):
        return a * b

    def symbolic(self, x, y):
        return x * y


@dataclass(frozen=True)
class Div(Arithmetic):
    """Division; integers truncate toward zero (as C, ONNX and TFLite do)."""

    kind: ClassVar[str] = "div"
    elementwise: ClassVar[bool] = True
    neutral: ClassVar[float] = 1

    def compute(self, a, b):
        if a.dtype.kind == "u":
            return np.floor_divide(a, b)
        if a.dtype.kind == "i":
            quotient = np.floor_divide(a, b)
            inexact = (quotient * b != a) & ((a < 0) != (b < 0))
            return quotient + inexact.astype(quotient.dtype)
        return a / b

    def symbolic(self, x, y):
        if isinstance(x, TDim) or isinstance(y, TDim):
            if dim_signs(x) <= {0, 1} and dim_signs(y) == {1}:
                return x // y
            raise undecided("Div", x, y)
        quotient = abs(int(x)) // abs(int(y))
        return quotient if (x < 0) == (y < 0) else -quotient


@dataclass(frozen=True)
class SquaredDifference(Arithmetic):
    """``(a - b) ** 2`` (TensorFlow's SquaredDifference; TFLite's SQUARED_DIFFERENCE)."""

    kind: ClassVar[str] = "squared_difference"
    elementwise: ClassVar[bool] = True

    def compute(self, a, b):
        difference = a - b
        return difference * difference


@dataclass(frozen=True)
class Pow(BinaryOp):
    """``a ** b``; the exponent may have another datum type (the result has the base's)."""

    elementwise: ClassVar[bool] = True
    same_types: ClassVar[bool] = False
    accepts: ClassVar[str | None] = "number"
    neutral: ClassVar[float] = 1
    widen_small_floats: ClassVar[bool] = False

    def compute(self, a, b):
        if a.dtype.kind in "iu":
            if b.dtype.kind in "iu" and not (b < 0).any():
                return np.power(a, b.astype(a.dtype))
            return np.power(a.astype(np.float64), b.astype(np.float64))
        work = np.float32 if needs_f32(a.dtype) else a.dtype
        return np.power(a.astype(work), b.astype(work))


@dataclass(frozen=True)
class Mod(BinaryOp):
    """Remainder: with ``fmod`` the C way (sign of the dividend), else the floor way (sign of
    the divisor, as Python's ``%``)."""

    elementwise: ClassVar[bool] = True

    fmod: bool = False
    accepts: ClassVar[str | None] = "number"

    def compute(self, a, b):
        return np.fmod(a, b) if self.fmod else np.mod(a, b)

    def symbolic(self, x, y):
        if isinstance(y, TDim) or dim_signs(y) != {1} or self.fmod and dim_signs(x) - {0, 1}:
            raise undecided("Mod", x, y)
        return x % y


@dataclass(frozen=True)
class Max(Arithmetic):
    """The larger of the operands (NaN if either is NaN)."""

    kind: ClassVar[str] = "maximum"
    elementwise: ClassVar[bool] = True
    commutative: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "number"

    def compute(self, a, b):
        return np.maximum(a, b)

    def symbolic(self, x, y):
        signs = dim_signs(x - y)
        if signs <= {0, 1}:
            return x
        if signs <= {-1, 0}:
            return y
        raise undecided("Max", x, y)


@dataclass(frozen=True)
class Min(Arithmetic):
    """The smaller of the operands (NaN if either is NaN)."""

    kind: ClassVar[str] = "minimum"
    elementwise: ClassVar[bool] = True
    commutative: ClassVar[bool] = True
    accepts: ClassVar[str | None] = "number"

    def compute(self, a, b):
        return np.minimum(a, b)

    def symbolic(self, x, y):
        signs = dim_signs(x - y)
        if signs <= {-1, 0}:
            return x
        if signs <= {0, 1}:
            return y
        raise undecided("Min", x, y)


@dataclass(frozen=True)
class BitShift(BinaryOp):
    """Shift the bits of ``a`` by ``b`` places, left or right (arithmetic for signed types).

    A shift by a negative amount or by the width or more leaves only the sign fill:
    -1 for a right shift of a negative number, 0 otherwise.
    """

    elementwise: ClassVar[bool] = True

    left: bool = True
    accepts: ClassVar[str | None] = "integer"

    def compute(self, a, b):
        bits = a.dtype.itemsize * 8
        outside = (b < 0) | (b >= bits)
        amount = np.where(outside, 0, b).astype(a.dtype)
        if self.left:
            return np.where(outside, np.zeros((), a.dtype), np.left_shift(a, amount))
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if a.dtype.kind == "i" else np.zeros((), a.dtype)
        return np.where(outside, fill, np.right_shift(a, amount))


@dataclass(frozen=True)
class VariadicMean(Expansion):
    """ONNX Mean: the inputs (broadcast together) summed, then divided by their count."""

    def expand(self, model, name, inputs):
        if len(inputs) == 1:
            return VariadicChain(Add()).expand(model, name, inputs)
        total = VariadicChain(Add()).expand(model, f"{name}.sum", inputs)[0]
        dtype = model.outlet_fact(inputs[0]).dtype
        count = model.add_const(f"{name}.count", np.asarray(len(inputs), dtype=dtype.np))
        return model.wire_node(name, Div(), [total, count])
