"""TFLite's int8 ADD, SUB and MUL on Cortex-M4/M7 (the DSP extension): the layer's loop written
with its constants (``tl_binary_dsp.h``). ADD/SUB look each input's rescaling up in a table of
its 256 results, computed on the host by the interpreter's recipe and doubled; MUL doubles the
product of the offset inputs; one SMMLAR and one SSAT requantize. Any layer outside the bounds
the formula is proven for takes the portable loop (elementwise.py)."""
from __future__ import annotations

import math

import numpy as np

from ...datum import DatumType
from ...ops.quantized.binary import BinaryRecipe
from ..emit import Emit
from ..program import CTensor

HEADER = "tl_binary_dsp.h"
#: element loops of the same shape run this many elements per pass
UNROLL = 16


def row_unroll(count: int) -> int:
    """Elements per pass over a row of ``count``: a short row (up to two passes' worth, whole
    words) in one pass, no inner loop; otherwise ``UNROLL``."""
    return count if UNROLL <= count <= 2 * UNROLL and count % 4 == 0 else UNROLL


def usable(e: Emit, p: BinaryRecipe, a: CTensor, b: CTensor, y: CTensor) -> bool:
    return (e.target.dsp and not e.target.progmem and p.kind in ("add", "sub", "mul") and p.pot is None
            and a.dtype == b.dtype == y.dtype == DatumType.I8 and p.ro is not None and p.ro.scalar)


def output_constants(p: BinaryRecipe, offset: int = 0) -> tuple[int, int, int] | None:
    """(m, K, r) of the output requantization (TL_REQUANT2) giving the output less ``offset``,
    None when its shift is positive or K leaves (-2^30, 2^30)."""
    assert p.ro is not None
    m, shift = int(p.ro.multipliers[0]), int(p.ro.shifts[0])
    r = -shift
    if r < 0 or r > 31:
        return None
    zero = p.zo - offset
    k = zero if r == 0 else (1 << (r - 1)) + zero * (1 << r)
    return (m, k, r) if abs(k) < 1 << 30 else None


def clamp_plan(p: BinaryRecipe) -> tuple[bool, int]:
    """(relu, offset): ``relu`` when the lower bound is the output zero point (ReLU, RELU6), taken
    by clamping the accumulator at 0 (TL_RQ8_RELU); then an upper bound below 127 is SSAT's own
    limit with the outputs computed less ``offset`` = high - 127, added back per word."""
    relu = p.low == p.zo and (p.low > -128 or p.high < 127)
    return relu, (p.high - 127 if relu and p.high < 127 else 0)


def rescaled_tables(p: BinaryRecipe) -> tuple[np.ndarray, np.ndarray] | None:
    """Twice each input's rescaled value for every int8 (the second negated for SUB), or None
    when their sum could reach 2^30 in magnitude."""
    assert p.r1 is not None and p.r2 is not None
    every = np.arange(-128, 128, dtype=np.int64)
    first = 2 * np.asarray(p.r1((every - p.z1) << p.left), np.int64)
    second = 2 * np.asarray(p.r2((every - p.z2) << p.left), np.int64)
    if p.kind == "sub":
        second = -second
    if int(np.abs(first).max()) + int(np.abs(second).max()) >= 1 << 31:
        return None
    return first, second


def emit(e: Emit, p: BinaryRecipe, a: CTensor, b: CTensor, y: CTensor) -> bool:
    """The layer's loops, or False (nothing emitted) when the DSP path does not apply."""
    if not usable(e, p, a, b, y):
        return False
    from .elementwise import broadcast_plan

    out_shape = tuple(int(d) for d in y.shape)
    dims, strides = broadcast_plan(out_shape, [tuple(int(d) for d in a.shape), tuple(int(d) for d in b.shape)])
    inner = (strides[0][-1], strides[1][-1])
    relu, offset = clamp_plan(p)
    constants = output_constants(p, offset)
    tables = rescaled_tables(p) if p.kind != "mul" else None
    if constants is None or any(s not in (0, 1) for s in inner) or p.kind != "mul" and tables is None:
        return False
    simd = p.kind == "mul" and inner == (1, 1) and dims[-1] >= UNROLL
    if p.kind == "mul" and simd:
        setup = f"  const uint32_t za = {halfword_pair(-p.z1)}, zb = {halfword_pair(-p.z2)};\n"
    else:
        setup = ""
    if p.kind == "mul" and (not simd or dims[-1] % row_unroll(dims[-1])):
        doubled = e.constant("doubled_b", 2 * (np.arange(-128, 128) - p.z2), DatumType.I16)
        setup += f"  const int16_t *tb = {doubled} + 128;\n"
    if p.kind == "mul":

        def accumulator(va: str, vb: str) -> str:
            return f"((int32_t){va} - ({p.z1})) * tb[{vb}]"
    else:
        assert tables is not None
        first = e.constant("rescaled_a", tables[0], DatumType.I32)
        second = e.constant("rescaled_b", tables[1], DatumType.I32)
        setup = f"  const int32_t *ta = {first} + 128, *tb = {second} + 128;\n"

        def accumulator(va: str, vb: str) -> str:
            return f"ta[{va}] + tb[{vb}]"
    e.use(HEADER)
    m, k, r = constants

    def element(v: str, va: str, vb: str) -> str:
        acc = accumulator(va, vb) if vb else va
        name = "TL_RQ8_RELU" if relu else "TL_RQ8"
        requant = f"{name}({v}, acc, m, k, {r});" if r else f"{name}_NOSHIFT({v}, acc, m, k);"
        return f"{{ const int32_t acc = {acc}; {requant} }}"

    setup += f"  const int32_t m = {m}, k = {k};\n"
    lines = ["{", setup.rstrip("\n"), f"  const int8_t *pa = {a.var}, *pb = {b.var};\n  int8_t *py = {y.var};"]
    outer = dims[:-1]
    for level, size in enumerate(outer):
        lines.append(f"{'  ' * (level + 1)}for (int32_t i{level} = 0; i{level} < {size}; ++i{level}) {{")
    depth = len(outer) + 1
    if outer:
        lines.append(indent(pointers(a.var, b.var, y.var, dims, strides), 2 * depth))
    lines.append(indent(run(dims[-1], inner, p, element, relu, offset, simd), 2 * depth))
    for level in reversed(range(len(outer))):
        lines.append(f"{'  ' * (level + 1)}}}")
    lines.append("}")
    e.line("\n".join(lines))
    a.used = b.used = y.used = True
    for slot, operand in ((0, a), (1, b)):
        if tuple(operand.shape) == out_shape and operand.dtype == y.dtype:
            e.overlap(0, slot, 0)
            break
    e.set_kernel("(dsp loop)")
    return True


