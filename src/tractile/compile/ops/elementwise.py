"""Element-wise ops, as loops written into the node's code (specialised by their shapes):
float unary ops and activations, integer clamps (Clip, Relu), float binary ops with
broadcasting, quantized arithmetic (TFLite's recipe, bit for bit), and any quantized unary op
on 8-bit values as a 256-entry table computed by the prepared op's own eval (so it is exact by
construction); int16 ReLUs, ABS, LEAKY_RELU, LOGISTIC, TANH and RSQRT follow their recipes in C.

Same-shape element-wise ops read each element before writing it: they run in place.
"""
from __future__ import annotations

import math

import numpy as np

from ...datum import DatumType
from ...ops import activations as act
from ...ops import binary as onnx_binary
from ...ops.quantized import activation as quantized
from ...ops.quantized.binary import BinaryRecipe
from ...ops.quantized.common import integer_limits, recipe_of
from ...ops.unary import UnaryOp
from ..ctext import literal
from ..emit import Emit
from ..program import CTensor
from ..registry import Unsupported, emitter
from . import binary_dsp, host_gemm
from .dense import requant_constants
from .fused import clamp_bounds, finish_activation, fused_float_activation, unary_loop

C_TYPES = {DatumType.F32: "float", DatumType.I8: "int8_t", DatumType.U8: "uint8_t", DatumType.I16: "int16_t",
           DatumType.I32: "int32_t"}


def f32(value: float) -> str:
    return literal(float(np.float32(value)), DatumType.F32)


@emitter(UnaryOp)
def unary(e: Emit) -> None:
    """Float unary ops and activations; Clip and Relu on integers; quantized unary ops."""
    op = e.op
    x, y = e.input(0), e.output(0)
    if op.quant is not None:
        quantized_unary(e, x, y)
    elif x.dtype in C_TYPES and x.dtype != DatumType.F32 and type(op) in (act.Clip, act.Relu):
        integer_clamp(e, op, x, y)
    else:
        expression = op.c_expression()
        if expression is None or x.dtype != DatumType.F32:
            raise Unsupported(f"{op.name} on {x.dtype}" if expression else f"{op.name} has no C lowering")
        unary_loop(e, x, y, expression)
    e.overlap(0, 0, 0)


def integer_clamp(e: Emit, op, x: CTensor, y: CTensor) -> None:
    """A Clip or Relu on integers (quantized ReLUs keeping their quantization are such clamps)."""
    if type(op) is act.Clip and (op.dynamic_low or op.dynamic_high):
        raise Unsupported("Clip with bounds given at run time")
    type_low, type_high = integer_limits(x.dtype)
    low, high = (0, type_high) if type(op) is act.Relu else (
        type_low if op.low is None else max(type_low, math.ceil(op.low)),
        type_high if op.high is None else min(type_high, math.floor(op.high)))
    value = f"{x.var}[i]"
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i)\n"
           f"  {y.var}[i] = {value} < {literal(low, x.dtype)} ? {literal(low, x.dtype)} : "
           f"({value} > {literal(high, x.dtype)} ? {literal(high, x.dtype)} : {value});")
    x.used = y.used = True
    e.set_kernel("(loop)")


def quantized_unary(e: Emit, x: CTensor, y: CTensor) -> None:
    """A quantized unary op: on 8-bit values the table of its results (the prepared op's eval
    on every value), on int16 its recipe in C."""
    recipe = recipe_of(e.op)
    if x.dtype in (DatumType.I8, DatumType.U8) and y.dtype in (DatumType.I8, DatumType.U8):
        base = integer_limits(x.dtype)[0]
        every = np.arange(base, base + 256).astype(x.dtype.np)
        table = e.constant("table", np.asarray(e.op.eval([every])[0]).reshape(-1), y.dtype)
        read = "TL_READ_S8" if y.dtype == DatumType.I8 else "TL_READ_U8"
        e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {y.var}[i] = {read}({table} + ({x.var}[i] - ({base})));")
        x.used = y.used = True
        e.set_kernel("(table)")
        return
    if x.dtype != DatumType.I16 or y.dtype != DatumType.I16:
        raise Unsupported(f"quantized {e.op.name} from {x.dtype} to {y.dtype}")
    e.use("tl_common.h")
    if isinstance(recipe, quantized.ClampRecipe):
        value = f"((int32_t){x.var}[i] - ({recipe.zi}))"
        if recipe.absolute:
            value = f"({value} < 0 ? -{value} : {value})"
        if recipe.requant is not None:
            value = f"tl_mbqm({value}, {int(recipe.requant.multipliers[0])}, {int(recipe.requant.shifts[0])})"
        body = f"(int16_t)tl_clamp_i32({value} + ({recipe.zo}), {recipe.low}, {recipe.high})"
    elif isinstance(recipe, quantized.LeakyReluRecipe):
        value = f"((int32_t){x.var}[i] - ({recipe.zi}))"
        alpha = f"tl_mbqm({value}, {int(recipe.alpha.multipliers[0])}, {int(recipe.alpha.shifts[0])})"
        identity = f"tl_mbqm({value}, {int(recipe.identity.multipliers[0])}, {int(recipe.identity.shifts[0])})"
        body = (f"(int16_t)tl_clamp_i32(({value} >= 0 ? {identity} : {'-' if recipe.negate else ''}{alpha}) "
                f"+ ({recipe.zo}), -32768, 32767)")
    elif isinstance(recipe, quantized.Int16SigmoidRecipe):
        int16_sigmoid(e, recipe, x, y)
        return
    elif isinstance(recipe, quantized.RsqrtRecipe):
        int16_rsqrt(e, recipe, x, y)
        return
    else:
        raise Unsupported(f"quantized {e.op.name} on int16")
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {y.var}[i] = {body};")
    x.used = y.used = True
    e.set_kernel("(loop)")


