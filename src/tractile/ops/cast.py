"""Type conversion and pass-through ops: Cast, CastLike, BitCast, Identity, Dropout (inference)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..dim import TDim
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from ..graph import OutletId
from ..patch import ModelPatch
from .base import Op, expect_inputs

_FLOAT8 = (DatumType.F8E4M3FN, DatumType.F8E4M3FNUZ, DatumType.F8E5M2, DatumType.F8E5M2FNUZ)
ROUND_MODES = ("up", "down", "nearest")


@dataclass(frozen=True)
class Cast(Op):
    """Convert to datum type ``to``.

    ``saturate`` (float 8 targets) clamps out-of-range values, infinities included, to the
    largest finite value instead of giving NaN or infinity; ``round_mode`` (f8e8m0 target)
    picks the power of two a value goes to.
    """

    elementwise: ClassVar[bool] = True

    to: DatumType
    saturate: bool = True
    round_mode: str = "up"

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if self.round_mode not in ROUND_MODES:
            raise AnalysisError(f"Cast round_mode must be one of {', '.join(ROUND_MODES)}, got {self.round_mode!r}")
        fact = inputs[0].with_dtype(self.to)
        if inputs[0].sym_value is not None and self.to.is_integer:
            fact.sym_value = inputs[0].sym_value
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(outputs[0].datum_type, self.to)

    def eval(self, inputs):
        x = np.asarray(inputs[0])
        if x.dtype == object and any(isinstance(v, TDim) for v in x.flat):
            if self.to.is_integer:
                return [x]
            raise AnalysisError(f"cannot cast symbolic values to {self.to}")
        return [cast_array(x, self.to, self.saturate, self.round_mode)]

    def declutter(self, model, node):
        if model.outlet_fact(node.inputs[0]).dtype == self.to:
            return ModelPatch.shunt_one_op(model, node, f"no-op cast {node.name}")
        return None


def cast_array(x: np.ndarray, to: DatumType, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """``x`` converted to ``to`` as ONNX's Cast does (strings parse and print numbers)."""
    if to == DatumType.STRING:
        return _to_strings(x)
    if x.dtype == object or x.dtype.kind in "US":
        x = _parse_strings(x, to)
    with np.errstate(invalid="ignore", over="ignore"):
        if to == DatumType.F8E8M0:
            return _to_e8m0(x, saturate, round_mode)
        target = to.np
        if to in _FLOAT8:
            if x.dtype.kind in "iub":
                x = x.astype(np.float64)
            if saturate:
                import ml_dtypes

                limit = float(ml_dtypes.finfo(target).max)
                x = np.clip(x, np.asarray(-limit, x.dtype), np.asarray(limit, x.dtype))
        return x.astype(target)


def _to_strings(x: np.ndarray) -> np.ndarray:
    """Numbers as text: floats in their shortest round-trip form (as the ONNX reference does),
    with the spec's spellings NaN, INF and -INF."""
    if x.dtype == object or x.dtype.kind in "US":
        return x.astype(object)
    if x.dtype.kind == "V":
        x = x.astype(np.int64 if DatumType.from_numpy(x.dtype).is_integer else np.float32)
    text = x.astype(str).astype(object)
    if x.dtype.kind == "f":
        text[np.isnan(x)] = "NaN"
        text[np.isposinf(x)] = "INF"
        text[np.isneginf(x)] = "-INF"
    return text


def _parse_strings(x: np.ndarray, to: DatumType) -> np.ndarray:
    """Numbers from text: plain or scientific notation, INF/+INF/-INF/NaN in any case."""
    text = x.astype(str)
    try:
        if to.is_integer:
            try:
                return text.astype(np.int64)
            except ValueError:
                return np.trunc(text.astype(np.float64))
        return text.astype(np.float64)
    except ValueError as error:
        raise RunError(f"Cast to {to}: {error}") from None


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """Powers of two (the sign is dropped): ``|x| = m * 2**e`` with m in [1, 2) goes to 2**e,
    or to 2**(e+1) when rounding up a non-power or rounding to nearest with m >= 1.5.
    Out of [2**-127, 2**127] (zero and infinities included) saturates, or else gives NaN."""
    import ml_dtypes

    x = np.abs(x.astype(np.float32))
    half_mantissa, exponent = np.frexp(x)
    exponent = exponent.astype(np.int32) - 1
    if round_mode == "up":
        exponent += half_mantissa > 0.5
    elif round_mode == "nearest":
        exponent += half_mantissa >= 0.75
    exponent[x == 0] = -128
    exponent[np.isinf(x)] = 128
    outside = (exponent < -127) | (exponent > 127)
    result = np.ldexp(np.float32(1), np.clip(exponent, -127, 127))
    result[np.isnan(x) | (outside & (not saturate))] = np.nan
    return result.astype(ml_dtypes.float8_e8m0fnu)


