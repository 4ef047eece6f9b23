"""C text: identifiers made from model names, exact literals, wrapped array initialisers."""
from __future__ import annotations

import math
import re

import numpy as np

from ..datum import DatumType

_C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Imaginary""".split())


def identifier(text: str, limit: int = 40) -> str:
    """A C identifier resembling ``text`` (``sequential/dense_1/MatMul`` -> ``sequential_dense_1_MatMul``).

    TFLite's fused names (``a/MatMul;a/Relu;a/BiasAdd``) keep their first part; long names
    keep their last path components.
    """
    text = text.split(";")[0]
    name = re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_")
    if len(name) > limit:
        tail = name[-limit:]
        cut = tail.find("_")
        name = tail[cut + 1:] if 0 <= cut < len(tail) - 8 else tail
    if not name or name[0].isdigit():
        name = "n" + name
    if name in _C_KEYWORDS:
        name += "_"
    return name


class Names:
    """Hands out unique C identifiers."""

    def __init__(self, reserved: tuple[str, ...] = ()) -> None:
        self.taken: set[str] = set(reserved)

    def unique(self, text: str, limit: int = 40) -> str:
        base = identifier(text, limit)
        name, index = base, 1
        while name in self.taken:
            index += 1
            name = f"{base}_{index}"
        self.taken.add(name)
        return name


def comment_text(text: str) -> str:
    """``text`` made safe inside a C block comment."""
    return text.replace("*/", "* /").replace("/*", "/ *").replace("\n", " ")


def int_literal(value: int, dtype: DatumType = DatumType.I32) -> str:
    """An integer literal of the right width (``INT32_MIN`` and 64-bit values spelled safely)."""
    value = int(value)
    if dtype in (DatumType.I64, DatumType.U64) or not -(1 << 31) <= value < (1 << 31):
        if dtype == DatumType.U64 or value >= (1 << 63):
            return f"UINT64_C({value})"
        if value == -(1 << 63):
            return "(-INT64_C(9223372036854775807) - 1)"
        return f"INT64_C({value})"
    if value == -(1 << 31):
        return "(-2147483647 - 1)"
    if dtype in (DatumType.U32,) and value >= (1 << 31):
        return f"{value}u"
    return str(value)


def float_literal(value: float, dtype: DatumType = DatumType.F32) -> str:
    """An exact float literal (round-trip digits; ``INFINITY``/``NAN`` from math.h)."""
    value = float(value)
    suffix = "f" if dtype == DatumType.F32 else ""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    if dtype == DatumType.F32:
        text = np.format_float_positional(np.float32(value), unique=True, trim="0") \
            if 1e-4 <= abs(value) < 1e7 or value == 0 else np.format_float_scientific(np.float32(value), unique=True)
    else:
        text = repr(value)
    if text.endswith("."):
        text += "0"
    if "." not in text and "e" not in text and "inf" not in text:
        text += ".0"
    return text + suffix


def literal(value, dtype: DatumType) -> str:
    """A literal of ``dtype``."""
    if dtype.is_float:
        return float_literal(value, dtype)
    return int_literal(int(value), dtype)


def needs_math(values: np.ndarray) -> bool:
    """Whether a float array's literals need math.h (infinities, NaNs)."""
    return values.dtype.kind == "f" and not bool(np.all(np.isfinite(values)))


def array_initializer(values: np.ndarray, dtype: DatumType, width: int = 100) -> str:
    """``{1, 2, 3, ...}`` over wrapped lines of about ``width`` characters."""
    flat = np.asarray(values).reshape(-1)
    items = [literal(v, dtype) for v in flat.tolist()]
    if not items:
        return "{0}"
    lines, current = [], "  "
    for item in items:
        if len(current) + len(item) + 2 > width and current.strip():
            lines.append(current.rstrip())
            current = "  "
        current += item + ", "
    lines.append(current.rstrip().rstrip(","))
    return "{\n" + "\n".join(lines) + "\n}"
