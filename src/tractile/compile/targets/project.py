"""``tractile compile [--target ...] --project DIR``: a minimal example project that builds and runs.

The folder holds the generated model, a ``main.c`` that runs it once on a sample input and
prints the outputs, and a build: a Makefile by default (``make`` builds ``firmware.elf`` with
the board's startup code and linker script, ``make run`` runs it in the emulator; on the host,
``example``), or with ``build_system="cmake"`` a CMake project (:mod:`.cmake`) whose library
target other CMake projects take as it is. On a board the stack is protected as in the
verification firmware (:mod:`.startup`); its size is the one given, else what the verification
firmware uses in the emulator plus a margin.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ...errors import TractileError
from ..ctext import array_initializer, comment_text
from ..files import write_file
from .boards import Board
from .cmake import cmake_lists, toolchain_file
from .firmware import libc_specs, qemu_command
from .harness import platform_header
from .startup import linker_script, stack_with_margin, startup_source

BUILD_SYSTEMS = ("make", "cmake")

HOST_PLATFORM = r"""/* tl_platform.h: the example on a host: the console is stdout */
#ifndef TL_PLATFORM_H
#define TL_PLATFORM_H
#include <stdio.h>
#include <string.h>

static inline void tl_platform_init(void) {}
static inline void tl_write(const char *text) { fputs(text, stdout); }
static inline void tl_finish(void) { fflush(stdout); }
#define TL_COPY_INPUT(dst, src, bytes) memcpy(dst, src, bytes)
/* the operating system guards a host's stack: nothing to paint or check */
static inline void tl_paint_canary(void) {}
static inline int tl_stack_overflowed(void) { return 0; }
#endif
"""

HOST_MAKEFILE = """# Builds and runs {name} on this machine.
#   make        build example
#   make run    run it
CC ?= cc
CFLAGS = -std=c99 -O2 -Wall -Wextra -fno-strict-aliasing

example: main.c {name}.c {name}.h tl_platform.h
\t$(CC) $(CFLAGS) main.c {name}.c -o $@ -lm

run: example
\t./example

clean:
\trm -f example

.PHONY: run clean
"""

MAKEFILE = """# Builds and runs {name} on {board} ({description}).
#   make        build firmware.elf
#   make run    run it in {emulator}
CC = {compiler}
CFLAGS = {flags} -std=c99 -Os -ffunction-sections -fdata-sections -Wall -Wextra{progmem}
LDFLAGS = -Wl,--gc-sections{ldflags}

firmware.elf: main.c {name}.c {name}.h{startup}
\t$(CC) $(CFLAGS) {sources} -o $@ $(LDFLAGS) -lm

run: firmware.elf
\t{run}

clean:
\trm -f firmware.elf

