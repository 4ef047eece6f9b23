"""The Ray engine: Ray Data's ``map_batches`` over a dataset of file paths, with
:class:`RayPredictor` (one loaded model per actor). Results are written by the actors; the
coordinating process writes the manifest as records arrive. A batch whose actor dies is run
again by Ray; its results are rewritten atomically and each input gets one manifest line."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..errors import TractileError
from .runner import Job, Runner


class RayPredictor:
    """A Ray Data callable class: ``map_batches(RayPredictor, fn_constructor_kwargs={"job": job})``
    on a dataset with a ``path`` column gives ``input``, ``output``, ``status``, ``error`` and
    ``seconds`` columns (one row per file). Also usable in pipelines users build themselves."""

    def __init__(self, job: Job):
        self.runner = Runner(job)

    def __call__(self, batch: dict) -> dict:
        records = [self.runner.process(str(path)) for path in batch["path"]]
        return {key: np.array([r[key] if r[key] is not None else "" for r in records], dtype=object)
                for key in ("input", "output", "status", "error", "seconds")}


def run_on_ray(job: Job, paths: list[str], workers: int, batch_size: int, address: str | None) -> Iterator[dict]:
    """Records of ``paths`` run on Ray (a local cluster started here when ``address`` is None)."""
    try:
        import ray
    except ImportError:
        raise TractileError("the ray engine needs Ray: pip install 'tractile[ray]'") from None
    if not paths:
        return
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, num_cpus=None if address else workers, include_dashboard=False,
                 log_to_driver=False, ignore_reinit_error=True)
    try:
        dataset = ray.data.from_items([{"path": path} for path in paths])
        results = dataset.map_batches(RayPredictor, fn_constructor_kwargs={"job": job}, batch_size=batch_size,
                                      concurrency=workers, batch_format="numpy")
        seen: set[str] = set()
        for row in results.iter_rows():
            record = {"input": str(row["input"]), "output": str(row["output"]), "status": str(row["status"]),
                      "error": str(row["error"]) or None, "seconds": float(row["seconds"])}
            if record["input"] in seen:  # a retried batch reporting again
                continue
            seen.add(record["input"])
            yield record
    finally:
        if started_here:
            ray.shutdown()
