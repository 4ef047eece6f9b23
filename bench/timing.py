"""What every benchmark here times the same way: warm-up calls, then the median and the fastest of
timed calls (the fastest is what a loaded machine hides least)."""
from __future__ import annotations

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
