"""The C of a test firmware around a compiled model: startup, linker script, platform layer, main.

The firmware runs the model on inputs baked into its flash, one context carrying state
across runs, and prints one line per fact over the board's console (semihosting on
Cortex-M and RISC-V, the UART on AVR):

    o RUN PART HEX      bytes of the outputs of run RUN (PART: 48-byte chunks)
    f RUN STATUS        what invoke returned (0 = ok)
    t TICKS             clock ticks spent in invoke over all runs
    k TICKS             ticks of the calibration loop (CALIBRATION instructions; Cortex-M)
    s BYTES             peak stack of one invoke (painted stack)
    u BYTES             stack the whole firmware used, from the top of its region (main's frame too)
    c BYTES             sizeof(the context)
    n NODE TICKS        ticks per node over all runs (profiling builds)
    e                   end
    x stack overflow    the stack outgrew its region (then the program stops; see :mod:`.startup`)
"""
from __future__ import annotations

import numpy as np

from ..ctext import array_initializer
from ..program import Program
from .boards import Board
from .riscv import RISCV_PLATFORM
from .startup import AVR_CANARY

#: instructions of the Cortex-M calibration loop (two per iteration)
CALIBRATION = 200_000
#: bytes of stack painted below main's frame to find the peak of an invoke
PAINTED_STACK = 48 * 1024

CORTEX_M_PLATFORM = r"""/* tl_platform.h: Cortex-M console (semihosting), clock (SysTick), stack bounds */
#ifndef TL_PLATFORM_H
#define TL_PLATFORM_H
#include <stdint.h>

extern uint32_t _sstack, _estack;
volatile uint32_t tl_wraps;

static inline int tl_semihost(int op, const void *arg) {
  register int r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
static inline void tl_write(const char *text) { tl_semihost(0x04, text); }
#define SYST_CSR (*(volatile uint32_t *)0xE000E010)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018)
void tl_systick_handler(void) { ++tl_wraps; }
static inline void tl_platform_init(void) {
  SYST_RVR = 0x00FFFFFF;
  SYST_CVR = 0;
  SYST_CSR = 7;
}
static inline uint64_t tl_clock(void) {
  uint32_t wraps, value;
  do {
    wraps = tl_wraps;
    value = SYST_CVR;
  } while (wraps != tl_wraps);
  return ((uint64_t)wraps << 24) + (0x00FFFFFFu - value);
}
/* two instructions per iteration; Thumb-1 inline assembly is read in divided syntax */
#if defined(__thumb2__)
#define TL_DECREMENT "subs r0, #1"
#else
#define TL_DECREMENT "sub r0, #1"
#endif
static inline void tl_calibration_loop(void) {
  __asm__ volatile("ldr r0, =%c0\n1: " TL_DECREMENT "\n bne 1b" : : "i"(CALIBRATION_ITERATIONS) : "r0", "cc");
}
static inline uintptr_t tl_stack_pointer(void) {
  uintptr_t sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
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

AVR_PLATFORM = r"""/* tl_platform.h: AVR console (USART0), clock (Timer1 at the CPU clock), stack bounds */
#ifndef TL_PLATFORM_H
#define TL_PLATFORM_H
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/pgmspace.h>
#include <stdint.h>

extern char __bss_end;
static volatile uint32_t tl_overflows;
ISR(TIMER1_OVF_vect) { ++tl_overflows; }

static inline void tl_put(char c) {
  while (!(UCSR0A & (1 << UDRE0))) {}
  UDR0 = c;
}
static inline void tl_write(const char *text) {
  while (*text) tl_put(*text++);
}
static inline void tl_platform_init(void) {
  UCSR0B = (1 << TXEN0);
  TCCR1A = 0;
  TCCR1B = (1 << CS10);
  TIMSK1 = (1 << TOIE1);
  sei();
}
static inline uint64_t tl_clock(void) {
  uint32_t overflows;
  uint16_t count;
  uint8_t flags = SREG;
  cli();
  count = TCNT1;
  overflows = tl_overflows;
  if ((TIFR1 & (1 << TOV1)) && count < 0x8000) ++overflows;
  SREG = flags;
  return ((uint64_t)overflows << 16) | count;
}
static inline void tl_calibration_loop(void) {}
static inline uintptr_t tl_stack_pointer(void) { return (uintptr_t)SP; }
static inline uintptr_t tl_stack_top(void) { return (uintptr_t)RAMEND + 1u; }
/* the lowest byte the stack may use: above .bss, or TL_STACK_BYTES below the end of RAM */
static inline uintptr_t tl_stack_floor(void) {
#if TL_STACK_BYTES > 0
  return (uintptr_t)RAMEND + 1u - (uintptr_t)TL_STACK_BYTES;
#else
  return (uintptr_t)&__bss_end + TL_CANARY_BYTES;
#endif
}
/* AVR has no fault to catch an overflow with: a canary painted below the stack's region, checked
 * after every invoke (its bytes keep the paint unless the stack grew into them) */
