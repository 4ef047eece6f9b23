"""Host builds keep the large constants out of the C text: in a binary file beside it, defined
by a generated assembler file (``.incbin``), declared ``extern`` in the C; the built model computes
the same bytes as the C-text build, and what users take away (``CSource.files``) stays C text."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from tractile.compile import host_files
from tractile.compile.host import CompiledModel, build_shared_library
from tractile.compile.host_files import EXTERNAL_ALIGN, EXTERNAL_MIN_BYTES, host_build_files

from ..tflite.builder import GraphBuilder, q, qc
from .harness import WARNING_FLAGS, assert_same_outputs, compiled, random_input

RNG = np.random.default_rng(28)
pytestmark = pytest.mark.skipif(not host_files.elf_host(), reason="the constants' binary is for ELF hosts")


def dense_model(dtype: str):
    """One fully connected layer whose weights (96 x 64) are over the threshold, its bias under it."""
    g = GraphBuilder()
    units, depth = 96, 64
    if dtype == "i8":
        x = g.input("x", "i8", (2, depth), q(0.05, -7))
        weights = g.const("w", RNG.integers(-127, 128, (units, depth)), "i8",
                          qc(np.linspace(0.003, 0.02, units), 0))
        bias = g.const("b", RNG.integers(-3000, 3000, units), "i32")
        layer = g.dense("fc", x, weights, bias, quant=q(0.3, 3), activation="RELU")
    else:
        x = g.input("x", "f32", (2, depth))
        weights = g.const("w", RNG.standard_normal((units, depth)).astype(np.float32))
        bias = g.const("b", RNG.standard_normal(units).astype(np.float32))
        layer = g.dense("fc", x, weights, bias, activation="RELU6")
    return g.outputs(layer).into_optimized()


@pytest.mark.parametrize("dtype", ["i8", "f32"])
def test_large_constants_are_built_from_the_binary_with_the_same_results(dtype, compile_cache):
    model = dense_model(dtype)
    name = f"blob_{dtype}"
    cm = compiled(model, compile_cache, name=name, opt="size")
    files = host_build_files(cm.source)
    assert cm.library.parent.joinpath(f"{name}_const.bin").read_bytes() == files[f"{name}_const.bin"]
    built_c, portable_c = files[f"{name}.c"], cm.source.source
    assert isinstance(built_c, str)
    blob, stub = files[f"{name}_const.bin"], files[f"{name}_const.S"]
    assert isinstance(blob, bytes) and isinstance(stub, str)
    big = [(t, v) for t, v in cm.source.program.constants if t.used and t.nbytes >= EXTERNAL_MIN_BYTES]
    small = [t for t, _ in cm.source.program.constants if t.used and t.nbytes < EXTERNAL_MIN_BYTES]
    assert big and small
    for tensor, values in big:
        declared = re.search(rf"extern const {tensor.ctype} {tensor.var}\[{tensor.count}\] .*?/\* {name}_const.bin "
                             rf"at (\d+) \*/", built_c)
        assert declared, tensor.var
        offset = int(declared.group(1))
        assert offset % EXTERNAL_ALIGN == 0
        assert blob[offset:offset + tensor.nbytes] == np.asarray(values, tensor.dtype.np).tobytes()
        assert f'.incbin "{name}_const.bin", {offset}, {tensor.nbytes}' in stub
        assert f"{tensor.var}[{tensor.count}] TL_CONST =" not in built_c
        assert f"static const {tensor.ctype} {tensor.var}[{tensor.count}] TL_CONST = {{" in portable_c
    for tensor in small:
        assert f"static const {tensor.ctype} {tensor.var}[{tensor.count}] TL_CONST = {{" in built_c
    assert len(built_c) < len(portable_c) - 2 * sum(t.count for t, _ in big)
    assert set(cm.source.files) == set(files) - {f"{name}_const.bin", f"{name}_const.S"}

    from_text = CompiledModel(cm.source, build_shared_library(cm.source.files, name, "size", compile_cache), model)
    assert from_text.library != cm.library
    rng = np.random.default_rng(1)
    for _ in range(3):
        values = [random_input(f, rng) for f in cm.input_facts]
        ours, text, interpreted = cm.run(values), from_text.run(values), model.run(values)
        assert [o.tobytes() for o in ours] == [o.tobytes() for o in text]
        assert_same_outputs(interpreted, ours)


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_the_host_build_files_build_strictly(compiler, tmp_path):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    from tractile.compile import generate

    source = generate(dense_model("i8"), "strict")
    for filename, content in host_build_files(source).items():
        path = tmp_path / filename
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    done = subprocess.run([compiler, *WARNING_FLAGS, "-O1", "-fPIC", "-shared", "-o", "libstrict.so", "strict.c",
                           "strict_const.S"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr[-3000:]
    symbols = subprocess.run(["nm", "-D", "--defined-only", "libstrict.so"], cwd=tmp_path, capture_output=True,
                             text=True, check=True).stdout
    big = [t.var for t, _ in source.program.constants if t.used and t.nbytes >= EXTERNAL_MIN_BYTES]
    defined = {line.split()[-1] for line in symbols.splitlines() if line.strip()}
    assert big and "strict_invoke" in defined and not defined & set(big)  # the constants stay hidden
    stack = subprocess.run(["readelf", "-lW", "libstrict.so"], cwd=tmp_path, capture_output=True, text=True,
                           check=True).stdout
    assert re.search(r"GNU_STACK.* RW ", stack)  # the assembler file does not ask for an executable stack


def test_non_elf_hosts_and_the_cache_key(monkeypatch, tmp_path):
    from tractile.compile import generate

    source = generate(dense_model("f32"), "fallback")
    monkeypatch.setattr(host_files.sys, "platform", "darwin")
    assert host_build_files(source) == dict(source.files)
    monkeypatch.undo()
    text = "extern const unsigned char data[4];\nint first(void) { return data[0]; }\n"
    stub = ('\t.section .rodata\n\t.globl data\n\t.hidden data\ndata:\n\t.incbin "data.bin", 0, 4\n'
            '\t.section .note.GNU-stack,"",%progbits\n')
    libraries = [build_shared_library({"k.c": text, "k_const.S": stub, "data.bin": content}, "k", "size", tmp_path)
                 for content in (b"\x01\x02\x03\x04", b"\x05\x02\x03\x04")]
    assert libraries[0] != libraries[1]
    import ctypes

    assert [ctypes.CDLL(str(path)).first() for path in libraries] == [1, 5]
