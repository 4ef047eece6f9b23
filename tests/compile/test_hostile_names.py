"""Issue 29: a model's names are data, never code. Every name slot of ONNX, TFLite and TensorFlow
models holds hostile text (line breaks, NUL, quotes, comment and trigraph sequences, preprocessor
lines, the issue's constructor exploit, terminal escapes, markup, 10k characters, non-ASCII,
keywords, libc and platform names, names that collide once sanitised: ``tools/hostile_names.py``).

For each model: the compiled model computes what the interpreter does and no payload ran (the
marker file the exploit would create never exists); ``NAME.c`` builds under strict C99 warnings
with gcc and clang (and avr-gcc); the object defines exactly the model's four functions and no
constructor; every ``_NAME`` macro spells the name's exact UTF-8 bytes. A Cortex-M4 project
builds without a warning and prints the names in QEMU. The command line, the graph page and ONNX
external data are attacked too.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import tractile
from tractile.cli.main import main as cli_main
from tractile.compile import CSource, generate
from tractile.compile.ctext import c_string, comment_text, identifier, is_reserved, program_name
from tractile.errors import ModelFormatError
from tractile.tools.hostile_names import constructor_payload, hostile_names, random_hostile_name

from . import hostile_models
from .harness import WARNING_FLAGS, assert_same_outputs, needs_cc

NAME = "model"
#: what a compiled model's object file may define (nothing else) and call (nothing else)
EXPORTED = {f"{NAME}_init", f"{NAME}_reset", f"{NAME}_invoke", f"{NAME}_context_bytes"}
CALLED = {"memcpy", "memmove", "memset"}
#: sections through which code runs before main or at exit
STARTUP_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".init", ".fini")


@pytest.fixture(scope="module")
def marker(tmp_path_factory) -> Path:
    """The file the constructor payload tries to create: it must never exist."""
    return tmp_path_factory.mktemp("marker") / "pwned"


@dataclass
class Built:
    kind: str
    path: Path
    model: object
    ports: hostile_models.Slots
    source: CSource
    folder: Path


@pytest.fixture(scope="module", params=["onnx", "tflite", "tf"])
def built(request, marker, tmp_path_factory, compile_cache) -> Built:
    """One hostile model of each format, loaded, compiled (built and loaded into this process) and
    its C written to a folder; shared by the tests below."""
    needs_cc()
    names = hostile_names(str(marker))
    folder = tmp_path_factory.mktemp(f"hostile-{request.param}")
    if request.param == "onnx":
        data, ports = hostile_models.onnx_model(names, constructor_payload(str(marker)))
        path = folder / "$(shell touch pwned) `touch pwned`;.onnx"
    elif request.param == "tflite":
        pytest.importorskip("tflite")
        key = constructor_payload(str(marker), "\r")
        data, ports = hostile_models.tflite_model(names, constructor_payload(str(marker)), key)
        from tractile.formats.tflite.reader import schema

        written = schema("Model").GetRootAs(data, 0)
        assert written.SignatureDefsLength() == 1 and written.SignatureDefs(0).SignatureKey() == key.encode()
        path = folder / "hostile.tflite"
    else:
        pytest.importorskip("tensorboard.compat.proto.graph_pb2")
        data, ports = hostile_models.tf_graph(hostile_models.tf_names(names))
        path = folder / "hostile.pb"
    path.write_bytes(data)
    model = tractile.load(path)
    assert model.input_names() == ports.inputs and model.output_names() == ports.outputs
    compiled = model.compile(NAME, opt="size", cache_dir=compile_cache)
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(hostile_models.SHAPE).astype(np.float32) for _ in ports.inputs]
    assert_same_outputs(model.run(values), compiled.run(values), what=request.param)
    source = compiled.source
    source.write(folder / "c")
    assert not marker.exists()
    return Built(request.param, path, model, ports, source, folder / "c")


def test_names_reach_the_compiled_model_unchanged_and_no_payload_runs(built, marker):
    program = built.source.program
    assert program.input_names == built.ports.inputs and program.output_names == built.ports.outputs
    assert not marker.exists() and not Path("pwned").exists()


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_the_c_builds_strictly_and_defines_only_the_models_functions(built, compiler, marker):
    cc = _tool(compiler)
    obj = built.folder / f"{NAME}.{compiler}.o"
    done = subprocess.run([cc, *WARNING_FLAGS, "-O1", "-c", f"{NAME}.c", "-o", obj.name], cwd=built.folder,
                          capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr[-3000:]
    symbols = subprocess.run([_tool("nm"), "-P", str(obj)], capture_output=True, text=True, check=True).stdout
    defined = {fields[0] for fields in map(str.split, symbols.splitlines()) if fields[1] not in "Uabdrt"}
    undefined = {fields[0] for fields in map(str.split, symbols.splitlines()) if fields[1] == "U"}
    assert defined == EXPORTED
    assert undefined <= CALLED, undefined - CALLED
    sections = subprocess.run([_tool("readelf"), "-S", "-W", str(obj)], capture_output=True, text=True,
                              check=True).stdout
    names = set(re.findall(r"\]\s+(\.\S+)", sections))
    assert not {s for s in names if s.startswith(STARTUP_SECTIONS)}, names
    assert not marker.exists()


def test_the_name_macros_spell_the_names_bytes(built, tmp_path, marker):
    """A C program including the header writes each ``_NAME`` macro's bytes (``sizeof - 1``: NULs
    included); they are the names' UTF-8 bytes. The header is also valid C++."""
    cc = _tool("gcc")
    upper, program = NAME.upper(), built.source.program
    macros = [f"{upper}_INPUT{i}_NAME" for i in range(len(program.inputs))]
    macros += [f"{upper}_OUTPUT{i}_NAME" for i in range(len(program.outputs))]
    main = ["#include <stdio.h>", f'#include "{NAME}.h"',
            "static void put(const char *text, size_t size) {",
            '  printf("%lu:", (unsigned long)size);', "  fwrite(text, 1, size, stdout);", "}",
            "int main(void) {", *[f"  put({m}, sizeof {m} - 1);" for m in macros], "  return 0;", "}", ""]
    (tmp_path / "names.c").write_text("\n".join(main))
    # the 10,000-character name is a literal longer than the 4095 bytes C99 promises (-pedantic says so)
    done = subprocess.run([cc, *WARNING_FLAGS, "-Wno-overlength-strings", f"-I{built.folder}", "names.c", "-o",
                           "names"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr[-3000:]
    printed = subprocess.run([str(tmp_path / "names")], capture_output=True, check=True).stdout
    spelled = []
    while printed:
        size, _, rest = printed.partition(b":")
        spelled.append(rest[:int(size)])
        printed = rest[int(size):]
    assert spelled == [name.encode() for name in built.ports.inputs + built.ports.outputs]
    if shutil.which("g++"):
        done = subprocess.run(["g++", "-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic",
                               "-Wno-overlength-strings", "-fsyntax-only", f"{NAME}.h"], cwd=built.folder,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
    assert not marker.exists()


def test_the_c_for_avr_builds_strictly(built):
    """avr-libc's headers define about a thousand upper-case register names (``SP``, ``ADC``...)."""
    avr = _tool("avr-gcc")
    source = generate(built.model, name=NAME, target="avr")
    source.write(built.folder / "avr")
    done = subprocess.run([avr, "-mmcu=atmega328p", "-DTL_PROGMEM", "-std=c99", "-Wall", "-Wextra", "-Werror",
                           "-O1", "-c", f"{NAME}.c", "-o", f"{NAME}.o"], cwd=built.folder / "avr",
                          capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr, done.stderr[-3000:]


def test_a_cortex_m4_project_builds_without_warnings_and_prints_the_names(built, marker):
    if built.kind != "onnx":
        pytest.skip("one emulated project is enough (the ONNX one, whose file name is hostile too)")
    for tool in ("make", "arm-none-eabi-gcc", "qemu-system-arm"):
        _tool(tool)
    project = built.folder.parent / "project"
    assert cli_main(["compile", str(built.path), "--target", "cortex-m4", "--project", str(project)]) == 0
    stem = program_name(built.path.stem)
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", stem) and (project / f"{stem}.h").exists()
    done = subprocess.run(["make"], cwd=project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "warning" not in done.stderr + done.stdout, done.stderr[-3000:]
    run = subprocess.run(["make", "run"], cwd=project, capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    printed, at = run.stdout + run.stderr, 0  # QEMU writes the semihosting console to stderr
    for name in built.ports.outputs:
        label = name.encode().split(b"\x00")[0] + b" (x1000):"  # the firmware writes C strings
        found = printed.find(label, at)
        assert found >= 0, f"label {label[:80]!r} not printed in order"
        at = found + len(label)
    assert not marker.exists() and not (project / "pwned").exists() and not Path("pwned").exists()


def test_compiled_segments_run_no_code(marker, compile_cache):
    """``compile="auto"`` compiles runs of nodes into the interpreter's process: the same names."""
    from tractile.compile.segments import CompiledSegment, compile_segments

    needs_cc()
    names = [constructor_payload(str(marker)), constructor_payload(str(marker), "\r"), "i", "v", "a\x00b"]
    data, _ = hostile_models.onnx_model(names, constructor_payload(str(marker)))
    reference = tractile.load(data)
    auto = compile_segments(tractile.load(data), cache_dir=compile_cache)
    assert any(isinstance(node.op, CompiledSegment) for node in auto.nodes)
    values = [np.full(hostile_models.SHAPE, float(k) - 2, np.float32) for k in range(len(names))]
    assert_same_outputs(reference.run(values), auto.run(values))
    assert not marker.exists()


def test_the_command_line_shows_names_as_inert_text(built, capsys):
    if built.kind != "onnx":
        pytest.skip("the command line is the same for every format")
    for command in (["dump", str(built.path)], ["run", str(built.path)], ["compile", str(built.path)]):
        assert cli_main(command) == 0
        captured = capsys.readouterr()
        shown = captured.out + captured.err
        assert "\x1b" not in shown and "\r" not in shown and "\x9b" not in shown and "\x07" not in shown
        assert "[/bold]" in shown, f"{command[0]}: the markup-like name is shown as text"


def test_the_graph_page_keeps_its_data_json_and_its_script_closed(built, tmp_path):
    from tractile.tools.html_graph import write_html

    page_path = tmp_path / "graph.html"
    write_html(built.model, page_path)
    page = page_path.read_text(encoding="utf-8")
    found = re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', page, re.S)
    assert found is not None
    data = json.loads(found.group(1))
    shown = {node["name"] for node in data["nodes"]}
    assert set(built.ports.outputs) & shown or set(built.ports.inputs) & shown
    assert not re.search(r"[<>&]", found.group(1))
    assert "<script>alert" not in page and page.count("</script") == page.count("<script")


def test_generated_files_replace_links_planted_in_the_output_folder(built, tmp_path):
    """A symbolic or hard link named like a generated file is replaced, never written through."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{NAME}.h").symlink_to(victim)
    os.link(victim, out / f"{NAME}.c")
    built.source.write(out)
    assert victim.read_text() == "keep"
    assert not (out / f"{NAME}.h").is_symlink() and (out / f"{NAME}.c").read_text() == built.source.source


# text helpers, on every hostile name and random mixes ----------------------------------------------

def _random_names(marker: str) -> list[str]:
    rng = np.random.default_rng(29)
    return hostile_names(marker) + [random_hostile_name(rng, marker) for _ in range(300)]


def _unescape(literal: str) -> bytes:
    assert literal[0] == literal[-1] == '"'
    out, body, at = bytearray(), literal[1:-1], 0
    while at < len(body):
        if body[at] == "\\":
            out.append(int(body[at + 1:at + 4], 8))
            at += 4
        else:
            assert body[at] not in '"?' and " " <= body[at] <= "~"
            out.append(ord(body[at]))
            at += 1
    return bytes(out)


def test_string_literals_comments_and_identifiers_hold_any_text(marker):
    for text in _random_names(str(marker)):
        assert _unescape(c_string(text)) == text.encode()
        comment = comment_text(text)
        assert "*/" not in comment and "/*" not in comment and "??" not in comment and "\\" not in comment
        assert all(" " <= c <= "~" for c in comment) and len(comment) <= 604
        name = identifier(text)
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,60}", name) and "__" not in name, name
        assert not is_reserved(name) or name.endswith("_"), name


@pytest.mark.parametrize("location", ["absolute", "parent", "link"])
def test_onnx_external_data_outside_the_models_folder_is_refused(tmp_path, location):
    import onnx

    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(6, dtype=np.float32).tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    if location == "link":
        (folder / "w.bin").symlink_to(secret)
    model = _external_model(folder, "w.bin")
    entry = next(e for e in model.graph.initializer[0].external_data if e.key == "location")
    entry.value = {"absolute": str(secret), "parent": "../secret.bin", "link": "w.bin"}[location]
    onnx.save(model, folder / "m.onnx")
    with pytest.raises(ModelFormatError, match="outside the model's folder|relative path"):
        tractile.load(folder / "m.onnx")


def test_onnx_external_data_inside_the_folder_loads_and_without_a_folder_is_refused(tmp_path, monkeypatch):
    import onnx

    model = _external_model(tmp_path, "data/w.bin")
    onnx.save(model, tmp_path / "m.onnx")
    loaded = tractile.load(tmp_path / "m.onnx")
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(loaded.run([x])[0], x + np.arange(6, dtype=np.float32).reshape(2, 3))
    monkeypatch.chdir(tmp_path)  # a model given as bytes would otherwise read its data from the current folder
    with pytest.raises(ModelFormatError, match="other files"):
        tractile.load((tmp_path / "m.onnx").read_bytes())


def _external_model(folder: Path, location: str):
    """An Add of a 2x3 input and a constant stored in ``folder/location``."""
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    (folder / location).parent.mkdir(parents=True, exist_ok=True)
    if not (folder / location).exists():
        (folder / location).write_bytes(weights.raw_data)
    weights.ClearField("raw_data")
    weights.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "24")):
        weights.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