.PHONY: run clean
"""


def example_main(source, sample: list[np.ndarray]) -> str:
    program, name = source.program, source.name
    lines = [f"/* main.c: runs {name} once on a sample input and prints its outputs */",
             "#include <stdint.h>", "#include <string.h>", "", f'#include "{name}.h"', '#include "tl_common.h"',
             '#include "tl_platform.h"', "", f"static {name}_ctx ctx;"]
    args = []
    for index, (tensor, value) in enumerate(zip(program.inputs, sample)):
        lines.append(f"static const {tensor.ctype} sample{index}[{max(tensor.count, 1)}] TL_CONST = "
                     f"{array_initializer(np.asarray(value).reshape(-1), tensor.dtype)};")
        lines.append(f"static {tensor.ctype} in{index}[{max(tensor.count, 1)}];")
        args.append(f"in{index}")
    for index, tensor in enumerate(program.outputs):
        lines.append(f"static {tensor.ctype} out{index}[{max(tensor.count, 1)}];")
        args.append(f"out{index}")
    lines += ["", "static void put_int(int32_t value) {", "  char text[16];", "  int at = 15;",
              "  uint32_t magnitude = value < 0 ? 0u - (uint32_t)value : (uint32_t)value;", "  text[at] = 0;",
              "  do {", "    text[--at] = (char)('0' + (int)(magnitude % 10u));", "    magnitude /= 10u;",
              "  } while (magnitude);", "  if (value < 0) text[--at] = '-';", "  tl_write(text + at);", "}", "",
              "int main(void) {", "  int32_t i;", "  tl_platform_init();", "  tl_paint_canary();",
              f"  {name}_init(&ctx);"]
    for index in range(len(program.inputs)):
        lines.append(f"  TL_COPY_INPUT(in{index}, sample{index}, sizeof in{index});")
    lines.append(f"  if ({name}_invoke(&ctx, {', '.join(args)}) != 0) tl_write(\"invoke failed\\n\");")
    lines += ["  if (tl_stack_overflowed()) { /* AVR: the canary below the stack was overwritten */",
              '    tl_write("x stack overflow\\n");', "    tl_finish();", "    return 1;", "  }"]
    for index, tensor in enumerate(program.outputs):
        lines.append(f"  tl_write({name.upper()}_OUTPUT{index}_NAME);")
        if tensor.dtype.is_float:
            printed = f"(int32_t)(out{index}[i] * 1000.0f)"
            lines.append('  tl_write(" (x1000):");')
        else:
            printed = f"(int32_t)out{index}[i]"
            lines.append('  tl_write(":");')
        lines += [f"  for (i = 0; i < {tensor.count}; ++i) {{", '    tl_write(" ");', f"    put_int({printed});",
                  "  }", '  tl_write("\\n");']
    lines += ["  tl_finish();", "  return 0;", "}", ""]
    return "\n".join(lines)


def project_stack(source, board: Board, sample: list[np.ndarray]) -> tuple[int | None, str]:
    """(bytes, how they were chosen) of the project's stack: what the verification firmware uses
    in the emulator, plus a margin; (None, why) when the tools to measure it are missing."""
    from .firmware import build_firmware, run_emulator, toolchain_available

    missing = toolchain_available(board)
    if missing:
        return None, f"not measured: {', '.join(missing)} missing"
    with tempfile.TemporaryDirectory(prefix="tractile-stack-") as folder:
        firmware = build_firmware(source, board, [sample], Path(folder), "size", False)
        used = run_emulator(firmware).stack_used
    return stack_with_margin(used), f"{used} B measured in {board.emulator}, plus a margin"


def write_project(source, board: Board | None, folder: str | Path, sample: list[np.ndarray],
                  build_system: str = "make", origin: str = "a tractile model", stack: int | None = None) -> list[Path]:
    """Write the example project for ``source`` (a CSource) on ``board`` (None: this machine) into
    ``folder``, built by ``build_system`` ("make" or "cmake"), with ``stack`` bytes of stack on a
    board (None: measured, :func:`project_stack`)."""
    if build_system not in BUILD_SYSTEMS:
        raise TractileError(f"unknown build system {build_system!r}: {' or '.join(BUILD_SYSTEMS)}")
    folder = Path(folder)
    why = "given"
    if stack is None and board is not None:
        stack, why = project_stack(source, board, sample)
    written = source.write(folder)
    files = {"main.c": example_main(source, sample)}
    if build_system == "cmake":
        files["CMakeLists.txt"] = cmake_lists(source.name, board, comment_text(origin))
        files["host/tl_platform.h"] = HOST_PLATFORM
        if board is not None:
            files["board/tl_platform.h"] = platform_header(board, stack)
            if board.arch != "avr":
                files["board/startup.c"] = startup_source(board)
                files["board/link.ld"] = linker_script(board, _project_stack_bytes(source, board, stack), why)
            toolchain, text = toolchain_file(board)
            files[toolchain] = text
    elif board is None:
        files["tl_platform.h"] = HOST_PLATFORM
        files["Makefile"] = HOST_MAKEFILE.format(name=source.name)
    else:
        files.update(_board_makefile(source, board, stack, why))
    for filename, text in files.items():
        subfolder, _, plain = filename.rpartition("/")
        where = folder / subfolder if subfolder else folder
        if where.is_symlink():
            raise TractileError(f"refusing to write into {where}: it is a symbolic link")
        where.mkdir(parents=True, exist_ok=True)
        written.append(write_file(where, plain, text))
    return written


def _project_stack_bytes(source, board: Board, stack: int | None) -> int:
    """The stack a project links: the given or measured one, else a share of the RAM the plan leaves."""
    if stack:
        return stack
    planned = source.report["arena_bytes"] + source.report["state_bytes"] + source.report["io_bytes"]
    return max(1024, min(8192, (board.ram_bytes - planned - 1024) // 8 * 8))


def _board_makefile(source, board: Board, stack: int | None, why: str) -> dict[str, str]:
    """The flat Makefile project of a board: platform layer, startup, linker script, Makefile."""
    avr = board.arch == "avr"
    files = {"tl_platform.h": platform_header(board, stack)}
    if not avr:
        files["startup.c"] = startup_source(board)
        files["link.ld"] = linker_script(board, _project_stack_bytes(source, board, stack), why)
    sources = f"main.c {source.name}.c" + ("" if avr else " startup.c")
    if avr:
        run = f"simavr -m {board.name} -f {board.clock_hz} firmware.elf"
    else:
        run = qemu_command(board, "firmware.elf")
    files["Makefile"] = MAKEFILE.format(
        name=source.name, board=board.name, description=board.target.description,
        emulator="simavr" if avr else "QEMU", compiler=board.toolchain, flags=" ".join(board.flags),
        progmem=" -DTL_PROGMEM" if avr else "", ldflags="" if avr else f"{libc_specs(board)} -nostartfiles -T link.ld",
        startup="" if avr else " startup.c link.ld", sources=sources, run=run)
    return files