def int16_sigmoid(e: Emit, recipe: quantized.Int16SigmoidRecipe, x: CTensor, y: CTensor) -> None:
    """TFLite's int16 LOGISTIC/TANH: rescale, then interpolate the sigmoid table."""
    table = e.constant("sigmoid", quantized.sigmoid_table_uint16(), DatumType.I32)
    multiplier, shift = recipe.multiplier, recipe.left_shift
    if multiplier == 0:
        multiplier, shift = 3 << shift, 0
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    bits = 8 if recipe.tanh else 9
    if recipe.tanh:
        saturated, finish = "0xFFFF00u", "(v >= 0 ? (int32_t)r - 8388480 : -(int32_t)r + 8388735) >> 8"
    else:
        saturated, finish = "(uint32_t)0x7FFF << 10", "(int32_t)(v >= 0 ? r + 512u : 33554432u - r + 511u) >> 10"
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {{\n"
           f"  const int32_t v = ((int32_t){x.var}[i] * {multiplier} + {rounding}) >> {shift};\n"
           f"  const uint32_t a = (uint32_t)(v < 0 ? -v : v), h = a >> {bits};\n"
           f"  uint32_t r = {saturated};\n"
           f"  if (h < 255u) {{\n"
           f"    const uint32_t ua = (uint32_t)TL_READ_S32({table} + h), ub = (uint32_t)TL_READ_S32({table} + h + 1);\n"
           f"    r = (ua << {bits}) + (a & {(1 << bits) - 1}u) * (ub - ua);\n  }}\n"
           f"  {y.var}[i] = (int16_t)({finish});\n}}")
    x.used = y.used = True
    e.set_kernel("(loop)")


def int16_rsqrt(e: Emit, recipe: quantized.RsqrtRecipe, x: CTensor, y: CTensor) -> None:
    """TFLite's quantized RSQRT on int16: the fixed-point inverse square root, requantized."""
    e.use("tl_norm.h")
    status = e.failure("RSQRT of a value below the input's zero point")
    extra = recipe.extra
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {{\n"
           f"  const int32_t v = (int32_t){x.var}[i] - ({recipe.zi});\n"
           f"  int32_t multiplier;\n  int shift;\n"
           f"  if (v < 0) return {status};\n"
           f"  tl_inv_sqrt(v, &multiplier, &shift);\n"
           f"  {y.var}[i] = v == 0 ? 32767 : (int16_t)tl_clamp_i32(tl_mbqm(tl_mbqm(1, multiplier, shift + {extra}), "
           f"{recipe.multiplier}, {recipe.shift - extra}) + ({recipe.zo}), -32768, 32767);\n}}")
    x.used = y.used = True
    e.set_kernel("(loop)")


def broadcast_plan(out_shape: tuple, shapes: list[tuple]) -> tuple[list[int], list[list[int]]]:
    """Output dims (axes of size 1 dropped, runs merged) and each operand's element stride
    along each of them (0 where the operand is broadcast)."""
    rank = len(out_shape)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes]
    dims: list[int] = []
    strides: list[list[int]] = [[] for _ in shapes]
    for axis in range(rank):
        size = out_shape[axis]
        if size == 1:
            continue
        axis_strides = [0 if p[axis] == 1 else math.prod(p[axis + 1:]) for p in padded]
        if dims and all((prev[-1] == 0) == (now == 0) and (now == 0 or prev[-1] == now * size)
                        for prev, now in zip(strides, axis_strides)):
            dims[-1] *= size
            for prev, now in zip(strides, axis_strides):
                prev[-1] = now
            continue
        dims.append(size)
        for prev, now in zip(strides, axis_strides):
            prev.append(now)
    return (dims, strides) if dims else ([1], [[0] for _ in shapes])


def index_expressions(dims: list[int], strides: list[list[int]]) -> tuple[str, list[str]]:
    """Nested loops over ``dims`` (their heads) and each operand's flat index expression."""
    loops: list[str] = []
    terms: list[list[str]] = [[] for _ in strides]
    for level, size in enumerate(dims):
        loops.append(f"for (int32_t i{level} = 0; i{level} < {size}; ++i{level})")
        for which, s in enumerate(strides):
            if s[level]:
                terms[which].append(f"i{level}" if s[level] == 1 else f"i{level} * {s[level]}")
    return "\n".join(loops), [" + ".join(t) or "0" for t in terms]


def broadcast_loop(e: Emit, a: CTensor, b: CTensor, y: CTensor, body: str) -> None:
    """``y[o] = body(va = a[...], vb = b[...])`` with numpy broadcasting."""
    out_shape = tuple(int(d) for d in y.shape)
    element = {DatumType.F32: "float"}.get(a.dtype, "int32_t")
    if tuple(a.shape) == out_shape and tuple(b.shape) == out_shape:
        e.line(f"for (int32_t o = 0; o < {y.count}; ++o) {{\n  const {element} va = {a.var}[o], vb = {b.var}[o];\n"
               f"  {y.var}[o] = {body};\n}}")
    else:
        dims, strides = broadcast_plan(out_shape, [tuple(int(d) for d in a.shape), tuple(int(d) for d in b.shape)])
        dims_strides = [math.prod(dims[level + 1:]) for level in range(len(dims))]
        loops, (ia, ib) = index_expressions(dims, strides)
        io = " + ".join(f"i{level} * {s}" if s != 1 else f"i{level}" for level, s in enumerate(dims_strides)) or "0"
        e.line(f"{loops} {{\n  const {element} va = {a.var}[{ia}], vb = {b.var}[{ib}];\n"
               f"  {y.var}[{io}] = {body};\n}}")
    a.used = b.used = y.used = True
    if not e.code.kernel:
        e.set_kernel("(loop)")
    for slot, operand in ((0, a), (1, b)):
        if tuple(operand.shape) == out_shape and operand.dtype == y.dtype:
            e.overlap(0, slot, 0)
            break


FLOAT_BINARY = {"Pow": "powf(va, vb)", "Add": "va + vb", "Sub": "va - vb", "Mul": "va * vb", "Div": "va / vb",
                "Max": "(va > vb || va != va ? va : vb)", "Min": "(va < vb || va != va ? va : vb)",
                "SquaredDifference": "(va - vb) * (va - vb)"}


@emitter(onnx_binary.Arithmetic, onnx_binary.Pow)
def binary_op(e: Emit) -> None:
    """Every broadcasting arithmetic op: float (with a fused activation), plain integers (wrapping
    like NumPy's), and quantized 8/16-bit (TFLite's recipe, bit for bit)."""
    op = e.op
    if getattr(op, "quant", None) is not None:
        if getattr(op, "flavour", None) == "onnxruntime":
            from . import onnxruntime

            onnxruntime.binary(e, recipe_of(op))
            return
        quantized_binary(e, recipe_of(op))
        return
    if host_gemm.added_by_producer(e):
        return
    a, b, y = e.input(0), e.input(1), e.output(0)
    activation = getattr(op, "activation", None)
    if a.dtype == DatumType.F32 and b.dtype == DatumType.F32:
        body = FLOAT_BINARY[op.name]
        if op.name == "Pow":
            e.uses_math()
        if activation is not None:
            low, high = fused_float_activation(e, activation, y)
            if math.isfinite(low) or math.isfinite(high):
                e.use("tl_common.h")
                body = f"tl_clamp_f32({body}, {f32(max(low, -3e38))}, {f32(min(high, 3e38))})"
        broadcast_loop(e, a, b, y, body)
        if activation is not None:
            finish_activation(e, activation, y)
        return
    if a.dtype not in C_TYPES or op.name not in INTEGER_BINARY and not (op.name == "Div" and a.dtype in INTEGER_DIV):
        raise Unsupported(f"{op.name} on {a.dtype}")
    body = INTEGER_DIV[a.dtype] if op.name == "Div" else INTEGER_BINARY[op.name]
    if activation is not None:
        bounds = clamp_bounds(activation)
        if bounds is None:
            raise Unsupported(f"{op.name} on {a.dtype} with a fused {activation.name}")
        low, high = (max(int(math.ceil(bounds[0])), -(1 << 31)) if math.isfinite(bounds[0]) else -(1 << 31),
                     min(int(math.floor(bounds[1])), (1 << 31) - 1) if math.isfinite(bounds[1]) else (1 << 31) - 1)
        e.use("tl_common.h")
        body = f"tl_clamp_i32({body}, {literal(low, DatumType.I32)}, {literal(high, DatumType.I32)})"
    broadcast_loop(e, a, b, y, f"({C_TYPES[y.dtype]})({body})")


#: integer division truncates toward zero as the interpreter's does (x / 0 gives 1 for x < 0, else 0;
#: INT_MIN / -1 wraps), for integers of at most 32 bits
_SIGNED_DIV = "(vb == 0 ? (va < 0) : (vb == -1 ? (int32_t)(0u - (uint32_t)va) : va / vb))"
INTEGER_DIV = {DatumType.I8: _SIGNED_DIV, DatumType.I16: _SIGNED_DIV, DatumType.I32: _SIGNED_DIV,
               DatumType.U8: "(vb == 0 ? 0 : va / vb)"}
#: integer ops wrap around as NumPy's do: computed on uint32_t, then narrowed
INTEGER_BINARY = {"Add": "(int32_t)((uint32_t)va + (uint32_t)vb)", "Sub": "(int32_t)((uint32_t)va - (uint32_t)vb)",
                  "Mul": "(int32_t)((uint32_t)va * (uint32_t)vb)", "Max": "va > vb ? va : vb",
                  "Min": "va < vb ? va : vb"}


def quantized_binary(e: Emit, p: BinaryRecipe) -> None:
    """TFLite's quantized ADD/SUB/MUL/MAXIMUM/MINIMUM/SQUARED_DIFFERENCE, element by element with
    broadcasting."""
    if p.kind == "div":
        from .divide import quantized_div

        quantized_div(e, p)
        return
    a, b, y = e.input(0), e.input(1), e.output(0)
    if a.dtype not in (DatumType.I8, DatumType.U8, DatumType.I16) or \
            p.kind not in ("add", "sub", "mul", "maximum", "minimum", "squared_difference"):
        raise Unsupported(f"quantized {p.kind} on {a.dtype}")
    e.use("tl_common.h")
    cast = C_TYPES[y.dtype]
    low, high = p.low, p.high
    if p.kind in ("maximum", "minimum"):
        pick = f"(va {'>' if p.kind == 'maximum' else '<'} vb ? va : vb)"
        broadcast_loop(e, a, b, y, f"({cast})tl_clamp_i32({pick}, {low}, {high})")
        return
    if p.pot is not None:  # int16 ADD/SUB with power-of-two scales: one input shifted down, no rescaling
        first, second = (f"tl_rdbpot(v{name}, {-shift})" if shift else f"v{name}" for name, shift in zip("ab", p.pot))
        sign = "+" if p.kind == "add" else "-"
        broadcast_loop(e, a, b, y, f"({cast})tl_clamp_i32({first} {sign} {second}, {low}, {high})")
        return
    if binary_dsp.emit(e, p, a, b, y):
        return
    assert p.ro is not None
    mo, so, _ = requant_constants(e, p.ro.multipliers, p.ro.shifts, 1)
    if p.kind == "mul":
        raw = f"(int32_t)((uint32_t)(va - ({p.z1})) * (uint32_t)(vb - ({p.z2})))"
    else:
        assert p.r1 is not None and p.r2 is not None
        m1, s1, _ = requant_constants(e, p.r1.multipliers, p.r1.shifts, 1)
        m2, s2, _ = requant_constants(e, p.r2.multipliers, p.r2.shifts, 1)
        scaled1 = f"tl_mbqm((va - ({p.z1})) * {1 << p.left}, TL_READ_S32({m1}), (int)TL_READ_S32({s1}))"
        scaled2 = f"tl_mbqm((vb - ({p.z2})) * {1 << p.left}, TL_READ_S32({m2}), (int)TL_READ_S32({s2}))"
        raw = f"{scaled1} {'+' if p.kind == 'add' else '-'} {scaled2}"
        if p.kind == "squared_difference":
            raw = f"(int32_t)((uint32_t)({raw}) * (uint32_t)({raw}))"  # wraps as the interpreter's
    body = f"({cast})tl_clamp_i32(tl_mbqm({raw}, TL_READ_S32({mo}), (int)TL_READ_S32({so})) + ({p.zo}), {low}, {high})"
    broadcast_loop(e, a, b, y, body)
