"""``tractile compile --project DIR --harness mlperf-tiny``: a firmware for MLPerf Tiny's own runner.

The project implements the benchmark's ``submitter_implemented.h`` over the generated model:
the serial port (the board's UART, polled), the timer (SysTick, microseconds of the board's
clock), ``th_load_tensor`` (the bytes the runner loaded with ``db``), ``th_infer`` (one invoke),
``th_results`` (the outputs dequantized, three decimals, as the reference submissions print
them; for ``ad01`` the mean squared error between the dequantized input and output). It links
the benchmark's own command parser (``api/internally_implemented.cpp``) from the folder given
(``MLPERF_API`` in the Makefile): the API sources are referenced by path, not copied, so the
project carries no third-party file and always builds the benchmark's code as it is.
"""
from __future__ import annotations

from pathlib import Path

from ...errors import TractileError
from ..files import write_file
from .boards import Board
from .firmware import libc_specs
from .harness import platform_header
from .startup import linker_script, startup_source

HARNESS_NAMES = ("mlperf-tiny",)
#: the benchmark's model versions and the input shape each reference model takes
HARNESS_MODELS = {"kws01": (1, 49, 10, 1), "vww01": (1, 96, 96, 3), "ic01": (1, 32, 32, 3), "ad01": (1, 640)}
#: the runner's ``db`` buffer (``MAX_DB_INPUT_SIZE`` of ``submitter_implemented.h``)
MAX_DB_INPUT_SIZE = 96 * 96 * 3
#: the MPS2 boards' UART0 (CMSDK APB UART) and system clock
UART0 = 0x40004000
MPS2_CLOCK_HZ = 25_000_000
#: extra stack over the verification firmware's for the parser and vsnprintf
HARNESS_STACK_EXTRA = 2048


def default_api_path() -> Path | None:
    """``../shared/mlperf_tiny_api`` above the working folder or this package, when it exists."""
    for base in (Path.cwd(), *Path(__file__).resolve().parents):
        for candidate in (base / "shared" / "mlperf_tiny_api", base.parent / "shared" / "mlperf_tiny_api"):
            if (candidate / "api" / "internally_implemented.cpp").is_file():
                return candidate
    return None


def harness_model(source, given: str | None) -> str:
    """The benchmark's model version: ``given``, else the reference model whose input shape
    the model's only input has."""
    if given is not None:
        if given not in HARNESS_MODELS:
            raise TractileError(f"unknown MLPerf Tiny model {given!r}: {', '.join(HARNESS_MODELS)}")
        return given
    shape = tuple(int(d) for d in source.program.inputs[0].fact.shape)
    for version, wanted in HARNESS_MODELS.items():
        if shape == wanted:
            return version
    raise TractileError(f"cannot tell which MLPerf Tiny model this is from its input shape {shape} (the reference "
                        f"models take {', '.join(f'{k} {v}' for k, v in HARNESS_MODELS.items())}): give "
                        "--harness-model kws01|vww01|ic01|ad01")


def check_harness(source, board: Board | None) -> None:
    """Refuse what the benchmark's runner cannot drive: one input of at most the ``db`` buffer's bytes."""
    if board is None or board.arch != "arm" or not board.name.startswith("mps2"):
        raise TractileError("the MLPerf Tiny harness is written for the MPS2 boards (their UART): give --target "
                            "cortex-m3, cortex-m4 or cortex-m7 with an mps2 board")
    program = source.program
    if len(program.inputs) != 1 or not program.outputs:
        raise TractileError(f"the MLPerf Tiny runner loads one input tensor; the model has {len(program.inputs)}")
    tensor = program.inputs[0]
    size = tensor.nbytes
    if size > MAX_DB_INPUT_SIZE:
        raise TractileError(f"the model's input takes {size} B; the runner's buffer holds {MAX_DB_INPUT_SIZE} B")
    if program.inputs_in_arena:
        raise TractileError("the MLPerf Tiny harness copies the input into its own buffer: drop --inputs-in-arena")


