"""What each worker does: load the model once, then turn input files into result files.

A :class:`Runner` is built from a :class:`Job` (plain data, so it travels to worker processes
and Ray actors); ``process(path)`` reads the file, runs the model (or pushes the file through
the pulsed model chunk by chunk), writes the result atomically and returns the manifest
record. A ``TractileError`` becomes a ``failed`` record; the job goes on.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import TractileError
from .files import fit, read_arrays, result_path, write_atomically


@dataclass(frozen=True)
class Job:
    """What to run: the model file, its input facts, the optional pulse, where results go."""

    model: str
    out: str
    root: str
    inputs: tuple = field(default_factory=tuple)
    pulse: int | None = None
    symbol: str | None = None
    #: BLAS threads of each worker (1 when several workers share the machine), None: the default
    threads: int | None = None


class Runner:
    """One loaded model (and, when pulsed, its pulsed form) turning files into results."""

    def __init__(self, job: Job):
        import tractile

        from ..runtime.threads import limit_threads

        self.release_threads = limit_threads(job.threads) if job.threads is not None else (lambda: None)
        self.job = job
        facts = list(job.inputs) or None
        self.model = tractile.load(job.model, inputs=facts)
        self.names = self.model.input_names()
        self.output_names = self.model.output_names()
        self.pulsed = None
        if job.pulse:
            from ..pulse.symbol import stream_symbol
            from ..runtime.dynamic import DynamicModel

            if isinstance(self.model, DynamicModel):
                raise TractileError(f"streaming needs the model typed when loading ({self.model.reason}): give "
                                    "the inputs' facts")

            self.pulsed = self.model.pulse(stream_symbol(self.model, job.symbol), job.pulse)
        self.state = self.model.state()

    def process(self, path: str) -> dict:
        """Run one input file; the manifest record (input, output, status, error, seconds)."""
        start = time.perf_counter()
        source = Path(path)
        target = result_path(Path(self.job.out), source, Path(self.job.root))
        record = {"input": str(source), "output": str(target)}
        try:
            arrays = [fit(a, f, n, source) for a, f, n in zip(read_arrays(source, self.names),
                                                             self.model.input_facts, self.names)]
            outputs = self._stream(arrays) if self.pulsed is not None else self.state.run(arrays)
            write_atomically(target, dict(zip(self.output_names, outputs)))
            record.update(status="done", error=None)
        except TractileError as error:
            record.update(status="failed", error=str(error))
        record["seconds"] = round(time.perf_counter() - start, 6)
        return record

    def _stream(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Push the file through the pulsed model, P frames at a time; the delay dropped."""
        pulsed = self.pulsed
        stream = pulsed.start()
        streams = pulsed.input_streams
        length = next(a.shape[s.axis] for a, s in zip(arrays, streams) if s is not None)
        pieces: list[list[np.ndarray]] = [[] for _ in self.output_names]
        full = length - length % pulsed.pulse
        for begin in range(0, full, pulsed.pulse):
            chunk = [np.take(a, range(begin, begin + pulsed.pulse), axis=s.axis) if s is not None else a
                     for a, s in zip(arrays, streams)]
            for index, output in enumerate(stream.push(chunk)):
                pieces[index].append(output)
        last = [np.take(a, range(full, length), axis=s.axis) if s is not None else a
                for a, s in zip(arrays, streams)] if full < length else None
        for index, output in enumerate(stream.finish(last)):
            pieces[index].append(output)
        results = []
        for index, out_stream in enumerate(pulsed.output_streams):
            joined = np.concatenate(pieces[index], axis=out_stream.axis)
            results.append(np.take(joined, range(pulsed.delays[index], joined.shape[out_stream.axis]),
                                   axis=out_stream.axis))
        return results
