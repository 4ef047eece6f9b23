"""Threads in the host build (tl_threads.h): the host GEMMs of large layers split their rows
across the context's threads, with outputs equal to one thread's bit for bit (int8 and float:
each output is computed by one thread in the same order); microcontroller builds carry no
threads code."""
from __future__ import annotations

import gc
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import tractile
from tractile.compile import generate, kernel_header
from tractile.compile.host import CompiledModel, build_shared_library, find_c_compiler
from tractile.compile.target import find_target
from tractile.errors import TractileError

from ..tflite.builder import Window2D
from .harness import assert_builds_without_warnings, needs_cc, random_input
from .test_host_dw import SAME2, float_depthwise
from .test_host_gemm import ROWS2, float_conv, float_conv_deep, float_dense, float_residual, int8_conv, int8_dense

RNG = np.random.default_rng(29)
SAME = Window2D("SAME", 1, 1)
#: each above tl_threads.h's TL_THREADS_MIN_WORK (2^22 multiply-adds), pixels not a multiple of 8 * threads
MODELS = {
    "conv_s8_3x3": lambda: int8_conv(16, 35, (3, 3), SAME, shape=(1, 31, 33)),
    "conv_s8_1x1": lambda: int8_conv(40, 41, (1, 1), SAME, shape=(2, 45, 47)),
    # 7 filters: windows read in place (tl_conv_few_x86.h), split by output rows
    "conv_s8_few": lambda: int8_conv(3, 7, (5, 5), SAME, shape=(1, 101, 83)),
    "dense_s8": lambda: int8_dense(403, 300, 37, "micro"),
    # rows of taps dilated: the float GEMM, not Winograd (test_host_wino.py splits that)
    "conv_f32_3x3": lambda: float_conv(16, 35, (3, 3), ROWS2, shape=(1, 31, 33)),
    # windows deeper than a pass, over 1 MiB of weights (tl_conv_gemm_f32_panels), 25 pixels
    "conv_f32_3x3_panels": lambda: float_conv_deep(128, 232, (3, 3), shape=(1, 5, 5), window=ROWS2),
    "dense_f32": lambda: float_dense(403, 300, 37),
    # a residual Add in the 1x1 convolution's store, written over the residual (rows split across threads)
    "conv_f32_residual": lambda: float_residual(64, 48, (1, 1), shape=(1, 45, 47)),
    # depthwise layers weigh their multiply-adds 8 times (tl_host_dw.h's TL_HDW_SPLIT_WEIGHT): 3x3
    # interiors in runs; stride 2 over two batches (rows split across the batches' boundary)
    "dwconv_f32_3x3": lambda: float_depthwise(64, (3, 3), SAME, shape=(1, 31, 33)),
    "dwconv_f32_stride2": lambda: float_depthwise(56, (3, 3), SAME2, shape=(2, 45, 47)),
}


@pytest.mark.parametrize("case", sorted(MODELS))
def test_threads_give_the_outputs_of_one_thread(case, compile_cache):
    needs_cc()
    model = MODELS[case]().into_optimized()
    source = generate(model, name=f"threads_{case}", optimize=False)
    assert "ctx->threads" in source.source, "the GEMM kernels do not take the context's threads"
    compiled = CompiledModel(source, build_shared_library(source.files, source.name, cache_dir=compile_cache), model)
    inputs = [random_input(fact, RNG) for fact in model.input_facts]
    compiled.set_threads(1)
    (single,) = compiled.run(list(inputs))
    (expected,) = model.run(list(inputs))
    if single.dtype == np.int8:
        np.testing.assert_array_equal(single, expected)
    else:
        # sums of 144 to 300 products of magnitude ~1: cancellation leaves absolute differences of ~2e-5
        np.testing.assert_allclose(single, expected, rtol=1e-5, atol=1e-4)
    others = [random_input(fact, RNG) for fact in model.input_facts]
    for threads in (2, 3):
        compiled.set_threads(1)
        compiled.run(list(others))  # every output written with other values first: a row a split misses shows
        compiled.set_threads(threads)
        (split,) = compiled.run(list(inputs))
        np.testing.assert_array_equal(split, single, err_msg=f"{case} on {threads} threads")


def _tasks() -> int:
    return len(os.listdir("/proc/self/task"))