def _dequantize(name: str, kind: str, index: int, tensor, array: str) -> str:
    """A C expression: ``array[i]``, of ``NAME_KINDindex``'s type, as a float."""
    upper = f"{name.upper()}_{kind.upper()}{index}"
    if tensor.dtype.is_float:
        return f"(float){array}[i]"
    if tensor.fact.qparams is None:
        raise TractileError(f"{kind} {index} is an integer without a scale: the harness cannot print it as the "
                            "benchmark's float results")
    return f"(float)((int32_t){array}[i] - (int32_t)({upper}_ZERO_POINT)) * {upper}_SCALE"


def submitter_source(source, version: str) -> str:
    """``submitter_implemented.cpp``: the ``th_*`` functions and ``main`` (C++, as the API's parser)."""
    program, name = source.program, source.name
    inp, out = program.inputs[0], program.outputs[0]
    in_bytes = inp.nbytes
    if version == "ad01":
        results = f"""  /* the reference submission's score: mean squared error of the dequantized input and output */
  float sum = 0.0f;
  size_t i;
  for (i = 0; i < {out.count}u; ++i) {{
    float x = {_dequantize(name, "input", 0, inp, "in0")}, y = {_dequantize(name, "output", 0, out, "out0")};
    sum += (x - y) * (x - y);
  }}
  th_printf("m-results-[");
  put_milli(sum / {out.count}.0f);
  th_printf("]\\r\\n");"""
        if inp.count != out.count:
            raise TractileError(f"ad01 compares the input with the output: {inp.count} and {out.count} values")
    else:
        results = f"""  size_t i;
  th_printf("m-results-[");
  for (i = 0; i < {out.count}u; ++i) {{
    if (i) th_printf(",");
    put_milli({_dequantize(name, "output", 0, out, "out0")});
  }}
  th_printf("]\\r\\n");"""
    return f"""/* submitter_implemented.cpp: MLPerf Tiny's submitter API ({version}) over {name}, generated by
 * tractile: UART0 of the MPS2 board for the runner's serial port, SysTick for the timer. C++
 * like the benchmark's api/internally_implemented.cpp, which declares these functions. */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/internally_implemented.h"
#include "api/submitter_implemented.h"
#include "{name}.h"

extern "C" {{
#include "tl_platform.h"
}}

#define UART_DATA (*(volatile uint32_t *){UART0:#x})
#define UART_STATE (*(volatile uint32_t *){UART0 + 4:#x})
#define UART_CTRL (*(volatile uint32_t *){UART0 + 8:#x})
#define UART_BAUDDIV (*(volatile uint32_t *){UART0 + 16:#x})
#define TICKS_PER_US {MPS2_CLOCK_HZ // 1_000_000}u

static {name}_ctx ctx;
static {inp.ctype} in0[{inp.count}];
static {out.ctype} out0[{out.count}];

int th_vprintf(const char *format, va_list ap);

static void put_char(char c) {{
  while (UART_STATE & 1u) {{}}
  UART_DATA = (uint32_t)(uint8_t)c;
}}

/* a float with three decimals, rounded half away from zero (no float printf) */
static void put_milli(float value) {{
  int32_t milli = (int32_t)(value * 1000.0f + (value < 0.0f ? -0.5f : 0.5f));
  uint32_t magnitude = milli < 0 ? 0u - (uint32_t)milli : (uint32_t)milli;
  th_printf("%s%lu.%03lu", milli < 0 ? "-" : "", (unsigned long)(magnitude / 1000u),
            (unsigned long)(magnitude % 1000u));
}}

void th_serialport_initialize(void) {{
  UART_BAUDDIV = 16u;
  UART_CTRL = 3u; /* transmit and receive */
}}

char th_getchar() {{
  while (!(UART_STATE & 2u)) {{}}
  return (char)UART_DATA;
}}

void th_printf(const char *fmt, ...) {{
  va_list args;
  va_start(args, fmt);
  th_vprintf(fmt, args);
  va_end(args);
}}

static void put_unsigned(unsigned long value, unsigned base, int width, char pad) {{
  char digits[24];
  int count = 0;
  do {{
    digits[count++] = "0123456789abcdef"[value % base];
    value /= base;
  }} while (value);
  while (width-- > count) put_char(pad);
  while (count) put_char(digits[--count]);
}}

/* the conversions the benchmark's API prints (%s %c %d %i %u %x, width, zero padding, l): no
 * vsnprintf, which would pull newlib's allocator in */
int th_vprintf(const char *format, va_list ap) {{
  const char *at;
  for (at = format; *at; ++at) {{
    int width = 0, is_long = 0;
    char pad = ' ';
    if (*at != '%') {{
      put_char(*at);
      continue;
    }}
    if (*++at == '0') pad = '0';
    while (*at >= '0' && *at <= '9') width = width * 10 + (*at++ - '0');
    if (*at == '.')
      while (*++at >= '0' && *at <= '9') {{}}
    while (*at == 'l') is_long = 1, ++at;
    switch (*at) {{
      case 'd':
      case 'i': {{
        long value = is_long ? va_arg(ap, long) : (long)va_arg(ap, int);
        if (value < 0) put_char('-');
        put_unsigned(value < 0 ? 0ul - (unsigned long)value : (unsigned long)value, 10u, width, pad);
        break;
      }}
      case 'u':
        put_unsigned(is_long ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 10u, width, pad);
        break;
      case 'x':
        put_unsigned(is_long ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 16u, width, pad);
        break;
      case 'c':
        put_char((char)va_arg(ap, int));
        break;
      case 's': {{
        const char *text = va_arg(ap, const char *);
        while (*text) put_char(*text++);
        break;
      }}
      case '%':
        put_char('%');
        break;
      default:
        return -1;
    }}
  }}
  return 0;
}}

void th_timestamp_initialize(void) {{
  tl_platform_init();
  th_printf(EE_MSG_TIMESTAMP_MODE);
  th_timestamp();
}}

void th_timestamp(void) {{
  unsigned long microseconds = (unsigned long)(tl_clock() / TICKS_PER_US);
  th_printf(EE_MSG_TIMESTAMP, microseconds);
}}

void th_final_initialize(void) {{ {name}_init(&ctx); }}
void th_pre() {{}}
void th_post() {{}}
void th_command_ready(char volatile *msg) {{ ee_serial_command_parser_callback((char *)msg); }}

void th_load_tensor() {{
  size_t loaded = ee_get_buffer((uint8_t *)in0, {in_bytes}u);
  if (loaded != {in_bytes}u)
    th_printf("e-[th_load_tensor: %lu of {in_bytes} bytes loaded]\\r\\n", (unsigned long)loaded);
}}

void th_infer() {{
  if ({name}_invoke(&ctx, in0, out0) != 0) th_printf("e-[invoke failed]\\r\\n");
}}

void th_results() {{
{results}
}}

int th_strncmp(const char *str1, const char *str2, size_t n) {{ return strncmp(str1, str2, n); }}
char *th_strncpy(char *dest, const char *src, size_t n) {{ return strncpy(dest, src, n); }}
size_t th_strnlen(const char *str, size_t maxlen) {{
  size_t n = 0;
  while (n < maxlen && str[n]) ++n;
  return n;
}}
char *th_strcat(char *dest, const char *src) {{ return strcat(dest, src); }}
char *th_strtok(char *str1, const char *sep) {{ return strtok(str1, sep); }}
int th_atoi(const char *str) {{ return atoi(str); }}
void *th_memset(void *b, int c, size_t len) {{ return memset(b, c, len); }}
void *th_memcpy(void *dst, const void *src, size_t n) {{ return memcpy(dst, src, n); }}

/* the parser's strtok: newlib's allocates its state on the heap (this firmware has none) */
extern "C" char *strtok(char *str, const char *sep) {{
  static char *next;
  char *start;
  if (str) next = str;
  if (!next) return NULL;
  while (*next && strchr(sep, *next)) ++next;
  if (!*next) return next = NULL;
  start = next;
  while (*next && !strchr(sep, *next)) ++next;
  if (*next) *next++ = 0;
  else next = NULL;
  return start;
}}

int main(void) {{
  ee_benchmark_initialize();
  for (;;) ee_serial_callback(th_getchar());
}}
"""


