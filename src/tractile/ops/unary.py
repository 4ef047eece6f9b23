"""Element-wise unary ops: the shared base and plain math functions."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .base import Op, expect_inputs
from .quantized import activation as quantized
from .quantized import onnxruntime
from .quantized.common import cached_recipe, quantized_fact, recipe_of, with_recipe

#: input categories an element-wise op may require: name -> (test, words for errors)
ACCEPTS: dict[str, tuple[Callable[[DatumType], bool], str]] = {
    "float": (lambda t: t.is_float, "a floating-point"),
    "number": (lambda t: t.is_float or t.is_integer, "a numeric"),
    "signed": (lambda t: t.is_signed, "a signed numeric"),
    "integer": (lambda t: t.is_integer, "an integer"),
    "bool": (lambda t: t == DatumType.BOOL, "a bool"),
}


def check_accepts(op: Op, accepts: str | None, fact: TypedFact, what: str = "input") -> None:
    """Raise an AnalysisError unless ``fact``'s datum type is in the category ``accepts``."""
    if accepts is None:
        return
    test, words = ACCEPTS[accepts]
    if not test(fact.dtype):
        raise AnalysisError(f"{op.name} needs {words} {what}, got {fact.dtype} ({fact})")


def c_float(value: float) -> str:
    """``value`` rounded to float32 as an exact C99 float literal (the fewest digits that read
    back to it): the constants of the ops' C expressions."""
    value = float(np.float32(value))
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = np.format_float_positional(np.float32(value), unique=True, trim="0") \
        if 1e-4 <= abs(value) < 1e7 or value == 0 else np.format_float_scientific(np.float32(value), unique=True)
    if text.endswith("."):
        text += "0"
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


def needs_f32(dtype: np.dtype) -> bool:
    """True for the small float types (f16, bf16, f8, f4...) whose math runs in f32."""
    return (dtype.kind == "f" and dtype.itemsize < 4) or dtype.kind == "V"


