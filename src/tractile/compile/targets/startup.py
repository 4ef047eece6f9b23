"""Startup code and memory layout of the firmwares tractile writes for Cortex-M boards (the
verification firmware and ``--project``), with the stack protected against overflows.

The stack sits at the bottom of RAM, below ``.data`` and ``.bss`` (MicroFlow's flipped layout):
a stack that outgrows its region runs off the start of RAM, where the bus faults, instead of
growing down into the model's context. The bus alone is not enough: QEMU's
lm3s6965evb ignores accesses below RAM, and the MPS2 boards read zeros there and drop writes for
the first words below RAM, so a stack a few words too small gave wrong outputs without a fault.
So the memory protection unit (ARMv7-M) forbids a guard region below the stack: the kilobyte
just below RAM on boards without a guard in RAM (no RAM spent), and the first kilobyte of RAM on
lm3s6965evb, whose region below RAM the MPU cannot cover there; the first access past the stack
faults. (A kilobyte,
not the MPU's smallest 32 bytes: QEMU's semihosting reads memory through the MPU a whole
kilobyte page at a time, and would not see the console's text in the guard's page.) The fault
handler moves the stack pointer to a 64-byte stack of its own, prints ``x stack overflow`` (or
``x fault``) with the addresses over the console, and stops the program: nothing of the
context was overwritten.

AVR has neither a bus fault nor an MPU: its firmware paints a canary below the stack's region
and checks it after every invoke (:data:`~.harness.AVR_PLATFORM`), and reports the same way.
"""
from __future__ import annotations

from .boards import Board
from .riscv import RISCV_LINKER_SCRIPT, RISCV_STARTUP
from .semihosting import SEMIHOSTED_EXIT_AND_HEX

#: bytes of the canary below the AVR stack
AVR_CANARY = 16
#: bytes below RAM the MPU forbids on boards without a guard in RAM (its smallest page for semihosting)
BELOW_RAM_GUARD = 1024


