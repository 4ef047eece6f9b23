"""``tractile compile --target ... --project DIR``: a minimal example project that builds and runs.

The folder holds the generated model, a ``main.c`` that runs it once on a sample input and
prints the outputs, the startup code and linker script of the board (Cortex-M), and a
Makefile: ``make`` builds ``firmware.elf``, ``make run`` runs it in the emulator. The stack is
protected as in the verification firmware (:mod:`.startup`); its size is the one given, else
what the verification firmware uses in the emulator plus a margin.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..ctext import array_initializer
from .boards import Board
from .harness import platform_header
from .startup import CORTEX_M_STARTUP, linker_script, stack_with_margin

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


def write_project(source, board: Board, folder: str | Path, sample: list[np.ndarray],
                  stack: int | None = None) -> list[Path]:
    """Write the example project for ``source`` (a CSource) on ``board`` into ``folder``, with
    ``stack`` bytes of stack (None: measured, :func:`project_stack`)."""
    folder = Path(folder)
    why = "given"
    if stack is None:
        stack, why = project_stack(source, board, sample)
    written = source.write(folder)
    avr = board.emulator == "simavr"
    files = {"main.c": example_main(source, sample), "tl_platform.h": platform_header(board, stack)}
    if not avr:
        files["startup.c"] = CORTEX_M_STARTUP
        planned = source.report["arena_bytes"] + source.report["state_bytes"] + source.report["io_bytes"]
        fallback = max(1024, min(8192, (board.ram_bytes - planned - 1024) // 8 * 8))
        files["link.ld"] = linker_script(board, stack or fallback, why)
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
    for filename, text in files.items():
        path = folder / filename
        path.write_text(text)
        written.append(path)
    return written