static inline void tl_paint_canary(void) {
  uint8_t *at = (uint8_t *)(tl_stack_floor() - TL_CANARY_BYTES);
  int i;
  for (i = 0; i < TL_CANARY_BYTES; ++i) at[i] = 0xA5;
}
static inline int tl_stack_overflowed(void) {
  const volatile uint8_t *at = (const volatile uint8_t *)(tl_stack_floor() - TL_CANARY_BYTES);
  int i;
  for (i = 0; i < TL_CANARY_BYTES; ++i)
    if (at[i] != 0xA5) return 1;
  return 0;
}
/* simavr ends the run when the CPU sleeps with interrupts off */
static inline void tl_finish(void) {
  cli();
  SMCR = (1 << SE);
  __asm__ volatile("sleep");
}
#define TL_COPY_INPUT(dst, src, bytes) memcpy_P(dst, src, bytes)
#endif
"""

def inputs_header(program: Program, runs: list[list[np.ndarray]]) -> str:
    """``inputs.h``: the inputs of every run as constant arrays (program memory on AVR)."""
    lines = ["/* inputs.h: the inputs of the verification runs */", "#include <stdint.h>",
             f"#define TL_RUNS {len(runs)}"]
    for index, tensor in enumerate(program.inputs):
        values = np.stack([np.asarray(run[index], dtype=tensor.dtype.np).reshape(-1) for run in runs])
        lines.append(f"static const {tensor.ctype} tl_input{index}[TL_RUNS * {max(tensor.count, 1)}] TL_CONST = "
                     f"{array_initializer(values, tensor.dtype)};")
    return "\n".join(lines) + "\n"


def main_source(program: Program, profile: bool) -> str:
    """``main.c``: run every input, print outputs, ticks, stack and context size."""
    name = program.name
    buffers, args, copies_in = [], [], []
    for index, tensor in enumerate(program.inputs):
        count = max(tensor.count, 1)
        if tensor.arena_input:  # written where the plan keeps it in the arena: no buffer, no copy in invoke
            args.append(f"{name.upper()}_INPUT{index}_IN(&ctx)")
            size = f"{count}u * sizeof({tensor.ctype})"
        else:
            buffers.append(f"static {tensor.ctype} in{index}[{count}];")
            args.append(f"in{index}")
            size = f"sizeof in{index}"
        copies_in.append(f"    TL_COPY_INPUT({args[-1]}, tl_input{index} + (size_t)run * {count}, {size});")
    for index, tensor in enumerate(program.outputs):
        buffers.append(f"static {tensor.ctype} out{index}[{max(tensor.count, 1)}];")
        args.append(f"out{index}")
    copies = "\n".join(copies_in)
    prints = "\n".join(["    part = 0;"] + [f"    put_bytes(run, out{i}, sizeof out{i}, &part);"
                                            for i in range(len(program.outputs))])
    node_count = len(program.nodes)
    profile_dump = (f"  for (node = 0; node < {node_count}; ++node) {{\n"
                    "    tl_write(\"n \"); put_u64((uint64_t)node); tl_write(\" \"); "
                    "put_u64(ctx.profile_ticks[node]); tl_write(\"\\n\");\n  }\n") if profile and node_count else ""
    return f"""/* main.c: runs {name} on the inputs of inputs.h and reports over the console */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "{name}.h"
#include "tl_common.h"
#include "tl_platform.h"
#include "inputs.h"

static {name}_ctx ctx;
{chr(10).join(buffers)}

/* value / 10 by shifts and adds, *digit the remainder: no 64-bit division routine linked in (it
 * would weigh on the firmware's flash at -Os) */
