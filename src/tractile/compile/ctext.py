"""C text: identifiers made from model names, exact literals, wrapped array initialisers."""
from __future__ import annotations

import math
import re

import numpy as np

from ..datum import DatumType

#: words a generated identifier must not be: C99/C11/C23 and C++ keywords (headers are included from
#: C++), the functions and types of the standard headers the generated code includes, and names the
#: generated code and its harnesses use for themselves
_RESERVED_WORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
_Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
alignas alignof bool constexpr false nullptr static_assert thread_local true typeof typeof_unqual
and and_eq asm bitand bitor catch char8_t char16_t char32_t class co_await co_return co_yield compl concept
const_cast consteval constinit decltype delete dynamic_cast explicit export friend import module mutable
namespace new noexcept not not_eq operator or or_eq private protected public reinterpret_cast requires
static_cast template this throw try typeid typename using virtual wchar_t xor xor_eq override final
memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp strlen strchr strrchr strstr
strtok strerror strcoll strxfrm strcspn strspn strpbrk abs labs llabs div ldiv malloc calloc realloc free exit
abort atexit qsort bsearch rand srand main errno assert offsetof size_t ptrdiff_t max_align_t float_t double_t
printf puts putchar fputs fprintf sprintf snprintf stdin stdout stderr FILE
ctx arena run status part peak ticks start top floor paint node sample
""".split())

#: the math.h functions, each also with its ``f`` and ``l`` forms
_MATH_FUNCTIONS = """acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb
ldexp log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil floor
nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo copysign nan nextafter nexttoward
fdim fmax fmin fma fpclassify isfinite isinf isnan isnormal signbit isgreater isgreaterequal isless
islessequal islessgreater isunordered""".split()

_RESERVED = _RESERVED_WORDS | frozenset(f"{f}{suffix}" for f in _MATH_FUNCTIONS for suffix in ("", "f", "l"))

#: macro and type names of the standard headers (stdint.h, stddef.h, math.h, limits.h, errno.h), and
#: the prefixes tractile's kernels and platform code use
_RESERVED_PATTERN = re.compile(
    r"(u?int(8|16|32|64|ptr|max|_least\d+|_fast\d+)_t|U?INT\w*|SIZE_\w+|PTRDIFF_\w+|WCHAR_\w+|WINT_\w+"
    r"|SIG_ATOMIC_\w+|NULL|NAN|INFINITY|HUGE_VAL\w*|FP_\w+|MATH_\w+|M_\w+|E[A-Z0-9]+|[A-Z]+_(MIN|MAX|BIT)"
    r"|tl_\w*|TL_\w*|__\w*|_[A-Z]\w*)")

#: the longest identifier made from a model's text (C99 guarantees 63 significant characters)
IDENTIFIER_LIMIT = 60


def is_reserved(name: str) -> bool:
    """Whether ``name`` collides with the language, the standard headers or tractile's own C."""
    return name in _RESERVED or _RESERVED_PATTERN.fullmatch(name) is not None


def identifier(text: str, limit: int = 40) -> str:
    """A C identifier resembling ``text`` (``sequential/dense_1/MatMul`` -> ``sequential_dense_1_MatMul``).

    Only ``[A-Za-z0-9_]`` survive (runs of anything else, and of underscores, become one
    underscore); the result never starts with a digit or an underscore, is at most ``limit``
    characters (long names keep their last path components) and is never a keyword or a name
    of the standard headers or of tractile's C (those get a trailing ``_``). TFLite's fused
    names (``a/MatMul;a/Relu;a/BiasAdd``) keep their first part.
    """
    limit = max(8, min(limit, IDENTIFIER_LIMIT))
    text = text.split(";")[0]
    name = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")
    if len(name) > limit - 1:
        tail = name[-(limit - 1):]
        cut = tail.find("_")
        name = tail[cut + 1:] if 0 <= cut < len(tail) - 8 else tail.strip("_")
    if not name or name[0].isdigit():
        name = "n" + name
    if is_reserved(name):
        name += "_" if not name.endswith("_") else "x"
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


def c_string(text: str) -> str:
    """A C string literal, quotes included, that spells exactly ``text``'s UTF-8 bytes.

    Printable ASCII stays as it is except ``"``, ``\\`` and ``?`` (trigraphs); every other byte
    (line breaks, NUL, control characters, non-ASCII) is a three-digit octal escape, which
    no following character can extend. Nothing in ``text`` can end the literal or the line.
    """
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        if 0x20 <= byte < 0x7F and byte not in b'"\\?':
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


#: how much of a model's text a comment keeps
COMMENT_LIMIT = 600


def comment_text(text: str, limit: int = COMMENT_LIMIT) -> str:
    """``text`` made safe inside a C block comment (and on one line).

    Only printable ASCII is kept (line breaks and tabs become spaces, other characters
    ``.``), backslashes become ``/`` (no line splices), ``*/`` and ``/*`` are broken up and
    no two question marks follow each other (no trigraphs); long texts are shortened.
    """
    kept = []
    for char in text[:limit]:
        if char in "\r\n\t\v\f":
            kept.append(" ")
        elif " " <= char <= "~":
            kept.append("/" if char == "\\" else char)
        else:
            kept.append(".")
    safe = "".join(kept) + (" ..." if len(text) > limit else "")
    safe = re.sub(r"\?(?=\?)", "? ", safe)
    while "*/" in safe or "/*" in safe:
        safe = safe.replace("*/", "* /").replace("/*", "/ *")
    return safe


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
