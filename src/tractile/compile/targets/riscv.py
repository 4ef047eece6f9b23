"""Startup code, memory layout and platform layer of the RISC-V firmwares (RV32, M mode).

The same layout and console as the Cortex-M firmwares (:mod:`.startup`, :mod:`.harness`): the
stack at the bottom of RAM below ``.data`` and ``.bss``, under a guard region that physical
memory protection forbids (a locked PMP entry binds M mode too; below QEMU's ``virt`` RAM lies
more memory, not a bus fault), a trap handler that moves to a stack of its own and reports
``x stack overflow`` (or ``x fault`` with the cause), the console over semihosting (the
``slli``/``ebreak``/``srai`` sequence), and the clock from ``minstret``, which QEMU counts with
``-icount``.
"""
from __future__ import annotations

from .semihosting import SEMIHOSTED_EXIT_AND_HEX

RISCV_STARTUP = r"""/* startup.c: reset (stack, trap vector, copy .data, clear .bss, stack guard, main, exit) and a
 * trap handler that reports a stack overflow. The stack lies below .data and .bss (link.ld) above
 * a guard region the PMP forbids: an overflow faults there before it can overwrite a variable. */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _sguard, _sstack, _estack;
int main(void);
void tl_reset(void);
/* CSR instructions (Zicsr: a part of every RV32I core before the ISA was split) */
#define TL_CSR(text) ".option push\n .option arch, +zicsr\n " text "\n .option pop"
void tl_trap_report(uint32_t sp, uint32_t cause, uint32_t pc);

__attribute__((naked, section(".text.start"))) void _start(void) {
  __asm__ volatile("la sp, _estack\n la t0, tl_trap_entry\n" TL_CSR("csrw mtvec, t0") "\n j tl_reset\n");
}

static void tl_semihost_call(uint32_t op, const void *arg) {
  register uint32_t a0 __asm__("a0") = op;
  register const void *a1 __asm__("a1") = arg;
  __asm__ volatile(".option push\n .balign 16\n .option norvc\n slli x0, x0, 0x1f\n ebreak\n srai x0, x0, 7\n"
                   ".option pop" : "+r"(a0) : "r"(a1) : "memory");
}

""" + SEMIHOSTED_EXIT_AND_HEX + r"""
/* the trap handler's body, on a stack of its own: a stack pointer at (or below) the bottom of the
 * stack region when the trap was taken means the stack overflowed */
__attribute__((used, noreturn)) void tl_trap_report(uint32_t sp, uint32_t cause, uint32_t pc) {
  tl_semihost_call(0x04, sp < (uint32_t)&_sstack + 128u ? "x stack overflow sp=" : "x fault sp=");
  tl_put_hex(sp);
  tl_semihost_call(0x04, " stack=");
  tl_put_hex((uint32_t)&_sstack);
  tl_semihost_call(0x04, "-");
  tl_put_hex((uint32_t)&_estack);
  tl_semihost_call(0x04, " mcause=");
  tl_put_hex(cause);
  tl_semihost_call(0x04, " mepc=");
  tl_put_hex(pc);
  tl_semihost_call(0x04, "\n");
  tl_exit(0x20024u);
  for (;;) {}
}

/* the trap handler's stack: the trapping program's may be exhausted (the handler never returns) */
uint32_t tl_fault_stack[32];

__attribute__((naked, aligned(4))) void tl_trap_entry(void) {
  __asm__ volatile("mv a0, sp\n la sp, tl_fault_stack + 128\n" TL_CSR("csrr a1, mcause\n csrr a2, mepc")
                   "\n j tl_trap_report\n");
}

void tl_reset(void) {
  uint32_t *src = &_sidata, *dst = &_sdata;
  uint32_t size = (uint32_t)&_sstack - (uint32_t)&_sguard;
  while (dst < &_edata) *dst++ = *src++;
  for (dst = &_sbss; dst < &_ebss;) *dst++ = 0;
  if (size >= 8u) { /* PMP entry 0, locked (binds M mode), naturally aligned power of two, no access */
    uint32_t address = ((uint32_t)&_sguard | (size / 2u - 1u)) >> 2;
    __asm__ volatile(TL_CSR("csrw pmpaddr0, %0\n csrw pmpcfg0, %1") : : "r"(address), "r"(0x98u));
  }
  tl_exit(main() == 0 ? 0x20026u : 0x20024u);
  for (;;) {}
}
"""

