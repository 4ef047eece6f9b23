"""The microcontroller targets and the emulated boards their code is verified on.

A :class:`~tractile.compile.target.Target` says what the generated C may assume (alignment,
FPU, width of ``double``, program memory, the integer flavour); a :class:`Board` says how to
build a firmware for it and run it in an emulator: QEMU for the Cortex-M boards and the
RISC-V board (semihosting for output), simavr for the ATmega328P (its UART).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import TractileError
from ..target import Target, register_target

CORTEX_M0 = register_target(Target("cortex-m0", alignment=4, has_fpu=False, flavour="micro",
                                   description="Arm Cortex-M0 (ARMv6-M), no FPU"))
CORTEX_M3 = register_target(Target("cortex-m3", alignment=4, has_fpu=False, flavour="micro",
                                   description="Arm Cortex-M3 (ARMv7-M), no FPU"))
CORTEX_M4 = register_target(Target("cortex-m4", alignment=4, has_fpu=True, flavour="micro", dsp=True,
                                   description="Arm Cortex-M4F (ARMv7E-M, DSP instructions, single-precision FPU)"))
CORTEX_M7 = register_target(Target("cortex-m7", alignment=8, has_fpu=True, flavour="micro", dsp=True,
                                   description="Arm Cortex-M7 (ARMv7E-M, DSP instructions, FPU)"))
RISCV32 = register_target(Target("riscv32", alignment=4, has_fpu=False, flavour="micro",
                                 description="32-bit RISC-V microcontroller (RV32IMC, no FPU: ESP32-C3, "
                                             "GD32VF103, CH32V class)"))
AVR = register_target(Target("avr", alignment=1, has_fpu=False, double_bits=32, progmem=True, flavour="micro",
                             description="AVR ATmega328P (8-bit, 32 kB flash, 2 kB RAM): constants in PROGMEM"))


@dataclass(frozen=True)
class Board:
    """An emulated board: its memory, its compiler flags, how to run it."""

    name: str
    target: Target
    flags: tuple[str, ...]
    flash_bytes: int
    ram_bytes: int
    flash_origin: int = 0
    ram_origin: int = 0x20000000
    emulator: str = "qemu"
    clock_hz: int = 0
    #: bytes at the start of RAM the MPU forbids, below the stack (:mod:`.startup`): for boards
    #: whose bus ignores accesses below RAM instead of faulting
    stack_guard: int = 0
    #: the instruction set: "arm" (Cortex-M), "riscv" or "avr"
    arch: str = "arm"
    #: QEMU's name of the machine (default: the board's name)
    machine: str = ""

    @property
    def prefix(self) -> str:
        """The GNU tool chain's prefix."""
        return {"avr": "avr-", "riscv": "riscv64-unknown-elf-"}.get(self.arch, "arm-none-eabi-")

    @property
    def toolchain(self) -> str:
        return self.prefix + "gcc"

    @property
    def size_tool(self) -> str:
        return self.prefix + "size"

    @property
    def nm_tool(self) -> str:
        return self.prefix + "nm"

    @property
    def emulator_tool(self) -> str:
        """The emulator's program."""
        return {"avr": "simavr", "riscv": "qemu-system-riscv32"}.get(self.arch, "qemu-system-arm")


_M0 = ("-mcpu=cortex-m0", "-mthumb")
_M3 = ("-mcpu=cortex-m3", "-mthumb")
_M4 = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
_M7 = ("-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16")
_RV32 = ("-march=rv32imc", "-mabi=ilp32", "-mcmodel=medlow", "--specs=picolibc.specs")
KB, MB = 1 << 10, 1 << 20

BOARDS = {board.name: board for board in (
    Board("microbit", CORTEX_M0, _M0, 256 * KB, 16 * KB),
    Board("lm3s6965evb", CORTEX_M3, _M3, 256 * KB, 64 * KB, stack_guard=KB),
    Board("mps2-an385", CORTEX_M3, _M3, 4 * MB, 4 * MB),
    Board("mps2-an386", CORTEX_M4, _M4, 4 * MB, 4 * MB),
    Board("mps2-an500", CORTEX_M7, _M7, 4 * MB, 4 * MB),
    Board("atmega328p", AVR, ("-mmcu=atmega328p",), 32 * KB, 2 * KB, emulator="simavr", clock_hz=16_000_000,
          arch="avr"),
    # QEMU's virt board with a 32-bit core: its RAM (at 0x80000000) split into "flash" and RAM; the
    # first kilobyte of RAM a guard the PMP forbids (below RAM lies more RAM, not a bus fault)
    Board("virt-rv32", RISCV32, _RV32, 4 * MB, 4 * MB, flash_origin=0x80000000, ram_origin=0x80400000,
          stack_guard=KB, arch="riscv", machine="virt"),
)}

#: the board each target is verified on unless another is named; the MPS2 boards have room
#: for every shared model, lm3s6965evb (MicroFlow's board) and microbit have real MCU sizes
DEFAULT_BOARDS = {"cortex-m0": "microbit", "cortex-m3": "mps2-an385", "cortex-m4": "mps2-an386",
                  "cortex-m7": "mps2-an500", "avr": "atmega328p", "riscv32": "virt-rv32"}


def board_for(target: str, board: str | None = None) -> Board:
    """The board to verify ``target`` on (``board`` by name, else the target's default)."""
    if target not in DEFAULT_BOARDS:
        raise TractileError(f"no emulated board for target {target!r}; targets with one: "
                            f"{', '.join(sorted(DEFAULT_BOARDS))}")
    name = board or DEFAULT_BOARDS[target]
    found = BOARDS.get(name)
    if found is None:
        raise TractileError(f"unknown board {name!r}; boards: {', '.join(sorted(BOARDS))}")
    if found.target.name != target:
        raise TractileError(f"board {name} is a {found.target.name}, not a {target}")
    return found
