"""C text: identifiers made from model names, exact literals, wrapped array initialisers."""
from __future__ import annotations

import math
import re

import numpy as np

from ..datum import DatumType
from ..ops.unary import c_float

#: words a generated identifier must not be: C99/C11/C23 and C++ keywords (headers are included from
#: C++); what the headers the generated code includes declare (string.h, math.h, time.h, stdint.h,
#: stddef.h, also in their POSIX and GNU modes, newlib's, avr-libc's with avr/io.h); the locals of the
#: generated code, of its harnesses and the members of its context
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
ctx arena run status part peak ticks start top floor paint node sample profile_ticks align_int align_float
i j k n o r v va vb acc band rows first skip count scale
asctime ctime difftime gmtime localtime mktime time clock timespec tm tzname tzset timezone daylight dysize timegm
timelocal nanosleep itimerspec sigevent asctime_r ctime_r gmtime_r localtime_r lgamma_r lgammaf_r lgammal_r signgam
bcmp bcopy bzero explicit_bzero ffs ffsl ffsll index rindex stpcpy stpncpy timespec_get math_errhandling linux unix i386
cli sei reti
""".split())

#: the math.h functions, each also with its ``f`` and ``l`` forms
_MATH_FUNCTIONS = """acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb
ldexp log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil floor
nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo copysign nan nextafter nexttoward
fdim fmax fmin fma fpclassify isfinite isinf isnan isnormal signbit isgreater isgreaterequal isless
islessequal islessgreater isunordered drem finite gamma j0 j1 jn y0 y1 yn scalb significand infinity exp10 pow10
square""".split()

_RESERVED = _RESERVED_WORDS | frozenset(f"{f}{suffix}" for f in _MATH_FUNCTIONS for suffix in ("", "f", "l"))

#: families of the same: POSIX's ``_t`` types, the names C reserves for string.h, time.h's POSIX
#: functions, inttypes.h's formats, avr-libc's vectors and program-memory functions, the generated
#: code's numbered locals, tractile's ``tl_``/``TL_`` names and what C reserves to implementations
_RESERVED_PATTERN = re.compile(
    r"(\w+_t|(str|mem|wcs)[a-z]\w*|clock_\w+|timer_\w+|(PRI|SCN)[a-zA-Z]\w*|\w+_vect(_num)?|pgm_\w+|bit_is_\w+"
    r"|loop_until_\w+|(source|sources|in|out|sample|i)\d+|tl_\w*|TL_\w*|__\w*|_[A-Z]\w*)")

#: a name without a lower-case letter looks like a macro: the standard and platform headers (AVR's
#: avr/io.h alone defines about a thousand: ``ADC``, ``SP``, ``PB0``...) and the model's own
#: header (``NAME_INPUT0_NAME``) define such names, so a generated identifier never is one
_MACRO_LIKE = re.compile(r"[A-Z0-9_]+")

#: the longest identifier made from a model's text (C99 guarantees 63 significant characters)
IDENTIFIER_LIMIT = 60


def is_reserved(name: str) -> bool:
    """Whether ``name`` may collide with the language, the standard or platform headers, the
    locals of the generated code or tractile's own C (``tl_``, ``TL_``), or looks like a macro.

    None of those names ends with an underscore, so appending one makes a name safe.
    """
    return name in _RESERVED or _RESERVED_PATTERN.fullmatch(name) is not None or _MACRO_LIKE.fullmatch(name) is not None


def _sanitised(text: str, limit: int) -> str:
    limit = max(8, min(limit, IDENTIFIER_LIMIT))
    name = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")
    if len(name) > limit - 1:
        tail = name[-(limit - 1):]
        cut = tail.find("_")
        name = tail[cut + 1:] if 0 <= cut < len(tail) - 8 else tail.strip("_")
    if not name or name[0].isdigit():
        name = "n" + name
    return name


def identifier(text: str, limit: int = 40) -> str:
    """A C identifier resembling ``text`` (``sequential/dense_1/MatMul`` -> ``sequential_dense_1_MatMul``).

    Only ``[A-Za-z0-9_]`` survive (runs of anything else, and of underscores, become one
    underscore); the result never starts with a digit or an underscore, is at most ``limit``
    characters (long names keep their last path components) and never collides with the
    language, the headers the generated code includes or tractile's C (:func:`is_reserved`
    names get a trailing ``_``: ``exp_``, ``X_``). TFLite's fused names
    (``a/MatMul;a/Relu;a/BiasAdd``) keep their first part.
    """
    name = _sanitised(text.split(";")[0], limit)
    return name + "_" if is_reserved(name) else name


#: stems of the files beside a model's own in the folders tractile writes (harness, project, the
#: headers the generated code includes; compared in lower case, for case-insensitive file systems)
_FILE_STEMS = frozenset("""main startup inputs link makefile firmware assert complex ctype errno fenv float inttypes
iso646 limits locale math setjmp signal stdalign stdarg stdatomic stdbool stddef stdint stdio stdlib stdnoreturn
string tgmath threads time uchar wchar wctype arm_acle""".split())


def program_name(text: str) -> str:
    """The C prefix of a compiled model (``NAME_invoke``, ``NAME_H``, ``NAME.h``) made from a file
    stem or a user's choice: ``[A-Za-z0-9_]``, not starting with a digit or an underscore,
    length-capped; upper case is kept (``NET_invoke``). Never the stem of another file of the
    folder (``main``, ``inputs``, ``math``...) nor in tractile's ``tl_`` family (a ``tl_common``
    model's include guard would be the kernels'): those get a trailing ``_``."""
    name = _sanitised(text, IDENTIFIER_LIMIT)
    lowered = name.lower()
    return name + "_" if lowered in _FILE_STEMS or lowered.startswith("tl_") else name


class Names:
    """Hands out unique C identifiers."""

    def __init__(self, reserved: tuple[str, ...] = ()) -> None:
        self.taken: set[str] = set(reserved)

    def unique(self, text: str, limit: int = 40) -> str:
        """An :func:`identifier` for ``text`` not handed out before (``x``, ``x_2``, ``x_3``...)."""
        name, index = identifier(text, limit), 1
        base = name.rstrip("_")
        while name in self.taken:
            index += 1
            name = f"{base}_{index}"
            if is_reserved(name):
                name += "_"
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
    if dtype == DatumType.F32 or math.isnan(value) or math.isinf(value):
        return c_float(value) if dtype == DatumType.F32 else c_float(value).removesuffix("f")
    text = repr(value)
    if "." not in text and "e" not in text:
        text += ".0"
    return text


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