def pointers(a: str, b: str, y: str, dims: list[int], strides: list[list[int]]) -> str:
    """The row's three pointers from the outer loops' indices."""
    outer = range(len(dims) - 1)
    out_strides = [math.prod(dims[level + 1:]) for level in outer]

    def offset(steps) -> str:
        return " + ".join(f"i{level} * {steps[level]}" for level in outer if steps[level]) or "0"
    return (f"pa = {a} + {offset(strides[0])};\npb = {b} + {offset(strides[1])};\n"
            f"py = {y} + {offset(out_strides)};")


def halfword_pair(value: int) -> str:
    return f"0x{(value & 0xFFFF) * 0x00010001:08X}u"


#: MUL's four products from two words of inputs: each input's bytes 0, 2 and 1, 3 less its zero
#: point as halfword pairs (SXTAB16), the second doubled (SADD16), multiplied by SMULBB/SMULTT
SIMD_MUL = ("    uint32_t wa, wb;\n    memcpy(&wa, pa + {at}, 4);\n    memcpy(&wb, pb + {at}, 4);\n"
            "    const uint32_t a02 = tl_sxtab16(za, wa, 0), a13 = tl_sxtab16(za, wa, 8);\n"
            "    uint32_t b02 = tl_sxtab16(zb, wb, 0), b13 = tl_sxtab16(zb, wb, 8);\n"
            "    b02 = tl_sadd16(b02, b02);\n    b13 = tl_sadd16(b13, b13);")
SIMD_PRODUCTS = ("tl_smulbb(a02, b02)", "tl_smulbb(a13, b13)", "tl_smultt(a02, b02)", "tl_smultt(a13, b13)")


def byte_word(value: int) -> str:
    return f"0x{(value & 0xFF) * 0x01010101:08X}u"


def run(count: int, inner: tuple[int, int], p: BinaryRecipe, element, relu: bool = False, offset: int = 0,
        simd: bool = False) -> str:
    """``count`` elements from pa, pb (steps ``inner``: 1, or 0 for a broadcast value) to py:
    ``row_unroll`` per pass in words of four (packed, clamped by bytes, stored at once), then the
    rest one by one. ``relu``: the lower bound is already applied; ``offset``: the outputs come
    less it (the upper bound applied by SSAT), added back."""
    step_a, step_b = inner
    unroll = row_unroll(count)
    passes, rest = divmod(count, unroll)
    clamp_low = p.low > -128 and not relu
    clamp_high = p.high < 127 and not offset
    lines = []
    if passes:
        if clamp_low:
            lines.append(f"const uint32_t low = {byte_word(p.low)};")
        if clamp_high:
            lines.append(f"const uint32_t high = {byte_word(p.high)};")
        if offset:
            lines.append(f"const uint32_t offset = {byte_word(offset)};")
        lines.append(f"for (int32_t i = 0; i < {passes}; ++i) {{")
        for word in range(unroll // 4):
            lines.append("  {\n    int32_t v0, v1, v2, v3;\n    uint32_t w;")
            if simd:
                lines.append(SIMD_MUL.format(at=4 * word))
            for j in range(4):
                at = 4 * word + j
                if simd:
                    lines.append("    " + element(f"v{j}", SIMD_PRODUCTS[j], ""))
                else:
                    lines.append("    " + element(f"v{j}", f"pa[{at * step_a}]", f"pb[{at * step_b}]"))
                lines.append(f"    TL_BFI8(w, v{j}, {8 * j});" if j else "    w = (uint32_t)v0;")
            if clamp_low:
                lines.append("    TL_MAX4_S8(w, low);")
            if clamp_high:
                lines.append("    TL_MIN4_S8(w, high);")
            if offset:
                lines.append("    TL_ADD4_S8(w, offset);")
            lines.append(f"    memcpy(py + {4 * word}, &w, 4);\n  }}")
        advance = "".join(f"  {name} += {unroll};\n" for name, step in (("pa", step_a), ("pb", step_b), ("py", 1))
                          if step)
        lines.append(advance + "}")
    if rest:
        lines.append(f"for (int32_t i = 0; i < {rest}; ++i) {{\n  int32_t v;\n"
                     f"  {element('v', 'pa[i]' if step_a else 'pa[0]', 'pb[i]' if step_b else 'pb[0]')}\n"
                     f"  py[i] = tl_out_s8(v{f' + ({offset})' if offset else ''}, {p.low}, {p.high});\n}}")
    return "\n".join(lines)


def indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())
