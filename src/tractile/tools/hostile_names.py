"""Hostile names: the text an attacker can put in a model's name slots (tensors, nodes, inputs and
outputs, graphs, signatures), by class, to test that no name reaches C, a terminal or a page as
anything but data.

:func:`hostile_names` gives one name of every class (the hostile-names test puts each in every
slot of ONNX, TFLite and TensorFlow models); :func:`random_hostile_name` mixes pieces of the
classes at random (the structural fuzzer's names cases). ``marker`` is a path the constructor
payload tries to create: it must never exist afterwards.
"""
from __future__ import annotations

import numpy as np

#: pieces of text by what they try to break
CLASSES: dict[str, tuple[str, ...]] = {
    "line breaks": ("a\nb", "a\rb", "a\r\nb", "a\v\fb", "a\u2028b", "a\u0085b"),
    "nul": ("a\x00b", "\x00"),
    "quotes and backslashes": ('q"uote', "q'uote", "back\\slash", 'end\\"', "splice\\", "\\\n#define N 1"),
    "comments": ("end*/x", "x/*open", "//line", "*/ int injected; /*", "/**/"),
    "trigraphs": ("??/", "??=", "??(", "??)", "??'", "??<", "??!", "??>", "??-", "x??/\ny"),
    "preprocessor": ("\n#define int float\n", "\n#include \"/etc/passwd\"\n", "\n#error injected\n",
                     "\n#pragma GCC poison memcpy\n", "_Pragma(\"GCC error \\\"x\\\"\")"),
    "format strings": ("%n%s%x%p", "%999999999d"),
    "terminal": ("\x1b[2J\x1b[31mred", "\x1b]0;title\x07", "\x9b31m", "[/bold]", "[red]x[/red]", "[link=file:///]x"),
    "html": ("</script><script>alert(1)</script>", "<!--", "&amp;", "<![CDATA["),
    "non-ASCII": ("\u202egnp.exe", "Ωμέγα", "漢字", "\U0001f642", "\ufeffbom", "zero\u200bwidth", "e\u0301"),
    "keywords": ("int", "while", "_Pragma", "__attribute__", "asm", "class", "_Bool", "restrict"),
    "libc": ("memcpy", "exp", "expf", "system", "main", "printf", "errno", "index", "y0", "time"),
    "generated": ("i", "v", "acc", "ctx", "arena", "model_invoke", "model_ctx", "tl_write", "TL_CONST",
                  "MODEL_INPUT0_NAME", "in0", "out0"),
    "macros": ("SP", "PORTB", "NULL", "EOF", "INT32_MAX", "M_PI", "ADC", "X"),
    "collisions": ("a-b", "a b", "a_b", "a__b", "a.b", "a/b", "a;b", "a:b"),
}

#: a long name (10,000 characters, path-like like a deep scope)
LONG = "/".join(f"scope{index:04d}" for index in range(1000))[:10_000]


def constructor_payload(marker: str, line_break: str = "\n") -> str:
    """The issue's exploit: a name that, pasted into a C string literal unescaped, ends it and adds a
    constructor calling ``system("touch MARKER")``; ``//`` comments out the rest of the line."""
    command = ",".join(str(b) for b in f"touch '{marker}'".encode()) + ",0"
    return (f"y{line_break}extern int system(const char *); __attribute__((constructor)) static void f(void) "
            f"{{ static const char c[] = {{{command}}}; system(c); }}{line_break}//")


def hostile_names(marker: str) -> list[str]:
    """One name per piece of every class, the long name and the constructor payloads (line feed and
    carriage return); all different."""
    names = [piece for pieces in CLASSES.values() for piece in pieces]
    names += [LONG, constructor_payload(marker), constructor_payload(marker, "\r")]
    assert len(set(names)) == len(names)
    return names


def random_hostile_name(rng: np.random.Generator, marker: str) -> str:
    """One to four pieces of random classes, sometimes with plain letters, the long name or the
    constructor payload."""
    choice = rng.random()
    if choice < 0.03:
        return LONG
    if choice < 0.08:
        return constructor_payload(marker, str(rng.choice(["\n", "\r"])))
    classes = list(CLASSES)
    pieces = []
    for _ in range(int(rng.integers(1, 5))):
        pool = CLASSES[classes[int(rng.integers(0, len(classes)))]]
        pieces.append(pool[int(rng.integers(0, len(pool)))])
        if rng.random() < 0.3:
            pieces.append("".join(rng.choice(list("abcXYZ019_"), int(rng.integers(1, 4)))))
    return "".join(pieces)


__all__ = ["CLASSES", "LONG", "constructor_payload", "hostile_names", "random_hostile_name"]
