"""Running a batch job: which inputs are pending, the engines, progress, the summary."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TractileError
from .files import common_root, find_inputs
from .manifest import Manifest
from .runner import Job, Runner


@dataclass
class BatchSummary:
    """What a job did: inputs found, run now (done / failed), skipped (done or failed before), time."""

    found: int
    done: int = 0
    failed: int = 0
    skipped_done: int = 0
    skipped_failed: int = 0
    seconds: float = 0.0
    failures: list[dict] = field(default_factory=list)

    @property
    def files_per_second(self) -> float:
        ran = self.done + self.failed
        return ran / self.seconds if self.seconds > 0 else 0.0


_WORKER: list[Runner] = []  # the worker process's own model (one per process)


def _start_worker(job: Job) -> None:
    _WORKER.clear()
    _WORKER.append(Runner(job))


def _process_many(paths: list[str]) -> list[dict]:
    return [_WORKER[0].process(path) for path in paths]


def run(model: str, inputs: Sequence[str] | str, out: str, input_facts: Sequence[str] = (), batch_size: int = 1,
        workers: int = 1, pulse: int | None = None, symbol: str | None = None, engine: str = "local",
        ray_address: str | None = None, retry_failed: bool = False, threads: int | None = 1,
        progress: Callable[[int, int, dict], None] | None = None) -> BatchSummary:
    """Run ``model`` over every file matching ``inputs``; results and manifest under ``out``.

    Parallelism is across files: each worker uses ``threads`` BLAS threads (default 1, the
    fastest measured on small and medium models; None keeps the libraries' default).
    ``progress(finished, total, record)`` is called after each input. Returns a
    :class:`BatchSummary`; the manifest has one line per input run.
    """
    if workers < 1 or batch_size < 1:
        raise TractileError(f"workers and batch size must be at least 1, got {workers} and {batch_size}")
    if engine not in ("local", "ray"):
        raise TractileError(f"engine must be 'local' or 'ray', got {engine!r}")
    paths = find_inputs(inputs)
    out_dir = Path(out)
    job = Job(str(model), str(out_dir), str(common_root(paths, inputs)), tuple(input_facts), pulse, symbol,
              threads=threads)
    probe = Runner(job)  # fails fast, here, on a model or option that cannot work
    try:
        return _run_job(job, probe, paths, out_dir, workers, batch_size, engine, ray_address, retry_failed, progress)
    finally:
        probe.release_threads()  # the caller's process gets its thread limits back


def _run_job(job: Job, probe: Runner, paths: list, out_dir: Path, workers: int, batch_size: int, engine: str,
             ray_address: str | None, retry_failed: bool, progress) -> BatchSummary:
    manifest = Manifest(out_dir)
    todo, done_before, failed_before = manifest.pending(paths, probe.output_names, retry_failed)
    summary = BatchSummary(len(paths), skipped_done=done_before, skipped_failed=failed_before)
    start = time.perf_counter()
    if engine == "ray":
        from .ray_engine import run_on_ray

        records: Iterable[dict] = run_on_ray(job, [str(p) for p in todo], workers, batch_size, ray_address)
    elif workers == 1:
        records = (probe.process(str(path)) for path in todo)
    else:
        records = _run_local(job, [str(p) for p in todo], workers, batch_size)
    for finished, record in enumerate(records, start=1):
        manifest.append(record)
        if record["status"] == "done":
            summary.done += 1
        else:
            summary.failed += 1
            summary.failures.append(record)
        if progress is not None:
            progress(finished, len(todo), record)
    summary.seconds = time.perf_counter() - start
    return summary


def _run_local(job: Job, paths: list[str], workers: int, batch_size: int) -> Iterable[dict]:
    groups = [paths[i:i + batch_size] for i in range(0, len(paths), batch_size)]
    with ProcessPoolExecutor(max_workers=workers, initializer=_start_worker, initargs=(job,)) as pool:
        futures = [pool.submit(_process_many, group) for group in groups]
        for future in as_completed(futures):
            yield from future.result()
