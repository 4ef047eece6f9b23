"""What every benchmark here times the same way: warm-up calls, then the median and the fastest of
timed calls (the fastest is what a loaded machine hides least)."""
from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable


def median_and_fastest(run: Callable[[], object], runs: int, warmup: int = 5) -> tuple[float, float]:
    """Seconds: the median and the fastest of ``runs`` calls of ``run`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def interleaved_samples(fns: list[Callable[[], object]], runs: int, warmup: int = 10,
                        clock: Callable[[], float] = time.perf_counter, settle: float = 0.0) -> list[list[float]]:
    """The times of ``runs`` calls of each function after ``warmup`` untimed ones, the functions
    taking turns call after call (so that a change of load on the machine falls on all alike).
    ``settle``: seconds of sleep before each timed call, for engines on several threads: a thread
    pool left spinning by the engine before (OpenBLAS's workers spin ~0.1 s after a product,
    onnxruntime's a little) takes a core from the next one, whose split work then waits for it."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, times in zip(fns, samples):
            if settle:
                time.sleep(settle)
            start = clock()
            fn()
            times.append(clock() - start)
    return samples


def interleaved(fns: list[Callable[[], object]], runs: int, warmup: int = 10) -> list[tuple[float, float]]:
    """(median, fastest) seconds of each function, the functions taking turns call after call."""
    return [(statistics.median(times), min(times)) for times in interleaved_samples(fns, runs, warmup)]


def load_average() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as the benchmarks print them."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())
