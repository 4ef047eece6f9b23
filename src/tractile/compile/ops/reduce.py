"""Reductions over constant axes: float (sum, mean, max, min, prod, L1, L2, sum of squares),
integers (sum and product wrapping as int32, max, min, mean truncated), bools (any, all), and
quantized MEAN and SUM (TFLite's recipe: Keras's GlobalAveragePooling2D), and Cast between
numeric types, as loops written into the node's code. A reduction reads, for output element
``o``, the elements at ``base[o] + step[r]``: both offset tables are computed on the host."""
from __future__ import annotations

import math

import numpy as np

from ...datum import DatumType
from ...ops.cast import Cast
from ...ops.quantized.common import integer_limits, recipe_of
from ...ops.reduce import Reduce, _RuntimeAxes
from ..ctext import literal
from ..emit import Emit
from ..registry import Unsupported, emitter
from . import host_dw, pool_dsp

#: reducer: (initial value, combine ``acc`` with ``v``, finish with ``n`` elements)
REDUCERS = {
    "sum": ("0.0f", "acc + v", "acc"), "mean": ("0.0f", "acc + v", "acc / (float)n"),
    "max": ("-HUGE_VALF", "(v > acc || v != v) ? v : acc", "acc"),
    "min": ("HUGE_VALF", "(v < acc || v != v) ? v : acc", "acc"),
    "prod": ("1.0f", "acc * v", "acc"), "l1": ("0.0f", "acc + fabsf(v)", "acc"),
    "l2": ("0.0f", "acc + v * v", "sqrtf(acc)"), "sum_square": ("0.0f", "acc + v * v", "acc"),
}
#: the same on integers (accumulated in int64 or wrapping uint32; bools as 0/1)
INTEGER_REDUCERS: dict[str, tuple[str | None, str, str]] = {
    "sum": ("0", "acc + v", "acc"), "mean": ("0", "acc + v", "acc / n"),
    "max": (None, "v > acc ? v : acc", "acc"), "min": (None, "v < acc ? v : acc", "acc"),
    "prod": ("1", "(int64_t)(int32_t)((uint32_t)acc * (uint32_t)v)", "acc"),
    "any": ("0", "acc | (v != 0)", "acc"), "all": ("1", "acc & (v != 0)", "acc"),
}
C_TYPES = {DatumType.F32: "float", DatumType.I8: "int8_t", DatumType.U8: "uint8_t", DatumType.I16: "int16_t",
           DatumType.I32: "int32_t", DatumType.I64: "int64_t", DatumType.BOOL: "uint8_t"}
#: Cast also converts between unsigned types (the audio front end's uint32 energies)
CAST_TYPES = {**C_TYPES, DatumType.U16: "uint16_t", DatumType.U32: "uint32_t", DatumType.U64: "uint64_t"}


def offsets(shape: tuple, axes: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The flat offset of each output element's first input, and of each reduced element from it."""
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    base = np.zeros(1, np.int64)
    for axis in (i for i in range(len(shape)) if i not in axes):
        base = (base[:, None] + np.arange(shape[axis]) * strides[axis]).reshape(-1)
    step = np.zeros(1, np.int64)
    for axis in axes:
        step = (step[:, None] + np.arange(shape[axis]) * strides[axis]).reshape(-1)
    return base, step


@emitter(Reduce)
def reduce(e: Emit) -> None:
    op: Reduce = e.op
    x, y = e.input(0), e.output(0)
    shape = tuple(int(d) for d in x.shape)
    try:
        axes = op._axes(len(shape), [e.input_fact(i) for i in range(len(e.node.inputs))])
    except _RuntimeAxes:
        raise Unsupported("reduction axes given at run time") from None
    if axes is None and op.quant is None:
        e.alias()
        return
    base, step = offsets(shape, axes or ())
    if x.count == 0 or step.size == 0:
        raise Unsupported("a reduction over no elements")
    if op.quant is not None and x.dtype == DatumType.I8 and op.reducer in ("mean", "sum") and axes:
        recipe = recipe_of(op)
        multiplier, shift = recipe.parameters(int(step.size))
        if pool_dsp.mean(e, x, y, shape, axes, multiplier, shift, recipe.zi, recipe.zo):
            return
    if op.quant is None and host_dw.reduce_rows_f32(e, x, y, shape, axes or (), op.reducer):
        return
    value = f"{x.var}[TL_READ_S32(bases + o) + TL_READ_S32(steps + r)]"
    if x.dtype == DatumType.F32:
        if op.reducer not in REDUCERS:
            raise Unsupported(f"{op.name} on {x.dtype}")
        initial, combine, finish = REDUCERS[op.reducer]
        accumulator = "float"
        e.uses_math()
    elif x.dtype in C_TYPES and op.reducer in INTEGER_REDUCERS:
        start, combine, finish = INTEGER_REDUCERS[op.reducer]
        initial = start if start is not None else f"{x.var}[TL_READ_S32(bases + o)]"
        accumulator = "int64_t"
        if op.quant is not None:
            finish = quantized_finish(e, op, int(step.size), y.dtype)
        elif x.dtype == DatumType.I32 and op.reducer in ("sum", "prod"):
            finish = "(int32_t)(uint32_t)acc"
    else:
        raise Unsupported(f"{op.name} on {x.dtype}")
    e.use("tl_common.h")
    bases = e.constant("base", base, DatumType.I32)
    steps = e.constant("step", step, DatumType.I32)
    e.line(f"for (int32_t o = 0; o < {base.size}; ++o) {{\n"
           f"  const int32_t n = {step.size};\n  {accumulator} acc = {initial};\n"
           f"  for (int32_t r = 0; r < n; ++r) {{\n"
           f"    const {accumulator} v = {value};\n"
           f"    acc = {combine};\n  }}\n  {y.var}[o] = ({C_TYPES[y.dtype]})({finish});\n}}"
           .replace("bases", bases).replace("steps", steps))
    x.used = y.used = True
    e.set_kernel("(loop)")


def quantized_finish(e: Emit, op: Reduce, count: int, dtype: DatumType) -> str:
    """TFLite's requantization of a quantized MEAN or SUM of ``count`` elements."""
    recipe = recipe_of(op)
    multiplier, shift = recipe.parameters(count)
    low, high = integer_limits(dtype)
    centred = f"(int32_t)(uint32_t)(acc - {literal(recipe.zi * count, DatumType.I64)})"
    return f"tl_clamp_i32(tl_mbqm({centred}, {multiplier}, {shift}) + ({recipe.zo}), {low}, {high})"


@emitter(Cast)
def cast(e: Emit) -> None:
    x, y = e.input(0), e.output(0)
    if x.dtype not in CAST_TYPES or y.dtype not in CAST_TYPES:
        raise Unsupported(f"Cast from {x.dtype} to {y.dtype}")
    value = f"{x.var}[i]"
    if y.dtype == DatumType.BOOL:
        converted = f"(uint8_t)({value} != 0)"
    elif x.dtype == DatumType.F32 and y.dtype != DatumType.F32:
        e.uses_math()  # NaN and out-of-range values have no defined integer: NumPy's and C's may differ
        converted = f"({CAST_TYPES[y.dtype]})truncf({value})"
    else:
        converted = f"({CAST_TYPES[y.dtype]}){value}"
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {y.var}[i] = {converted};")
    x.used = y.used = True
    e.set_kernel("(loop)")