HARNESS_MAKEFILE = """# MLPerf Tiny ({version}) firmware for {board}: {name} behind the benchmark's submitter API.
#   make        build firmware.elf (the benchmark's API from MLPERF_API, referenced, not copied)
#   make run    run it in QEMU, UART0 on this terminal: type commands such as  name%  profile%
MLPERF_API ?= {api}
CC = {prefix}gcc
CXX = {prefix}g++
FLAGS = {flags} -Os -ffunction-sections -fdata-sections -ffp-contract=off -Wall -Wextra \\
        -DTH_MODEL_VERSION=EE_MODEL_VERSION_{upper}
CFLAGS = $(FLAGS) -std=c99
CXXFLAGS = $(FLAGS) -std=c++11 -fno-exceptions -fno-rtti -I$(MLPERF_API) -I.
LDFLAGS = -Wl,--gc-sections{libc} -nostartfiles -T link.ld

firmware.elf: {name}.o startup.o submitter_implemented.o internally_implemented.o link.ld
\t$(CC) $(FLAGS) {name}.o startup.o submitter_implemented.o internally_implemented.o -o $@ $(LDFLAGS) -lm

{name}.o: {name}.c {name}.h
\t$(CC) $(CFLAGS) -c {name}.c -o $@

startup.o: startup.c
\t$(CC) $(CFLAGS) -c startup.c -o $@

submitter_implemented.o: submitter_implemented.cpp {name}.h tl_platform.h
\t$(CXX) $(CXXFLAGS) -c submitter_implemented.cpp -o $@

internally_implemented.o: $(MLPERF_API)/api/internally_implemented.cpp
\t$(CXX) $(CXXFLAGS) -c $(MLPERF_API)/api/internally_implemented.cpp -o $@

run: firmware.elf
\t{run}

clean:
\trm -f firmware.elf *.o

.PHONY: run clean
"""