def stack_with_margin(peak: int) -> int:
    """The stack to link for a measured peak: a quarter more, at least 128 bytes more, 8-aligned."""
    return -(-(peak + max(128, peak // 4)) // 8) * 8


def guard_bytes(board: Board) -> int:
    """The guard region below the stack (a power of two, 32 bytes or more; 0: none)."""
    return board.stack_guard


CORTEX_M_STARTUP = r"""/* startup.c: vector table, reset handler (copy .data, clear .bss, FPU on, stack guard, main,
 * exit) and a fault handler that reports a stack overflow. The stack lies below .data and .bss
 * (link.ld): an overflow runs off the start of RAM, or into the guard region the MPU forbids
 * when link.ld sets one, and faults before it can overwrite a variable. */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _sguard, _sstack, _estack;
int main(void);
void tl_reset_handler(void);
void tl_fault_handler(void);
void tl_fault_report(uint32_t sp);
void tl_systick_handler(void);
__attribute__((section(".isr_vector"), used)) static void (*const tl_vectors[16])(void) = {
    (void (*)(void))&_estack, tl_reset_handler, tl_fault_handler, tl_fault_handler, tl_fault_handler,
    tl_fault_handler, tl_fault_handler, 0, 0, 0, 0, tl_fault_handler, tl_fault_handler, 0,
    tl_fault_handler, tl_systick_handler};

static void tl_semihost_call(uint32_t op, const void *arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
}

""" + SEMIHOSTED_EXIT_AND_HEX + r"""
/* the fault handler's body, on a stack of its own: a stack pointer at (or below) the bottom of
 * the stack region when the fault was taken means the stack overflowed */
__attribute__((used, noreturn)) void tl_fault_report(uint32_t sp) {
  tl_semihost_call(0x04, sp < (uint32_t)&_sstack + 128u ? "x stack overflow sp=" : "x fault sp=");
  tl_put_hex(sp);
  tl_semihost_call(0x04, " stack=");
  tl_put_hex((uint32_t)&_sstack);
  tl_semihost_call(0x04, "-");
  tl_put_hex((uint32_t)&_estack);
  tl_semihost_call(0x04, "\n");
  tl_exit(0x20024u);
  for (;;) {}
}

/* the fault handler's stack: the faulting program's may be exhausted (the fault handler never returns) */
uint32_t tl_fault_stack[16];

/* every fault lands here: the stack pointer may be below the stack region, so it moves to a stack
 * of its own before any C runs (the faulting program stops) */
__attribute__((naked)) void tl_fault_handler(void) {
  __asm__ volatile("mrs r0, msp\n ldr r1, =tl_fault_stack + 64\n mov sp, r1\n ldr r2, =tl_fault_report\n bx r2\n");
}

void tl_reset_handler(void) {
  uint32_t *src = &_sidata, *dst = &_sdata;
  while (dst < &_edata) *dst++ = *src++;
  for (dst = &_sbss; dst < &_ebss;) *dst++ = 0;
#if defined(__ARM_FP)
  *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
  __asm__ volatile("dsb\n isb");
#endif
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)
  if ((uint32_t)&_sstack - (uint32_t)&_sguard >= 32u) { /* MPU region 0: the guard, no access */
    uint32_t size = 4u;
    while ((2u << size) < (uint32_t)&_sstack - (uint32_t)&_sguard) ++size;
    *(volatile uint32_t *)0xE000ED98 = 0u;
    *(volatile uint32_t *)0xE000ED9C = (uint32_t)&_sguard;
    *(volatile uint32_t *)0xE000EDA0 = (1u << 28) | (size << 1) | 1u;
    *(volatile uint32_t *)0xE000ED94 = 5u; /* enabled; the default memory map elsewhere */
    __asm__ volatile("dsb\n isb");
  }
#endif
  tl_exit(main() == 0 ? 0x20026u : 0x20024u);
  for (;;) {}
}
"""

LINKER_SCRIPT = """/* link.ld: {board}. The stack ({stack} B, {why}) lies at the bottom of RAM, below .data and
 * .bss{guard_text}: an overflow faults there instead of overwriting variables. */
MEMORY {{
  FLASH (rx) : ORIGIN = {flash_origin:#010x}, LENGTH = {flash}
  RAM (rwx) : ORIGIN = {ram_origin:#010x}, LENGTH = {ram}
}}
SECTIONS {{
  .text : {{ KEEP(*(.isr_vector)) *(.text*) *(.rodata*) . = ALIGN(8); }} > FLASH
  .ARM.exidx : {{ *(.ARM.exidx*) }} > FLASH
{guard_below}  .stack (NOLOAD) : {{ {guard_in_ram}_sstack = .; . = . + {stack}; . = ALIGN(8); _estack = .; }} > RAM
  _sidata = LOADADDR(.data);
  .data : {{ _sdata = .; *(.data*) . = ALIGN(4); _edata = .; }} > RAM AT > FLASH
  .bss (NOLOAD) : {{ _sbss = .; *(.bss*) *(COMMON) . = ALIGN(4); _ebss = .; }} > RAM
}}
"""


def startup_source(board: Board) -> str:
    """``startup.c`` of ``board`` (Cortex-M or RISC-V; AVR firmwares take avr-libc's)."""
    return RISCV_STARTUP if board.arch == "riscv" else CORTEX_M_STARTUP


def linker_script(board: Board, stack: int, why: str = "given") -> str:
    """``link.ld`` for ``board`` with ``stack`` bytes of stack below .data and .bss."""
    guard = guard_bytes(board)
    if board.arch == "riscv":
        return RISCV_LINKER_SCRIPT.format(board=board.name, flash_origin=board.flash_origin, flash=board.flash_bytes,
                                          ram_origin=board.ram_origin, ram=board.ram_bytes, stack=stack, why=why,
                                          guard=guard)
    if guard:
        below, in_ram, text = "", f"_sguard = .; . = . + {guard}; ", f" and a {guard}-byte guard the MPU forbids"
    else:
        below = f"  _sguard = ORIGIN(RAM) - {BELOW_RAM_GUARD}; /* the guard the MPU forbids: just below RAM */\n"
        in_ram, text = "", f", above a {BELOW_RAM_GUARD}-byte guard below RAM the MPU forbids"
    return LINKER_SCRIPT.format(board=board.name, flash_origin=board.flash_origin, flash=board.flash_bytes,
                                ram_origin=board.ram_origin, ram=board.ram_bytes, stack=stack, why=why,
                                guard_below=below, guard_in_ram=in_ram, guard_text=text)
