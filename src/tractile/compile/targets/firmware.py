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
from .harness import inputs_header, main_source, platform_header
from .startup import AVR_CANARY, guard_bytes, linker_script, startup_source

INSTALL_HINT = {
    "arm-none-eabi-gcc": "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "arm-none-eabi-size": "apt-get install binutils-arm-none-eabi",
    "arm-none-eabi-nm": "apt-get install binutils-arm-none-eabi",
    "avr-nm": "apt-get install binutils-avr",
    "qemu-system-arm": "apt-get install qemu-system-arm",
    "avr-gcc": "apt-get install gcc-avr avr-libc",
    "avr-size": "apt-get install binutils-avr",
    "simavr": "apt-get install simavr",
    "riscv64-unknown-elf-gcc": "apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf",
    "riscv64-unknown-elf-size": "apt-get install binutils-riscv64-unknown-elf",
    "riscv64-unknown-elf-nm": "apt-get install binutils-riscv64-unknown-elf",
    "qemu-system-riscv32": "apt-get install qemu-system-misc",
}

OPT_FLAGS = {"speed": ("-O2",), "size": ("-Os",)}
#: the C library a Cortex-M or RISC-V firmware links (with its own startup code and linker script)
LIBC_SPECS = {"arm": ("--specs=nano.specs",), "riscv": ()}  # picolibc: in the board's flags


def qemu_machine(board: Board) -> list[str]:
    """QEMU's options choosing ``board``'s machine (and on RISC-V: no firmware of QEMU's before ours)."""
    if board.arch == "riscv":
        return ["-M", board.machine or board.name, "-bios", "none", "-m", "16M"]
    return ["-M", board.machine or board.name]


def require_tool(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise TractileError(f"{tool} is not installed: it builds or runs code for this target "
                            f"(Debian/Ubuntu: sudo {INSTALL_HINT.get(tool, 'install it')})")
    return found


def qemu_command(board: Board, elf: str) -> str:
    """The command running ``elf`` in QEMU on ``board``, its console over semihosting."""
    return (f"{board.emulator_tool} {' '.join(qemu_machine(board))} -nographic -monitor none -serial none "
            f"-semihosting-config enable=on,target=native -kernel {elf}")


def libc_specs(board: Board) -> str:
    """The link options choosing the C library (leading space; empty when the flags hold them)."""
    return "".join(" " + spec for spec in LIBC_SPECS[board.arch])


def toolchain_available(board: Board) -> list[str]:
    """The tools this board needs that are missing (empty: all there)."""
    return [t for t in (board.toolchain, board.size_tool, board.emulator_tool) if shutil.which(t) is None]


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
    stack_bytes: int = 0
    #: flash of the verification inputs baked into the firmware (their arrays' symbols, from nm)
    inputs_flash: int = 0

    @property
    def deployable_flash(self) -> int:
        """Flash of the firmware without the verification inputs it embeds: model, kernels,
        startup, the console and libc parts it pulls in."""
        return self.firmware_flash - self.inputs_flash


class FirmwareFault(TractileError):
    """The firmware stopped on a fault it reported (``x ...`` on its console), a stack overflow
    above all; ``console`` holds everything it printed."""

    def __init__(self, message: str, console: str):
        super().__init__(message)
        self.console = console


def _compiler_flags(board: Board, opt: str) -> list[str]:
    flags = [*board.flags, "-std=c99", *OPT_FLAGS[opt], "-ffunction-sections", "-fdata-sections", "-Wall",
             "-Wextra", "-Wno-unused-function"]
    if board.arch == "avr":
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


def inputs_bytes(nm_tool: str, path: Path, folder: Path) -> int:
    """Bytes of the verification inputs' arrays (``tl_inputN``) in an ELF file (``nm -S``)."""
    total = 0
    for line in _run([nm_tool, "-S", str(path)], folder, "listing symbols").splitlines():
        parts = line.split()
        if len(parts) == 4 and re.fullmatch(r"tl_input\d+(\.\d+)?", parts[3]) \
                and re.fullmatch(r"[0-9a-fA-F]+", parts[1]):
            total += int(parts[1], 16)
    return total


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
                   profile: bool = False, stack: int | None = None) -> Firmware:
    """Write and build the firmware for ``source`` (a CSource) running ``runs`` on ``board``, with
    ``stack`` bytes of stack (None: all the RAM the firmware leaves free), protected against
    overflows (:mod:`.startup`)."""
    compiler = require_tool(board.toolchain)
    size_tool = require_tool(board.size_tool)
    folder = Path(folder).resolve()  # the tools run inside it: paths relative to the caller would not resolve
    folder.mkdir(parents=True, exist_ok=True)
    source.write(folder)
    program = source.program
    write_file(folder, "inputs.h", inputs_header(program, runs))
    write_file(folder, "tl_platform.h", platform_header(board, stack))
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
    avr = board.arch == "avr"
    sources = ["main.c"] if avr else ["main.c", "startup.c"]
    if not avr:
        write_file(folder, "startup.c", startup_source(board))
    for name in sources:
        _run([compiler, *flags, "-c", name, "-o", name[:-2] + ".o"], folder, f"{board.toolchain} on {name}")
    objects = [name[:-2] + ".o" for name in sources] + [f"{source.name}.o"]
    if avr:
        link = [compiler, *flags, *objects, "-o", elf.name, "-Wl,--gc-sections", "-lm"]
    else:
        link = [compiler, *flags, *LIBC_SPECS[board.arch], "-nostartfiles", "-T", "link.ld", *objects,
                "-o", elf.name, "-Wl,--gc-sections", "-lm"]
    model_flash = flash_of(model_sections)
    if model_flash > board.flash_bytes:
        raise TractileError(f"the model does not fit {board.name}: its code and constants take {model_flash} B of "
                            f"flash, the board has {board.flash_bytes} B")
    linked = _link(link, folder, board, model_flash, stack or 0, "given" if stack else "provisional")
    static = sum(size for name, size in linked.items() if re.match(r"\.(data|bss|noinit)", name))
    align = 16 if board.arch == "riscv" else 8  # the RISC-V ABI keeps the stack pointer 16-aligned
    free = (board.ram_bytes - static - guard_bytes(board) - (AVR_CANARY if avr else 0)) // align * align
    if stack is None:
        stack = free
        if not avr:
            linked = _link(link, folder, board, model_flash, stack, "all the RAM the firmware leaves free")
    elif stack > free:
        raise TractileError(f"a stack of {stack} B does not fit {board.name}: its RAM ({board.ram_bytes} B) holds "
                            f"{static} B of variables and leaves {free} B")
    return Firmware(folder, elf, board, model_flash, flash_of(linked), static, linked, code_bytes=code,
                    stack_bytes=stack, inputs_flash=inputs_bytes(require_tool(board.nm_tool), elf, folder))