RISCV_PLATFORM = r"""/* tl_platform.h: RISC-V console (semihosting), clock (minstret), stack bounds */
#ifndef TL_PLATFORM_H
#define TL_PLATFORM_H
#include <stdint.h>

extern uint32_t _sstack, _estack;

/* CSR instructions (Zicsr: a part of every RV32I core before the ISA was split) */
#define TL_CSR(text) ".option push\n .option arch, +zicsr\n " text "\n .option pop"
static inline int tl_semihost(int op, const void *arg) {
  register int a0 __asm__("a0") = op;
  register const void *a1 __asm__("a1") = arg;
  __asm__ volatile(".option push\n .balign 16\n .option norvc\n slli x0, x0, 0x1f\n ebreak\n srai x0, x0, 7\n"
                   ".option pop" : "+r"(a0) : "r"(a1) : "memory");
  return a0;
}
static inline void tl_write(const char *text) { tl_semihost(0x04, text); }
static inline void tl_platform_init(void) {}
static inline uint64_t tl_clock(void) {
  uint32_t high, low, again;
  do {
    __asm__ volatile(TL_CSR("csrr %0, minstreth") : "=r"(high));
    __asm__ volatile(TL_CSR("csrr %0, minstret") : "=r"(low));
    __asm__ volatile(TL_CSR("csrr %0, minstreth") : "=r"(again));
  } while (high != again);
  return ((uint64_t)high << 32) | low;
}
/* two instructions per iteration */
static inline void tl_calibration_loop(void) {
  __asm__ volatile("li t0, %0\n1: addi t0, t0, -1\n bnez t0, 1b" : : "i"(CALIBRATION_ITERATIONS) : "t0");
}
static inline uintptr_t tl_stack_pointer(void) {
  uintptr_t sp;
  __asm__ volatile("mv %0, sp" : "=r"(sp));
  return sp;
}
/* the bottom of the stack region (link.ld): an overflow faults below it, see startup.c */
static inline uintptr_t tl_stack_floor(void) { return (uintptr_t)&_sstack; }
static inline uintptr_t tl_stack_top(void) { return (uintptr_t)&_estack; }
static inline void tl_paint_canary(void) {}
static inline int tl_stack_overflowed(void) { return 0; }
static inline void tl_finish(void) {}
#define TL_COPY_INPUT(dst, src, bytes) memcpy(dst, src, bytes)
#endif
"""

RISCV_LINKER_SCRIPT = """/* link.ld: {board}. The stack ({stack} B, {why}) lies at the bottom of RAM, below .data and
 * .bss, above a {guard}-byte guard the PMP forbids: an overflow faults there instead of
 * overwriting variables. */
ENTRY(_start)
MEMORY {{
  FLASH (rx) : ORIGIN = {flash_origin:#010x}, LENGTH = {flash}
  RAM (rwx) : ORIGIN = {ram_origin:#010x}, LENGTH = {ram}
}}
SECTIONS {{
  .text : {{ KEEP(*(.text.start)) *(.text*) *(.rodata*) *(.srodata*) . = ALIGN(8); }} > FLASH
  .stack (NOLOAD) : {{ _sguard = .; . = . + {guard}; _sstack = .; . = . + {stack}; . = ALIGN(16); _estack = .; }} > RAM
  _sidata = LOADADDR(.data);
  .data : {{ _sdata = .; *(.data*) *(.sdata*) *(.tdata*) . = ALIGN(4); _edata = .; }} > RAM AT > FLASH
  .bss (NOLOAD) : {{ _sbss = .; *(.sbss*) *(.bss*) *(.tbss*) *(COMMON) . = ALIGN(4); _ebss = .; }} > RAM
}}
"""