def test_threads_live_with_the_context_and_stop_with_it(compile_cache):
    """The context's workers start with the first split layer, stay for later runs, are stopped
    when the thread count changes (set_threads 2 -> 1 -> 2 keeps outputs and thread count right)
    and when the context is garbage-collected (NAME_release)."""
    needs_cc()
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("counts threads through Linux's /proc/self/task")
    model = MODELS["dense_f32"]().into_optimized()
    source = generate(model, name="threads_pool", optimize=False)
    library = build_shared_library(source.files, source.name, cache_dir=compile_cache)
    inputs = [random_input(fact, RNG) for fact in model.input_facts]
    gc.collect()
    before = _tasks()
    compiled = CompiledModel(source, library, model)
    (one,) = compiled.run(list(inputs))
    assert _tasks() == before
    for threads in (2, 1, 2, 2, 3):
        compiled.set_threads(threads)
        np.testing.assert_array_equal(compiled.run(list(inputs))[0], one, err_msg=f"{threads} threads")
        assert _tasks() == before + threads - 1, f"workers of {threads} threads"
    # between runs the workers spin a little (TL_THREADS_SPIN_NS, 200 us), then sleep: an idle model costs no CPU
    start = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - start < 0.05, "the workers kept spinning while the model was idle"
    other = compiled.state()
    other.set_threads(2)
    np.testing.assert_array_equal(other.run(list(inputs))[0], one)
    assert _tasks() == before + 3
    del other
    gc.collect()
    assert _tasks() == before + 2
    del compiled
    gc.collect()
    assert _tasks() == before


def test_set_threads_reaches_compiled_models(compile_cache):
    needs_cc()
    model = MODELS["conv_s8_3x3"]().into_optimized()
    compiled = tractile.compile.compile_model(model, name="threads_global", cache_dir=compile_cache)
    inputs = [random_input(fact, RNG) for fact in model.input_facts]
    try:
        tractile.set_threads(2)
        (two,) = compiled.run(list(inputs))
        assert compiled._default._applied == 2
    finally:
        tractile.set_threads(None)
    (one,) = compiled.run(list(inputs))
    assert compiled._default._applied == 1
    np.testing.assert_array_equal(two, one)
    with pytest.raises(TractileError, match="threads"):
        compiled.set_threads(0)


DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#ifdef CREATE_LIMIT /* pthread_create fails (EAGAIN) after CREATE_LIMIT threads */
static int created;
static int limited_create(pthread_t *id, const pthread_attr_t *attr, void *(*run)(void *), void *arg) {
  return created++ < CREATE_LIMIT ? pthread_create(id, attr, run, arg) : 11;
}
#define pthread_create limited_create
#endif
#include "tl_threads.h"
typedef struct { pthread_t who[100]; int32_t seen[100]; } record;
static void mark(const void *args, int32_t begin, int32_t end, void *col) {
  record *r = (record *)(void *)(uintptr_t)args;
  volatile int32_t spin;
  int32_t i;
  ((volatile unsigned char *)col)[TL_THREAD_COL_BYTES - 1] = 1;
  for (i = begin; i < end; ++i) {
    r->who[i] = pthread_self();
    r->seen[i] += 1;
    for (spin = 0; spin < 20000; ++spin) {
    }
  }
}
int main(void) {
  static record r;
  static unsigned char col[TL_THREAD_COL_BYTES];
  static tl_threads threads;
  int32_t i, call, changes, most = 0, most_threads = 0, started;
  memset(&threads, 0, sizeof threads);
  tl_threads_init(&threads);
  tl_threads_set(&threads, THREADS);
  for (call = 0; call < 20; ++call) {
    pthread_t distinct[100];
    int32_t count = 0, j;
    memset(&r, 0, sizeof r);
    tl_parallel_rows(mark, &r, 100, 8, &threads, col, sizeof col, TL_THREADS_MIN_WORK);
    for (i = 0, changes = 0; i < 100; ++i) {
      if (r.seen[i] != 1) return 2;
      if (i > 0 && !pthread_equal(r.who[i], r.who[i - 1])) { if (i % 8) return 3; ++changes; }
      for (j = 0; j < count && !pthread_equal(distinct[j], r.who[i]); ++j) {
      }
      if (j == count) distinct[count++] = r.who[i];
    }
    if (changes > most) most = changes;
    if (count > most_threads) most_threads = count;
  }
  started = threads.pool.workers;
  tl_threads_release(&threads);
  printf("%d %d %d %d\n", most, most_threads, started, threads.pool.workers);
  return 0;
}
"""


@pytest.mark.parametrize("threads, limit", [(1, None), (3, None), (100, None), (4, 1), (4, 0)])
def test_rows_are_split_in_whole_blocks_one_range_a_thread(threads, limit, tmp_path):
    needs_cc()
    (tmp_path / "tl_threads.h").write_text(kernel_header("tl_threads.h"))
    (tmp_path / "driver.c").write_text(DRIVER)
    cc = find_c_compiler().split()
    subprocess.run([*cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-DTL_HOST_THREADS", "-pthread",
                    f"-DTHREADS={threads}", *([] if limit is None else [f"-DCREATE_LIMIT={limit}"]), "-o", "driver",
                    "driver.c"], cwd=tmp_path, check=True)
    done = subprocess.run([str(tmp_path / "driver")], capture_output=True, text=True, check=True, timeout=60)
    changes, used, started, workers_left = map(int, done.stdout.split())
    # 100 rows are 13 blocks of 8, in at most one part a thread (the thread count capped at
    # TL_THREADS_MAX = 64): the owner changes only between parts; a part is claimed by whichever
    # thread is free, so the caller may run several, but in 20 calls the workers take some.
    # Workers that could not be started are not waited for: the caller runs their parts.
    workers = min(threads, 64) - 1 if limit is None else min(threads - 1, limit)
    parts = min(threads, 13)
    assert started == workers
    assert changes <= parts - 1 and used <= min(parts, workers + 1)
    assert (used > 1) == (workers > 0)
    assert workers_left == 0


def test_generated_threads_code_builds_without_warnings(tmp_path):
    source = generate(MODELS["conv_f32_3x3"](), name="threads_warnings")
    assert_builds_without_warnings(source, tmp_path)
    assert_builds_without_warnings(source, tmp_path, extra_flags=("-DTL_HOST_THREADS", "-pthread"))


def test_microcontroller_builds_have_no_threads(tmp_path: Path):
    for target in ("cortex-m4", "cortex-m7"):
        source = generate(MODELS["conv_s8_3x3"](), name="mcu", target=find_target(target))
        text = "\n".join(source.files.values())
        assert "pthread" not in text and "tl_threads.h" not in source.files and "threads" not in source.header


def three_convs(size: int):
    from ..tflite.builder import GraphBuilder, q, qc

    g = GraphBuilder()
    x = g.input("x", "i8", (1, size, size, 16), q(2 ** -6, 5))
    for index in range(3):
        w = g.const(f"w{index}", RNG.integers(-127, 128, (16, 3, 3, 16)), "i8", qc([2 ** -7] * 16, 0))
        b = g.const(f"b{index}", RNG.integers(-3000, 3000, 16), "i32", qc([2 ** -13] * 16, 0))
        x = g.conv(f"y{index}", [x, w, b], SAME, q(2 ** -4, -7), "RELU")
    return g.outputs(x)


def arena_ranges(source) -> dict[str, range]:
    found = re.findall(r"(\w+) = \(\w+ \*\)\(arena \+ (\d+)\);  /\* (\d+) B", source.source)
    return {name: range(int(offset), int(offset) + int(size)) for name, offset, size in found}


@pytest.mark.parametrize("size, apart", [(48, True), (12, False)])
def test_only_layers_large_enough_for_threads_get_an_output_apart_from_their_input(size, apart, compile_cache):
    model = three_convs(size).into_optimized()
    source = generate(model, name=f"threads_chain{size}", optimize=False)
    ranges = arena_ranges(source)
    (call,) = [line for line in source.source.splitlines() if line.strip().startswith("tl_conv_gemm_s8(y0_pre,")]
    args = call.split("(", 1)[1].split(", ")
    x, y = ranges[args[0]], ranges[args[3]]
    assert (not set(x) & set(y)) == apart
    if apart:
        needs_cc()
        compiled = CompiledModel(source, build_shared_library(source.files, source.name, cache_dir=compile_cache),
                                 model)
        inputs = [random_input(fact, RNG) for fact in model.input_facts]
        (one,) = compiled.run(list(inputs))
        compiled.set_threads(2)
        np.testing.assert_array_equal(compiled.run(list(inputs))[0], one)
        np.testing.assert_array_equal(model.run(list(inputs))[0], one)