def qemu_serial_command(board: Board, elf: str) -> list[str]:
    """QEMU running ``elf`` on ``board`` with UART0 on stdin and stdout (the runner's serial port),
    instructions counted (``-icount shift=0``: a virtual nanosecond per instruction)."""
    return [board.emulator_tool, "-M", board.machine or board.name, "-display", "none", "-monitor", "none",
            "-chardev", "stdio,id=dut,signal=off", "-serial", "chardev:dut", "-semihosting-config",
            "enable=on,target=native", "-icount", "shift=0", "-kernel", elf]


def write_harness_project(source, board: Board, folder: str | Path, version: str | None = None,
                          api: str | Path | None = None, stack: int | None = None) -> list[Path]:
    """Write the MLPerf Tiny firmware project for ``source`` on ``board`` into ``folder``, its
    Makefile referring to the benchmark's API at ``api`` (None: :func:`default_api_path`)."""
    check_harness(source, board)
    chosen = harness_model(source, version)
    api_path = Path(api) if api is not None else default_api_path()
    if api_path is None or not (api_path / "api" / "internally_implemented.cpp").is_file():
        raise TractileError(f"MLPerf Tiny's API sources are not at {api_path or '../shared/mlperf_tiny_api'}: give "
                            "--harness-api PATH (a folder with api/internally_implemented.cpp, from mlcommons/tiny's "
                            "benchmark/)")
    if stack is None:
        from .project import project_stack
        from .verify import random_runs

        measured, _ = project_stack(source, board, random_runs([t.fact for t in source.program.inputs], 1, 0)[0])
        stack = (measured or 4096) + HARNESS_STACK_EXTRA
    folder = Path(folder)
    written = source.write(folder)
    run = " ".join(qemu_serial_command(board, "firmware.elf"))
    files = {
        "tl_platform.h": platform_header(board, stack),
        "startup.c": startup_source(board),
        "link.ld": linker_script(board, stack, f"the verification firmware's plus {HARNESS_STACK_EXTRA} B for the "
                                               "runner's parser"),
        "submitter_implemented.cpp": submitter_source(source, chosen),
        "Makefile": HARNESS_MAKEFILE.format(version=chosen, board=board.name, name=source.name, api=api_path.resolve(),
                                            prefix=board.prefix, flags=" ".join(board.flags), upper=chosen.upper(),
                                            libc=libc_specs(board), run=run),
    }
    for filename, text in files.items():
        written.append(write_file(folder, filename, text))
    return written
