"""Reductions (ONNX ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
ReduceSumSquare over constant axes, float) and Cast between numeric types, as loops written
into the node's code. A reduction reads, for output element ``o``, the elements at
``base[o] + step[r]``: both offset tables are computed on the host."""
from __future__ import annotations

import math

import numpy as np

from ...datum import DatumType
from ...ops.cast import Cast
from ...ops.reduce import Reduce, _RuntimeAxes
from ..emit import Emit
from ..registry import Unsupported, emitter

#: reducer: (initial value, combine ``acc`` with ``v``, finish with ``n`` elements)
REDUCERS = {
    "sum": ("0.0f", "acc + v", "acc"), "mean": ("0.0f", "acc + v", "acc / (float)n"),
    "max": ("-HUGE_VALF", "(v > acc || v != v) ? v : acc", "acc"),
    "min": ("HUGE_VALF", "(v < acc || v != v) ? v : acc", "acc"),
    "prod": ("1.0f", "acc * v", "acc"), "l1": ("0.0f", "acc + fabsf(v)", "acc"),
    "l2": ("0.0f", "acc + v * v", "sqrtf(acc)"), "sum_square": ("0.0f", "acc + v * v", "acc"),
}
C_TYPES = {DatumType.F32: "float", DatumType.I8: "int8_t", DatumType.U8: "uint8_t", DatumType.I16: "int16_t",
           DatumType.I32: "int32_t", DatumType.I64: "int64_t", DatumType.BOOL: "uint8_t"}
#: Cast also converts between unsigned types (the audio front end's uint32 energies)
CAST_TYPES = {**C_TYPES, DatumType.U16: "uint16_t", DatumType.U32: "uint32_t", DatumType.U64: "uint64_t"}


@emitter(Reduce)
def reduce(e: Emit) -> None:
    op: Reduce = e.op
    x, y = e.input(0), e.output(0)
    if x.dtype != DatumType.F32 or op.reducer not in REDUCERS:
        raise Unsupported(f"{op.name} on {x.dtype}")
    shape = tuple(int(d) for d in x.shape)
    try:
        axes = op._axes(len(shape), [e.input_fact(i) for i in range(len(e.node.inputs))])
    except _RuntimeAxes:
        raise Unsupported("reduction axes given at run time") from None
    if axes is None:
        e.alias()
        return
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    kept = [i for i in range(len(shape)) if i not in axes]
    base = np.zeros(1, np.int64)
    for axis in kept:
        base = (base[:, None] + np.arange(shape[axis]) * strides[axis]).reshape(-1)
    step = np.zeros(1, np.int64)
    for axis in axes:
        step = (step[:, None] + np.arange(shape[axis]) * strides[axis]).reshape(-1)
    if x.count == 0 or step.size == 0:
        raise Unsupported("a reduction over no elements")
    initial, combine, finish = REDUCERS[op.reducer]
    e.uses_math()
    bases = e.constant("base", base, DatumType.I32)
    steps = e.constant("step", step, DatumType.I32)
    e.line(f"for (int32_t o = 0; o < {base.size}; ++o) {{\n  float acc = {initial};\n  const int32_t n = {step.size};\n"
           f"  for (int32_t r = 0; r < n; ++r) {{\n"
           f"    const float v = {x.var}[TL_READ_S32({bases} + o) + TL_READ_S32({steps} + r)];\n"
           f"    acc = {combine};\n  }}\n  {y.var}[o] = {finish};\n}}")
    e.use("tl_common.h")
    x.used = y.used = True
    e.set_kernel("(loop)")


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
