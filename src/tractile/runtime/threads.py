"""How many threads tractile's numerical libraries use (BLAS, and OpenMP where NumPy has it)."""
from __future__ import annotations

import threading

from ..errors import TractileError

_LOCK = threading.Lock()
_ACTIVE: list = []
#: the threads of compiled host models' large layers (set_threads; one by default)
_HOST = [1]


def set_threads(count: int | None) -> None:
    """Use at most ``count`` threads for matrix products (BLAS) and OpenMP loops, process-wide;
    ``None`` gives the libraries back their own defaults. Models compiled for the host split
    their large convolutions and GEMMs across ``count`` threads too (one for ``None``).

    Small products (a streaming push, an LSTM step) gain nothing from threads and pay for
    waking them: tractile already keeps those on one thread. Needs ``threadpoolctl`` (the
    ``fast`` extra: ``pip install 'tractile[fast]'``).
    """
    if count is not None:
        _check_count(count, "set_threads", " (or None for the defaults)")
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError as error:
        raise TractileError("set_threads needs threadpoolctl: pip install 'tractile[fast]'") from error
    with _LOCK:
        _HOST[0] = 1 if count is None else count
        while _ACTIVE:
            _ACTIVE.pop().restore_original_limits()
        if count is not None:
            _ACTIVE.append(ThreadpoolController().limit(limits=count))


def limit_threads(count: int):
    """Use at most ``count`` threads now, as :func:`set_threads`; returns a function that gives the
    libraries back exactly the limits they had before (a no-op without threadpoolctl)."""
    _check_count(count, "limit_threads")
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return lambda: None
    with _LOCK:
        limiter = ThreadpoolController().limit(limits=count)
    return limiter.restore_original_limits


def host_threads() -> int:
    """The threads compiled host models split their large layers across (:func:`set_threads`)."""
    return _HOST[0]


def check_thread_count(count, where: str) -> None:
    """A TractileError unless ``count`` is a number of threads >= 1."""
    _check_count(count, where)


def _check_count(count, where: str, alternative: str = "") -> None:
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise TractileError(f"{where}: give a number of threads >= 1{alternative}, got {count!r}")


def current_threads() -> dict[str, int]:
    """The thread count of each numerical library loaded in this process (by its API: blas, openmp)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return {}
    counts: dict[str, int] = {}
    for library in threadpool_info():
        counts[library["user_api"]] = max(counts.get(library["user_api"], 0), int(library["num_threads"]))
    return counts