static uint64_t div10(uint64_t value, unsigned *digit) {{
  uint64_t q = (value >> 1) + (value >> 2), r;
  q += q >> 4;
  q += q >> 8;
  q += q >> 16;
  q += q >> 32;
  q >>= 3;
  r = value - ((q << 3) + (q << 1));
  while (r >= 10u) {{
    ++q;
    r -= 10u;
  }}
  *digit = (unsigned)r;
  return q;
}}

static void put_u64(uint64_t value) {{
  char text[24];
  int at = 23;
  unsigned digit;
  text[at] = 0;
  do {{
    value = div10(value, &digit);
    text[--at] = (char)('0' + digit);
  }} while (value);
  tl_write(text + at);
}}

/* one output's bytes in lines of hex, numbered on from *part (the outputs of a run follow each other) */
static void put_bytes(int run, const void *data, size_t count, size_t *part) {{
  static const char digits[] = "0123456789abcdef";
  const uint8_t *bytes = (const uint8_t *)data;
  char text[2 * 48 + 2];
  size_t at = 0, i;
  for (i = 0; i < count; ++i) {{
    text[at++] = digits[bytes[i] >> 4];
    text[at++] = digits[bytes[i] & 15];
    if (at == 2 * 48 || i + 1 == count) {{
      text[at++] = '\\n';
      text[at] = 0;
      tl_write("o ");
      put_u64((uint64_t)run);
      tl_write(" ");
      put_u64((uint64_t)(*part)++);
      tl_write(" ");
      tl_write(text);
      at = 0;
    }}
  }}
}}

uint64_t tl_firmware_clock(void) {{ return tl_clock(); }}

static size_t stack_peak(uintptr_t top, uintptr_t floor) {{
  const volatile uint8_t *at = (const volatile uint8_t *)floor;
  while ((uintptr_t)at < top && *at == 0xA5) ++at;
  return (size_t)(top - (uintptr_t)at);
}}

int main(void) {{
  uint64_t ticks = 0, start;
  uintptr_t top, floor;
  size_t peak = 0, part;
  volatile uint8_t *paint;
  int run, status;
{"  int node;" if profile_dump else ""}
  tl_platform_init();
  top = tl_stack_pointer() - 8;
  floor = tl_stack_floor();
  if (top <= floor) {{
    tl_write("x stack overflow\\n");
    tl_finish();
    return 1;
  }}
  if (top - floor > {PAINTED_STACK}u) floor = top - {PAINTED_STACK}u;
  for (paint = (volatile uint8_t *)floor; (uintptr_t)paint < top; ++paint) *paint = 0xA5;
  tl_paint_canary();
  {name}_init(&ctx);
  for (run = 0; run < TL_RUNS; ++run) {{
{copies}
    start = tl_clock();
    status = {name}_invoke(&ctx, {", ".join(args)});
    ticks += tl_clock() - start;
    if (run == 0) peak = stack_peak(top, floor);
    if (tl_stack_overflowed()) {{
      tl_write("x stack overflow\\n");
      tl_finish();
      return 1;
    }}
    if (status) {{
      tl_write("f ");
      put_u64((uint64_t)run);
      tl_write(" ");
      put_u64((uint64_t)status);
      tl_write("\\n");
    }}
{prints}
  }}
  tl_write("t ");
  put_u64(ticks);
  tl_write("\\n");
  start = tl_clock();
  tl_calibration_loop();
  tl_write("k ");
  put_u64(tl_clock() - start);
  tl_write("\\ns ");
  put_u64((uint64_t)peak);
  tl_write("\\nu ");
  put_u64((uint64_t)(tl_stack_top() - top + peak));
  tl_write("\\nc ");
  put_u64((uint64_t)sizeof ctx);
  tl_write("\\n");
{profile_dump}  tl_write("e\\n");
  tl_finish();
  return 0;
}}
"""


def platform_header(board: Board, stack: int | None = None) -> str:
    """``tl_platform.h``: console, clock and stack bounds (on AVR, ``stack`` bytes below the end of
    RAM are the stack's; None: everything above .bss and the canary)."""
    if board.emulator == "simavr":
        return f"#define TL_STACK_BYTES {stack or 0}\n#define TL_CANARY_BYTES {AVR_CANARY}\n" + AVR_PLATFORM
    return f"#define CALIBRATION_ITERATIONS {CALIBRATION // 2}\n" + (
        RISCV_PLATFORM if board.arch == "riscv" else CORTEX_M_PLATFORM)