@dataclass(frozen=True)
class CastLike(Op):
    """Cast the first input to the datum type of the second (a Cast once types are known)."""

    saturate: bool = True
    round_mode: str = "up"

    def _cast(self, target: DatumType) -> Cast:
        return Cast(target, self.saturate, self.round_mode)

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        return self._cast(inputs[1].dtype).output_facts(inputs[:1])

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(outputs[0].datum_type, inputs[1].datum_type)

    def eval(self, inputs):
        like = np.asarray(inputs[1])
        if like.dtype == object and not all(isinstance(v, str) for v in like.flat):
            raise AnalysisError("CastLike cannot tell the target type from a symbolic value")
        return self._cast(DatumType.from_numpy(like.dtype)).eval(inputs[:1])

    def wire_typed(self, model, name, inputs):
        return model.wire_node(name, self._cast(model.outlet_fact(inputs[1]).dtype), inputs[:1])


_NARROW_BITS = {DatumType.I4: 4, DatumType.U4: 4, DatumType.F4E2M1: 4, DatumType.I2: 2, DatumType.U2: 2,
                DatumType.F6E2M3: 6, DatumType.F6E3M2: 6}


def bit_width(dtype: DatumType) -> int:
    """Bits of one element (4 for int4, though NumPy stores it in a byte)."""
    return _NARROW_BITS.get(dtype) or dtype.np.itemsize * 8


@dataclass(frozen=True)
class BitCast(Op):
    """Reinterpret the bits of each element as datum type ``to`` (same width, same shape)."""

    to: DatumType

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        source = inputs[0].dtype
        if DatumType.STRING in (source, self.to):
            raise AnalysisError(f"BitCast cannot reinterpret strings ({source} to {self.to})")
        if bit_width(source) != bit_width(self.to):
            raise AnalysisError(f"BitCast needs types of one bit width, got {source} ({bit_width(source)} bits) "
                                f"and {self.to} ({bit_width(self.to)} bits)")
        return [TypedFact(self.to, inputs[0].shape)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(outputs[0].datum_type, self.to)

    def eval(self, inputs):
        x = np.asarray(inputs[0])
        contiguous = np.ascontiguousarray(x.astype(x.dtype.newbyteorder("<"), copy=False))
        return [contiguous.view(self.to.np).reshape(x.shape)]

    def declutter(self, model, node):
        if model.outlet_fact(node.inputs[0]).dtype == self.to:
            return ModelPatch.shunt_one_op(model, node, f"no-op bitcast {node.name}")
        return None


@dataclass(frozen=True)
class Identity(Op):
    elementwise: ClassVar[bool] = True
    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        f = inputs[0]
        if not f.is_tensor or not f.has_rank:  # sequences, optionals, run-time ranks pass through
            return [f]
        return [TypedFact(f.dtype, f.shape, f.konst, f.qparams, f.sym_value)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        return [inputs[0]]

    def declutter(self, model, node):
        return ModelPatch.shunt_one_op(model, node, f"identity {node.name}")


@dataclass(frozen=True)
class Dropout(Op):
    """Dropout at inference: the data passes unchanged; the optional mask is all true."""

    elementwise: ClassVar[bool] = True

    with_mask: bool = False

    @property
    def nboutputs(self) -> int:
        return 2 if self.with_mask else 1

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 3), self)
        x = inputs[0]
        facts = [TypedFact(x.dtype, x.shape)]
        if self.with_mask:
            facts.append(TypedFact(DatumType.BOOL, x.shape))
        return facts

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x = inputs[0]
        return [x, np.ones(x.shape, dtype=bool)] if self.with_mask else [x]

    def declutter(self, model, node):
        if self.with_mask and node.outputs[1].successors or OutletId(node.id, 1) in model.outputs:
            return None
        patch = ModelPatch(model, f"inference dropout {node.name}")
        patch.shunt(OutletId(node.id, 0), patch.tap(node.inputs[0]))
        patch.obliterate(node.id)
        return patch
