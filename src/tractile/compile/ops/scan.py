"""Scans and arg-reductions along one constant axis (TFLite's CUMSUM, ARG_MAX, ARG_MIN; ONNX's
CumSum, CumProd, ArgMax, ArgMin; TFLite Micro's int8 CUMSUM): loops written into the node's
code over the input seen as (outer, axis, inner), in the interpreter's order (a float running sum adds one element after
the other, as NumPy's accumulate does; an arg-reduction keeps the first NaN, as NumPy's)."""
from __future__ import annotations

import math

from ...datum import DatumType
from ...ops.axes import resolve_axis
from ...ops.quantized.add_n import LEFT_SHIFT, AddNRecipe
from ...ops.quantized.common import recipe_of
from ...ops.scan import CumScan
from ...ops.sort import ArgReduce
from ..emit import Emit
from ..registry import Unsupported, emitter
from .reduce import C_TYPES

#: accumulator types of a running sum or product (integers wrap as TFLite's and NumPy's do)
SCAN_TYPES = {DatumType.F32: "float", DatumType.I32: "int32_t", DatumType.I64: "int64_t"}


def _split(shape: tuple, axis: int) -> tuple[int, int, int]:
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


@emitter(CumScan)
def cum_scan(e: Emit) -> None:
    op: CumScan = e.op
    x, y = e.input(0), e.output(0)
    if op.quant is not None:
        quantized_cumsum(e)
        return
    if x.dtype not in SCAN_TYPES:
        raise Unsupported(f"{op.name} on {x.dtype} (float32, int32 and int64 are compiled)")
    value = e.const_value(1)
    if value is None:
        raise Unsupported(f"{op.name} with an axis given at run time")
    shape = tuple(int(d) for d in x.shape)
    outer, length, inner = _split(shape, resolve_axis(int(value.reshape(-1)[0]), len(shape), f"{op.name} axis"))
    kind = SCAN_TYPES[x.dtype]
    unsigned = {"int32_t": "uint32_t", "int64_t": "uint64_t"}.get(kind)
    if op.kind == "sum":
        identity, combine = "0", "acc + v" if unsigned is None else f"({kind})(({unsigned})acc + ({unsigned})v)"
    else:
        identity, combine = "1", "acc * v" if unsigned is None else f"({kind})(({unsigned})acc * ({unsigned})v)"
    index = f"(o * {length} + {f'{length - 1} - k' if op.reverse else 'k'}) * {inner} + i"
    body = (f"const {kind} v = {x.var}[at];\n      {y.var}[at] = acc;\n      acc = {combine};" if op.exclusive else
            f"const {kind} v = {x.var}[at];\n      acc = {combine};\n      {y.var}[at] = acc;")
    e.line(f"for (int32_t o = 0; o < {outer}; ++o) {{\n"
           f"  for (int32_t i = 0; i < {inner}; ++i) {{\n"
           f"    {kind} acc = {identity};\n"
           f"    for (int32_t k = 0; k < {length}; ++k) {{\n"
           f"      const int32_t at = {index};\n      {body}\n    }}\n  }}\n}}")
    x.used = y.used = True
    e.set_kernel("(loop)")


def quantized_cumsum(e: Emit) -> None:
    """TFLite Micro's int8 CUMSUM with the interpreter's recipe (``ops.quantized.add_n``)."""
    op: CumScan = e.op
    recipe: AddNRecipe = recipe_of(op)
    x, y = e.input(0), e.output(0)
    shape = tuple(int(d) for d in x.shape)
    outer, length, inner = _split(shape, resolve_axis(int(e.const_input(1, "the axis").reshape(-1)[0]), len(shape),
                                                      f"{op.name} axis"))
    e.use("tl_common.h")
    shifted = f"(int32_t)((uint32_t)((int32_t){x.var}[at] + ({recipe.offset})) << {LEFT_SHIFT})"
    value = f"tl_mbqm({shifted}, {recipe.input_multiplier}, {recipe.input_shift})"
    out = (f"{y.var}[at] = (int8_t)tl_clamp_i32(tl_mbqm(acc, {recipe.output_multiplier}, {recipe.output_shift}) + "
           f"({recipe.zero}), {recipe.low}, {recipe.high});")
    add = "acc = (int32_t)((uint32_t)acc + (uint32_t)v);"
    index = f"(o * {length} + {f'{length - 1} - k' if op.reverse else 'k'}) * {inner} + i"
    body = f"{out}\n      {add}" if op.exclusive else f"{add}\n      {out}"
    e.line(f"for (int32_t o = 0; o < {outer}; ++o) {{\n"
           f"  for (int32_t i = 0; i < {inner}; ++i) {{\n"
           f"    int32_t acc = {int(recipe.start(()))};\n"
           f"    for (int32_t k = 0; k < {length}; ++k) {{\n"
           f"      const int32_t at = {index};\n      const int32_t v = {value};\n      {body}\n    }}\n  }}\n}}")
    x.used = y.used = True
    e.set_kernel("(loop)")


@emitter(ArgReduce)
def arg_reduce(e: Emit) -> None:
    op: ArgReduce = e.op
    x, y = e.input(0), e.output(0)
    if x.dtype not in C_TYPES or x.dtype == DatumType.BOOL or y.dtype not in (DatumType.I32, DatumType.I64):
        raise Unsupported(f"{op.name} on {x.dtype} giving {y.dtype}")
    shape = tuple(int(d) for d in x.shape)
    outer, length, inner = _split(shape, resolve_axis(op.axis, len(shape), f"{op.name} axis"))
    if length == 0:
        raise Unsupported(f"{op.name} over an empty axis")
    better = ">" if op.kind == "max" else "<"
    if op.select_last_index:
        better += "="
    kind = C_TYPES[x.dtype]
    if x.dtype == DatumType.F32:  # NaN wins, the first one (the last with select_last_index), as NumPy's
        take = f"v != v || (best == best && v {better} best)" if op.select_last_index else \
            f"best == best && (v != v || v {better} best)"
    else:
        take = f"v {better} best"
    e.line(f"for (int32_t o = 0; o < {outer}; ++o) {{\n"
           f"  for (int32_t i = 0; i < {inner}; ++i) {{\n"
           f"    const {kind} *row = {x.var} + o * {length * inner} + i;\n"
           f"    {kind} best = row[0];\n    int32_t found = 0;\n"
           f"    for (int32_t k = 1; k < {length}; ++k) {{\n"
           f"      const {kind} v = row[k * {inner}];\n"
           f"      if ({take}) {{\n        best = v;\n        found = k;\n      }}\n    }}\n"
           f"    {y.var}[o * {inner} + i] = ({C_TYPES[y.dtype]})found;\n  }}\n}}")
    x.used = y.used = True
    e.set_kernel("(loop)")
