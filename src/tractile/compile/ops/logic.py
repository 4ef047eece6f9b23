"""Comparisons (quantized 8-bit operands rescaled as TFLite does), logical ops, Where (select),
the floor/truncating modulo and PRelu (float and quantized), as broadcasting loops written into
the node's code."""
from __future__ import annotations

import math

from ...datum import DatumType
from ...ops import logic
from ...ops.activations import PRelu
from ...ops.binary import Mod
from ...ops.quantized.common import recipe_of
from ..emit import Emit
from ..registry import Unsupported, emitter
from .elementwise import C_TYPES, broadcast_loop, broadcast_plan, index_expressions

COMPARISONS = {logic.Equal: "==", logic.NotEqual: "!=", logic.Less: "<", logic.LessOrEqual: "<=",
               logic.Greater: ">", logic.GreaterOrEqual: ">="}
LOGICAL = {logic.And: "&&", logic.Or: "||", logic.Xor: "!="}
NUMBERS = {**C_TYPES, DatumType.I64: "int64_t", DatumType.BOOL: "uint8_t"}


def _check(e: Emit, *dtypes: DatumType) -> None:
    for dtype in dtypes:
        if dtype not in NUMBERS:
            raise Unsupported(f"{e.op.name} on {dtype}")


@emitter(*COMPARISONS)
def comparison(e: Emit) -> None:
    a, b, y = e.input(0), e.input(1), e.output(0)
    _check(e, a.dtype)
    if a.dtype == DatumType.I64:
        raise Unsupported(f"{e.op.name} on int64")
    relation = COMPARISONS[type(e.op)]
    recipe = e.op.__dict__.get("recipe")
    if recipe is None:
        broadcast_loop(e, a, b, y, f"(uint8_t)(va {relation} vb)")
        return
    e.use("tl_common.h")
    sides = [f"tl_mbqm((v{name} - ({zero})) * 256, {int(r.multipliers[0])}, {int(r.shifts[0])})"
             for name, zero, r in (("a", recipe.z1, recipe.r1), ("b", recipe.z2, recipe.r2))]
    broadcast_loop(e, a, b, y, f"(uint8_t)({sides[0]} {relation} {sides[1]})")


@emitter(*LOGICAL)
def logical(e: Emit) -> None:
    a, b, y = e.input(0), e.input(1), e.output(0)
    broadcast_loop(e, a, b, y, f"(uint8_t)((va != 0) {LOGICAL[type(e.op)]} (vb != 0))")


@emitter(logic.Not)
def logical_not(e: Emit) -> None:
    x, y = e.input(0), e.output(0)
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {y.var}[i] = (uint8_t)!{x.var}[i];")
    x.used = y.used = True
    e.set_kernel("(loop)")
    e.overlap(0, 0, 0)


@emitter(logic.Where)
def where(e: Emit) -> None:
    condition, a, b, y = e.input(0), e.input(1), e.input(2), e.output(0)
    _check(e, a.dtype)
    out_shape = tuple(int(d) for d in y.shape)
    dims, strides = broadcast_plan(out_shape, [tuple(int(d) for d in t.shape) for t in (condition, a, b)])
    out_strides = [math.prod(dims[level + 1:]) for level in range(len(dims))]
    loops, (ic, ia, ib) = index_expressions(dims, strides)
    io = " + ".join(f"i{level} * {s}" if s != 1 else f"i{level}" for level, s in enumerate(out_strides)) or "0"
    e.line(f"{loops}\n  {y.var}[{io}] = {condition.var}[{ic}] ? {a.var}[{ia}] : {b.var}[{ib}];")
    condition.used = a.used = b.used = y.used = True
    e.set_kernel("(loop)")


@emitter(Mod)
def modulo(e: Emit) -> None:
    a, b, y = e.input(0), e.input(1), e.output(0)
    _check(e, a.dtype)
    if a.dtype == DatumType.F32:
        e.uses_math()
        remainder = "fmodf(va, vb)"
    else:
        remainder = "(va % vb)"
    if e.op.fmod:
        body = remainder
    else:
        zero = "0.0f" if a.dtype == DatumType.F32 else "0"
        body = (f"({remainder} != {zero} && (({remainder} < {zero}) != (vb < {zero})) ? "
                f"{remainder} + vb : {remainder})")
    broadcast_loop(e, a, b, y, f"({NUMBERS[y.dtype]})({body})")


@emitter(PRelu)
def prelu(e: Emit) -> None:
    x, slope, y = e.input(0), e.input(1), e.output(0)
    if e.op.quant is None:
        if x.dtype != DatumType.F32:
            raise Unsupported(f"PRelu on {x.dtype}")
        broadcast_loop(e, x, slope, y, "(va < 0.0f ? va * vb : va)")
        return
    recipe = recipe_of(e.op)
    if x.dtype not in (DatumType.I8, DatumType.U8, DatumType.I16):
        raise Unsupported(f"quantized PRelu on {x.dtype}")
    e.use("tl_common.h")
    value, alpha = f"(va - ({recipe.zi}))", f"(vb - ({recipe.za}))"
    positive = f"tl_mbqm({value}, {int(recipe.positive.multipliers[0])}, {int(recipe.positive.shifts[0])})"
    negative = f"tl_mbqm({value} * {alpha}, {int(recipe.negative.multipliers[0])}, {int(recipe.negative.shifts[0])})"
    low, high = {DatumType.I8: (-128, 127), DatumType.U8: (0, 255), DatumType.I16: (-32768, 32767)}[x.dtype]
    broadcast_loop(e, x, slope, y, f"({NUMBERS[y.dtype]})tl_clamp_i32(({value} >= 0 ? {positive} : {negative}) "
                                   f"+ ({recipe.zo}), {low}, {high})")
