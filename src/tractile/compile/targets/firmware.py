"""Build a test firmware around generated C with the board's tool chain, measure its sizes,
and run it in the board's emulator."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import TractileError
from ..files import write_file
from .boards import Board
from .harness import CORTEX_M_STARTUP, inputs_header, linker_script, main_source, platform_header

INSTALL_HINT = {
    "arm-none-eabi-gcc": "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "arm-none-eabi-size": "apt-get install binutils-arm-none-eabi",
    "arm-none-eabi-nm": "apt-get install binutils-arm-none-eabi",
    "avr-nm": "apt-get install binutils-avr",
    "qemu-system-arm": "apt-get install qemu-system-arm",
    "avr-gcc": "apt-get install gcc-avr avr-libc",
    "avr-size": "apt-get install binutils-avr",
    "simavr": "apt-get install simavr",
}

OPT_FLAGS = {"speed": ("-O2",), "size": ("-Os",)}


def require_tool(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise TractileError(f"{tool} is not installed: it builds or runs code for this target "
                            f"(Debian/Ubuntu: sudo {INSTALL_HINT.get(tool, 'install it')})")
    return found


def toolchain_available(board: Board) -> list[str]:
    """The tools this board needs that are missing (empty: all there)."""
    emulator = "simavr" if board.emulator == "simavr" else "qemu-system-arm"
    return [t for t in (board.toolchain, board.size_tool, emulator) if shutil.which(t) is None]


@dataclass
class Firmware:
    """A built firmware: its folder, ELF, and sizes in bytes."""

    folder: Path
    elf: Path
    board: Board
    model_flash: int
    firmware_flash: int
    firmware_ram: int
    sections: dict = field(default_factory=dict)
    code_bytes: dict = field(default_factory=dict)


def _compiler_flags(board: Board, opt: str) -> list[str]:
    flags = [*board.flags, "-std=c99", *OPT_FLAGS[opt], "-ffunction-sections", "-fdata-sections", "-Wall",
             "-Wextra", "-Wno-unused-function"]
    if board.emulator == "simavr":
        flags.append("-DTL_PROGMEM")
    return flags


def _run(command: list[str], folder: Path, what: str) -> str:
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise TractileError(f"{what} failed:\n$ {' '.join(command)}\n{(done.stderr or done.stdout)[-4000:]}")
    return done.stdout


def object_sizes(size_tool: str, path: Path, folder: Path) -> dict[str, int]:
    """Section sizes of an object or ELF file (``size -A``)."""
    sizes: dict[str, int] = {}
    for line in _run([size_tool, "-A", str(path)], folder, "measuring sizes").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = sizes.get(parts[0], 0) + int(parts[1])
    return sizes


def symbol_sizes(nm_tool: str, path: Path, folder: Path) -> dict[str, int]:
    """Bytes of each function of an object file (``nm -S``; ``.constprop``/``.isra`` clones by
    their function's name)."""
    sizes: dict[str, int] = {}
    for line in _run([nm_tool, "-S", str(path)], folder, "listing symbols").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT" and re.fullmatch(r"[0-9a-fA-F]+", parts[1]):
            name = parts[3].split(".")[0]
            sizes[name] = sizes.get(name, 0) + int(parts[1], 16)
    return sizes


KERNEL_FUNCTION = re.compile(r"^static\s+(?:inline\s+)?[\w\s*]*?\b(tl_\w+)\s*\(", re.MULTILINE)


def code_by_family(files: dict[str, str], model_c: str, functions: dict[str, int]) -> dict[str, int]:
    """Code bytes per kernel header (its functions the compiler kept out of line) and of the model's
    own file (``invoke``, ``init``, ``reset`` with the kernels inlined into them)."""
    family = {function: filename for filename, text in files.items() if filename.endswith(".h")
              for function in KERNEL_FUNCTION.findall(text)}
    sizes: dict[str, int] = {}
    for function, size in functions.items():
        where = family.get(function, model_c)
        sizes[where] = sizes.get(where, 0) + size
    return dict(sorted(sizes.items(), key=lambda item: -item[1]))


def flash_of(sections: dict[str, int]) -> int:
    return sum(size for name, size in sections.items()
               if re.match(r"\.(text|rodata|data|progmem|isr_vector|ARM\.exidx)", name))


def build_firmware(source, board: Board, runs: list[list[np.ndarray]], folder: Path, opt: str = "size",
                   profile: bool = False) -> Firmware:
    """Write and build the firmware for ``source`` (a CSource) running ``runs`` on ``board``."""
    compiler = require_tool(board.toolchain)
    size_tool = require_tool(board.size_tool)
    folder = Path(folder).resolve()  # the tools run inside it: paths relative to the caller would not resolve
    folder.mkdir(parents=True, exist_ok=True)
    source.write(folder)
    program = source.program
    write_file(folder, "inputs.h", inputs_header(program, runs))
    write_file(folder, "tl_platform.h", platform_header(board))
    write_file(folder, "main.c", main_source(program, profile))
    flags = _compiler_flags(board, opt)
    if profile:
        flags += ["-DTL_PROFILE", "-DTL_PROFILE_CLOCK=tl_firmware_clock"]
    model_c = f"{source.name}.c"
    _run([compiler, *flags, "-c", model_c, "-o", f"{source.name}.o"], folder, f"{board.toolchain} on {model_c}")
    model_sections = object_sizes(size_tool, folder / f"{source.name}.o", folder)
    code = code_by_family(source.files, model_c, symbol_sizes(require_tool(board.nm_tool),
                                                              folder / f"{source.name}.o", folder))
    elf = folder / "firmware.elf"
    sources = ["main.c", model_c]
    if board.emulator == "simavr":
        link = [compiler, *flags, *sources, "-o", elf.name, "-Wl,--gc-sections", "-lm"]
    else:
        write_file(folder, "startup.c", CORTEX_M_STARTUP)
        write_file(folder, "link.ld", linker_script(board))
        link = [compiler, *flags, "--specs=nano.specs", "-nostartfiles", "-T", "link.ld", "startup.c", *sources,
                "-o", elf.name, "-Wl,--gc-sections", "-lm"]
    model_flash = flash_of(model_sections)
    if model_flash > board.flash_bytes:
        raise TractileError(f"the model does not fit {board.name}: its code and constants take {model_flash} B of "
                            f"flash, the board has {board.flash_bytes} B")
    try:
        _run(link, folder, f"linking the firmware for {board.name}")
    except TractileError as error:
        overflow = re.search(r"region [`']?(\w+)'? overflowed by (\d+) bytes", str(error))
        if overflow is None:
            raise
        raise TractileError(f"the test firmware does not fit {board.name}: its {overflow.group(1)} overflows by "
                            f"{overflow.group(2)} B (the model alone takes {model_flash} B of the board's "
                            f"{board.flash_bytes} B of flash; the inputs to check are baked in too: verify fewer "
                            "inputs, or choose a larger board)") from None
    sections = object_sizes(size_tool, elf, folder)
    ram = sum(size for name, size in sections.items() if re.match(r"\.(data|bss|noinit)", name))
    return Firmware(folder, elf, board, flash_of(model_sections), flash_of(sections), ram, sections, code)


@dataclass
class EmulatorRun:
    """What a firmware printed, parsed."""

    outputs: dict[int, bytes]
    failures: dict[int, int]
    ticks: int
    calibration_ticks: int
    stack_peak: int
    context_bytes: int
    node_ticks: dict[int, int]
    text: str


def run_emulator(firmware: Firmware, timeout: float = 120.0) -> EmulatorRun:
    """Run ``firmware`` in its board's emulator and parse what it prints."""
    board = firmware.board
    if board.emulator == "simavr":
        command = [require_tool("simavr"), "-m", board.name, "-f", str(board.clock_hz), str(firmware.elf)]
    else:
        command = [require_tool("qemu-system-arm"), "-M", board.name, "-nographic", "-monitor", "none",
                   "-serial", "none", "-semihosting-config", "enable=on,target=native", "-icount", "shift=6",
                   "-kernel", str(firmware.elf)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TractileError(f"the firmware did not finish in {timeout:.0f} s in {board.emulator} ({board.name})") \
            from None
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + "\n" + done.stderr)
    return parse_console(text, board)


def parse_console(text: str, board: Board) -> EmulatorRun:
    parts: dict[int, dict[int, bytes]] = {}
    failures: dict[int, int] = {}
    values = {"t": 0, "k": 0, "s": 0, "c": 0}
    nodes: dict[int, int] = {}
    ended = False
    for raw in text.splitlines():
        line = raw.strip().rstrip(".")
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "o" and len(fields) == 4:
            parts.setdefault(int(fields[1]), {})[int(fields[2])] = bytes.fromhex(fields[3])
        elif fields[0] == "f" and len(fields) == 3:
            failures[int(fields[1])] = int(fields[2])
        elif fields[0] in values and len(fields) == 2 and fields[1].isdigit():
            values[fields[0]] = int(fields[1])
        elif fields[0] == "n" and len(fields) == 3:
            nodes[int(fields[1])] = int(fields[2])
        elif fields[0] == "e":
            ended = True
    if not ended:
        raise TractileError(f"the firmware stopped before its end on {board.name}; it printed:\n{text[-2000:]}")
    outputs = {run: b"".join(chunks[i] for i in sorted(chunks)) for run, chunks in parts.items()}
    return EmulatorRun(outputs, failures, values["t"], values["k"], values["s"], values["c"], nodes, text)
