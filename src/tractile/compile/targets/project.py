"""``tractile compile [--target ...] --project DIR``: a minimal example project that builds and runs.

The folder holds the generated model, a ``main.c`` that runs it once on a sample input and
prints the outputs, and a build: a Makefile by default (``make`` builds ``firmware.elf`` with
the board's startup code and linker script, ``make run`` runs it in the emulator; on the host,
``example``), or with ``build_system="cmake"`` a CMake project (:mod:`.cmake`) whose library
target other CMake projects take as it is.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import TractileError
from ..ctext import array_initializer, comment_text
from ..files import write_file
from .boards import Board
from .cmake import cmake_lists, toolchain_file
from .harness import CORTEX_M_STARTUP, linker_script, platform_header

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
              "int main(void) {", "  int32_t i;", "  tl_platform_init();", f"  {name}_init(&ctx);"]
    for index in range(len(program.inputs)):
        lines.append(f"  TL_COPY_INPUT(in{index}, sample{index}, sizeof in{index});")
    lines.append(f"  if ({name}_invoke(&ctx, {', '.join(args)}) != 0) tl_write(\"invoke failed\\n\");")
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


def write_project(source, board: Board | None, folder: str | Path, sample: list[np.ndarray],
                  build_system: str = "make", origin: str = "a tractile model") -> list[Path]:
    """Write the example project for ``source`` (a CSource) on ``board`` (None: this machine) into
    ``folder``, built by ``build_system`` ("make" or "cmake")."""
    if build_system not in BUILD_SYSTEMS:
        raise TractileError(f"unknown build system {build_system!r}: {' or '.join(BUILD_SYSTEMS)}")
    folder = Path(folder)
    written = source.write(folder)
    files = {"main.c": example_main(source, sample)}
    if build_system == "cmake":
        files["CMakeLists.txt"] = cmake_lists(source.name, board, comment_text(origin))
        files["host/tl_platform.h"] = HOST_PLATFORM
        if board is not None:
            files["board/tl_platform.h"] = platform_header(board)
            if board.emulator != "simavr":
                files["board/startup.c"] = CORTEX_M_STARTUP
                files["board/link.ld"] = linker_script(board)
            toolchain, text = toolchain_file(board)
            files[toolchain] = text
    elif board is None:
        files["tl_platform.h"] = HOST_PLATFORM
        files["Makefile"] = HOST_MAKEFILE.format(name=source.name)
    else:
        files.update(_board_makefile(source, board))
    for filename, text in files.items():
        subfolder, _, plain = filename.rpartition("/")
        where = folder / subfolder if subfolder else folder
        if where.is_symlink():
            raise TractileError(f"refusing to write into {where}: it is a symbolic link")
        where.mkdir(parents=True, exist_ok=True)
        written.append(write_file(where, plain, text))
    return written


def _board_makefile(source, board: Board) -> dict[str, str]:
    """The flat Makefile project of a board: platform layer, startup, linker script, Makefile."""
    files = {"tl_platform.h": platform_header(board)}
    avr = board.emulator == "simavr"
    if not avr:
        files["startup.c"] = CORTEX_M_STARTUP
        files["link.ld"] = linker_script(board)
    sources = f"main.c {source.name}.c" + ("" if avr else " startup.c")
    if avr:
        run = f"simavr -m {board.name} -f {board.clock_hz} firmware.elf"
    else:
        run = (f"qemu-system-arm -M {board.name} -nographic -monitor none -serial none "
               "-semihosting-config enable=on,target=native -kernel firmware.elf")
    files["Makefile"] = MAKEFILE.format(
        name=source.name, board=board.name, description=board.target.description,
        emulator="simavr" if avr else "QEMU", compiler=board.toolchain, flags=" ".join(board.flags),
        progmem=" -DTL_PROGMEM" if avr else "", ldflags="" if avr else " --specs=nano.specs -nostartfiles -T link.ld",
        startup="" if avr else " startup.c link.ld", sources=sources, run=run)
    return files