def _link(command: list[str], folder: Path, board: Board, model_flash: int, stack: int, why: str) -> dict[str, int]:
    """Link (with the stack's region in ``link.ld`` on Cortex-M and RISC-V); the ELF's section sizes."""
    if board.arch != "avr":
        write_file(folder, "link.ld", linker_script(board, stack, why))
    try:
        _run(command, folder, f"linking the firmware for {board.name}")
    except TractileError as error:
        overflow = re.search(r"region [`']?(\w+)'? overflowed by (\d+) bytes", str(error))
        if overflow is None:
            raise
        raise TractileError(f"the test firmware does not fit {board.name}: its {overflow.group(1)} overflows by "
                            f"{overflow.group(2)} B (the model alone takes {model_flash} B of the board's "
                            f"{board.flash_bytes} B of flash; the inputs to check are baked in too: verify fewer "
                            f"inputs, or choose a larger board{'' if not stack else '; or give a smaller --stack'})"
                            ) from None
    return object_sizes(require_tool(board.size_tool), folder / "firmware.elf", folder)


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
    fault: str | None = None
    stack_used: int = 0


def run_emulator(firmware: Firmware, timeout: float = 120.0) -> EmulatorRun:
    """Run ``firmware`` in its board's emulator and parse what it prints."""
    board = firmware.board
    if board.arch == "avr":
        command = [require_tool("simavr"), "-m", board.name, "-f", str(board.clock_hz), str(firmware.elf)]
    else:
        command = [require_tool(board.emulator_tool), *qemu_machine(board), "-nographic", "-monitor", "none",
                   "-serial", "none", "-semihosting-config", "enable=on,target=native", "-icount", "shift=6",
                   "-kernel", str(firmware.elf)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TractileError(f"the firmware did not finish in {timeout:.0f} s in {board.emulator} ({board.name})") \
            from None
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + "\n" + done.stderr)
    console = parse_console(text, board)
    if console.fault is not None:
        overflow = "stack overflow" in console.fault
        if board.arch == "avr":
            what = (f"its stack ({firmware.stack_bytes} B) overflowed: the canary below it was found overwritten "
                    "after an invoke")
        else:
            what = (f"its stack ({firmware.stack_bytes} B) overflowed and the fault handler stopped it before "
                    "anything past the stack was written" if overflow else "it faulted")
        raise FirmwareFault(f"the firmware stopped on {board.name}: {what} ({console.fault})"
                            + (": give it a larger stack (--stack BYTES)" if overflow else ""), text)
    return console


def parse_console(text: str, board: Board) -> EmulatorRun:
    parts: dict[int, dict[int, bytes]] = {}
    failures: dict[int, int] = {}
    values = {"t": 0, "k": 0, "s": 0, "c": 0, "u": 0}
    nodes: dict[int, int] = {}
    ended, fault = False, None
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
        elif fields[0] == "x" and fault is None:
            fault = line[2:]
    if fault is not None:
        return EmulatorRun({}, failures, 0, 0, 0, 0, nodes, text, fault)
    if not ended:
        raise TractileError(f"the firmware stopped before its end on {board.name}; it printed:\n{text[-2000:]}")
    outputs = {run: b"".join(chunks[i] for i in sorted(chunks)) for run, chunks in parts.items()}
    return EmulatorRun(outputs, failures, values["t"], values["k"], values["s"], values["c"], nodes, text,
                       stack_used=values["u"])
