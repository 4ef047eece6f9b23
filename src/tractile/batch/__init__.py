"""Batch inference over many files, on this machine or on a Ray cluster, resumable.

    summary = tractile.batch.run("vad.onnx", "data/**/*.wav", "results/", workers=2)

Each input file becomes one result file (``.npz`` of the outputs by name, written atomically)
under ``out``, mirroring the input tree, and one line of ``out/manifest.jsonl``. A rerun skips
inputs whose results exist and load, so an interrupted job resumes; inputs that failed (with
the ``TractileError`` text in the manifest) are retried only with ``retry_failed``. The
engines: ``local`` (a process pool, one loaded model per worker) and ``ray`` (Ray Data's
``map_batches`` with :class:`RayPredictor`, one loaded model per actor). See docs/BATCH.md.
"""
from __future__ import annotations

from .job import BatchSummary, run
from .runner import Job, Runner

__all__ = ["run", "BatchSummary", "Job", "Runner", "RayPredictor"]


def __getattr__(name: str):
    if name == "RayPredictor":
        from .ray_engine import RayPredictor

        return RayPredictor
    raise AttributeError(name)