@dataclass(frozen=True)
class UnaryOp(Op):
    """Base: one input, one output of the same shape (and datum type unless ``output_type``).

    ``quant``: the output's quantization; set, the input is a quantized tensor (its fact's
    qparams) and the op follows its integer recipe (:meth:`quantized_recipe`, derived once per
    plan by ``prepared``) on the raw values; with ``flavour="onnxruntime"``, onnxruntime's
    lookup table instead (8-bit: dequantize, :meth:`compute` in float32, quantize).
    """

    output_type: ClassVar[DatumType | None] = None
    #: category of datum types the op accepts (a key of ``ACCEPTS``; None: any)
    accepts: ClassVar[str | None] = None
    #: a one-input NumPy ufunc computing the op for f32/f64 inputs, which may write in place
    ufunc: ClassVar[np.ufunc | None] = None
    #: the op on a float32 ``v`` in C99 (math.h), when it takes no parameters; see :meth:`c_expression`
    c_formula: ClassVar[str | None] = None
    rules_in_output_facts: ClassVar[bool] = True

    _: KW_ONLY
    quant: QParams | None = None
    flavour: str = "reference"

    def compute(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def quantized_recipe(self, x: TypedFact) -> Callable[[np.ndarray], np.ndarray]:
        """The integer recipe of this op on the quantized input ``x`` with the output
        quantization ``quant``: a callable on raw values (``ops.quantized``)."""
        raise AnalysisError(f"{self.name} has no quantized form")

    def c_expression(self) -> str | None:
        """This op on a float32 ``v`` as a C99 expression (math.h functions, constants written by
        :func:`c_float`), or None when it has none: the compiler's element-wise loops and fused
        activations use it, so each formula is written once beside its NumPy definition."""
        return self.c_formula

    def quantized_dtype(self, x: TypedFact) -> DatumType:
        """The output datum type of the quantized op on ``x``."""
        return x.dtype

    def _recipe(self, inputs: list[TypedFact]):
        if self.flavour == "onnxruntime":
            return cached_recipe(self, inputs, lambda: onnxruntime.table_recipe(
                inputs[0], self.quant, lambda v: self.compute(v.astype(np.float32))))
        return cached_recipe(self, inputs, lambda: self.quantized_recipe(inputs[0]))

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        fact = inputs[0]
        if self.quant is not None:
            if not quantized_fact(fact):
                raise AnalysisError(f"quantized {self.name} needs a quantized 8- or 16-bit input, got {fact}")
            self._recipe(inputs)
            return [TypedFact(self.quantized_dtype(fact), fact.shape, qparams=self.quant)]
        check_accepts(self, self.accepts, fact)
        return [fact.with_dtype(self.output_type or fact.dtype)]

    def prepared(self, inputs):
        return self if self.quant is None else with_recipe(self, self._recipe(inputs))

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        if self.output_type is None and self.quant is None:
            s.equals(inputs[0].datum_type, outputs[0].datum_type)
        else:
            s.equals(outputs[0].datum_type, self.output_type)

    def eval(self, inputs):
        x = inputs[0]
        if self.quant is not None:
            return [recipe_of(self)(np.asarray(x))]
        out = self.compute(x)
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        expected = self.output_type.np if self.output_type else x.dtype
        if out.dtype != expected:
            out = out.astype(expected)
        return [out]

    def cost(self, inputs):
        return {"flops": inputs[0].volume}


def _via_f32(fn):
    """Run a float function in f32 for the small float types (NumPy lacks their kernels)."""

    def compute(self, x):
        if needs_f32(x.dtype):
            return fn(x.astype(np.float32)).astype(x.dtype)
        return fn(x)

    return compute


def _unary(name: str, fn, accepts: str | None = None, doc: str = "", recipe=None, c: str | None = None) -> type:
    """A unary op class computing ``fn``; ``recipe(x_fact, quant)``: its quantized form; ``c``: the
    same on a float ``v`` in C."""
    extra = {"quantized_recipe": lambda self, x: recipe(x, self.quant)} if recipe is not None else {}
    cls = dataclass(frozen=True)(type(name, (UnaryOp,), {
        **extra,
        "compute": _via_f32(fn),
        "accepts": accepts,
        "c_formula": c,
        "elementwise": True,
        # the NumPy function when it can write into its input (runs of element-wise steps do)
        "ufunc": fn if isinstance(fn, np.ufunc) and fn.nin == 1 and fn.nout == 1 else None,
        "__doc__": doc or f"Element-wise {name}.",
        "__module__": __name__,
        "__qualname__": name,
    }))
    return cls


# erf ------------------------------------------------------------------------------------------
_ERF_STEP = 0.5      # erf(x)/x is a polynomial on each piece [k * step, (k + 1) * step) of [0, 6)
_ERF_LIMIT = 6.0     # beyond, erf(x) rounds to +-1 in f64
_ERF_BLOCK = 16384   # elements per block, so that the temporaries stay in cache


@lru_cache(maxsize=2)
def _erf_pieces(degree: int) -> np.ndarray:
    """Power-basis coefficients (rows: powers, columns: pieces) of erf(a)/a on each piece, in the
    piece's local variable in [-1, 1], by Chebyshev interpolation of ``math.erf``."""
    half = _ERF_STEP / 2
    columns = []
    for index in range(int(_ERF_LIMIT / _ERF_STEP)):
        center = index * _ERF_STEP + half

        def erf_over_a(u, center=center):
            a = center + half * np.ravel(u)
            return np.array([math.erf(v) / v for v in a])

        cheb = np.polynomial.chebyshev.chebinterpolate(erf_over_a, degree)
        power = np.polynomial.chebyshev.cheb2poly(cheb)
        columns.append(np.pad(power, (0, degree + 1 - len(power))))
    return np.ascontiguousarray(np.transpose(columns))


_ERF_CENTERS = np.arange(int(_ERF_LIMIT / _ERF_STEP)) * _ERF_STEP + _ERF_STEP / 2


def _erf_block(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    magnitude = np.minimum(np.abs(x), _ERF_LIMIT)
    piece = (magnitude * (1 / _ERF_STEP)).astype(np.intp)
    local = (magnitude - _ERF_CENTERS.take(piece, mode="clip")) * (2 / _ERF_STEP)
    acc = table[-1].take(piece, mode="clip")
    for row in table[-2::-1]:
        acc *= local
        acc += row.take(piece, mode="clip")
    acc *= magnitude
    np.putmask(acc, magnitude >= _ERF_LIMIT, 1.0)
    return np.copysign(acc, x, out=acc)


def erf(x: np.ndarray, accuracy: np.dtype | None = None) -> np.ndarray:
    """The error function in f64 (NumPy has none), vectorised by blocks.

    Accurate to a few f64 ulps, or to ~1e-9 relative when ``accuracy`` (default: ``x``'s
    type) is a float of 32 bits or fewer, which needs fewer terms.
    """
    accuracy = np.dtype(accuracy or np.asarray(x).dtype)
    table = _erf_pieces(7 if accuracy.kind in "fV" and accuracy.itemsize <= 4 else 12)
    wide = np.asarray(x, dtype=np.float64)
    flat = wide.reshape(-1)
    out = np.empty_like(flat)
    with np.errstate(invalid="ignore"):
        for start in range(0, flat.size, _ERF_BLOCK):
            out[start:start + _ERF_BLOCK] = _erf_block(flat[start:start + _ERF_BLOCK], table)
    return out.reshape(wide.shape)


def _erf_any(x: np.ndarray) -> np.ndarray:
    return erf(x).astype(x.dtype) if x.dtype.kind == "f" else erf(x)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.reciprocal(np.sqrt(x))


Abs = _unary("Abs", np.abs, "number", recipe=quantized.abs_recipe, c="fabsf(v)")
Neg = _unary("Neg", np.negative, "signed", c="-v")
Sign = _unary("Sign", np.sign, "number", "Element-wise sign: -1, 0 or 1 (0 for zeros, NaN for NaN).",
              c="(v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : v))")
Exp = _unary("Exp", np.exp, "float", c="expf(v)")
Log = _unary("Log", np.log, "float", c="logf(v)")
Sqrt = _unary("Sqrt", np.sqrt, "float", c="sqrtf(v)")
Reciprocal = _unary("Reciprocal", np.reciprocal, "float", c="1.0f / v")
Rsqrt = _unary("Rsqrt", _rsqrt, "float", "Element-wise ``1 / sqrt(x)``.", quantized.rsqrt_recipe, "(1.0f / sqrtf(v))")
Floor = _unary("Floor", np.floor, "float", c="floorf(v)")
Ceil = _unary("Ceil", np.ceil, "float", c="ceilf(v)")
Round = _unary("Round", np.round, "float", "Round to the nearest integer, halves to even.", c="rintf(v)")
Sin = _unary("Sin", np.sin, "float", c="sinf(v)")
Cos = _unary("Cos", np.cos, "float", c="cosf(v)")
Tan = _unary("Tan", np.tan, "float", c="tanf(v)")
Asin = _unary("Asin", np.arcsin, "float")
Acos = _unary("Acos", np.arccos, "float")
Atan = _unary("Atan", np.arctan, "float", c="atanf(v)")
Sinh = _unary("Sinh", np.sinh, "float", c="sinhf(v)")
Cosh = _unary("Cosh", np.cosh, "float", c="coshf(v)")
Asinh = _unary("Asinh", np.arcsinh, "float")
Acosh = _unary("Acosh", np.arccosh, "float")
Atanh = _unary("Atanh", np.arctanh, "float")
Erf = _unary("Erf", _erf_any, "number", "Element-wise error function.", c="erff(v)")

