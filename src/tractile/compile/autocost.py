"""``compile="auto"`` by measured cost: each candidate segment runs compiled and interpreted on
the model's shapes, and the faster one is kept.

The decision is cached beside the segment's built library (whose folder name is the build's
content hash: generated C, shapes, weights, compiler and flags), per thread setting, so a
second load of the same model on the same machine measures nothing. Kernels that change (a new
SIMD kernel, another compiler) change the hash, and the segment is measured again. A near tie
(compiled within :data:`MARGIN` of interpreted) stays interpreted, and the whole model with its
segments is timed once against the interpreter (:func:`check_model`): if it is not faster, the
model stays interpreted.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import TractileError

DECISION_FILE = "auto-cost.json"
#: the name of the choice about the whole model in the list of choices
WHOLE_MODEL = "(whole model)"
#: compiled is kept when it takes at most this share of the interpreted time
MARGIN = 0.95


class Costs(Protocol):
    """Where ``compile="auto"`` gets its costs (seconds per run): :class:`MeasuredCosts` times
    them; tests inject their own."""

    def segment(self, segment, compiled) -> tuple[float, float]:
        """(compiled, interpreted) seconds of a whole segment (``segment``: the interpreter model,
        ``compiled``: its CompiledModel)."""

    def nodes(self, segment) -> dict[str, tuple[float, float]]:
        """(compiled, interpreted) seconds of each node of ``segment``, by node name."""

    def model(self, auto, interpreted) -> tuple[float, float]:
        """(with segments, interpreted) seconds of the whole model."""


@dataclass
class SegmentChoice:
    """What ``compile="auto"`` decided for one candidate segment, and why. ``prefer``: of a
    segment slower compiled, the nodes faster compiled one by one (tried again as smaller
    segments)."""

    segment: str
    nodes: int
    ops: str
    compiled_s: float | None
    interpreted_s: float | None
    compiled: bool
    why: str
    prefer: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return asdict(self)


def choose(segment, compiled, label: str, ops: tuple[str, ...], costs: Costs, refine: bool) -> SegmentChoice:
    """The choice for one segment: from the cache beside its build, else measured by ``costs``
    and cached. With ``refine``, a segment slower compiled also gets the nodes faster compiled
    one by one (its ``prefer``)."""
    counts: dict[str, int] = {}
    for op in ops:
        counts[op] = counts.get(op, 0) + 1
    summary = ", ".join(f"{k}x{v}" if v > 1 else k for k, v in counts.items())
    cache = Path(compiled.library).parent / DECISION_FILE
    setting = thread_setting()
    stored = _read_cached(cache)
    known = stored.get(setting)
    why = "cached"
    try:
        if known is None:
            compiled_s, interpreted_s = costs.segment(segment, compiled)
            known = {"compiled_s": float(compiled_s), "interpreted_s": float(interpreted_s)}
            why = "measured"
        faster = known["compiled_s"] <= known["interpreted_s"] * MARGIN
        if not faster and refine and len(ops) > 1 and "prefer" not in known:
            per_node = costs.nodes(segment)
            known["prefer"] = [name for name, (c, i) in per_node.items() if c <= i * MARGIN]
        if stored.get(setting) != known:
            stored[setting] = known
            _write_cached(cache, stored)
    except (TractileError, TypeError, ValueError, FloatingPointError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return SegmentChoice(label, len(ops), summary, None, None, True, f"not measured ({first}): compiled")
    prefer = tuple(known.get("prefer", ())) if refine and not faster else ()
    reason = f"{why}: {'compiled' if faster else 'interpreted'} is faster"
    if prefer:
        reason += f"; {len(prefer)} node(s) faster compiled alone, tried as smaller segments"
    return SegmentChoice(label, len(ops), summary, float(known["compiled_s"]), float(known["interpreted_s"]),
                         faster, reason, prefer)


def blas_threads() -> int | None:
    """The threads of NumPy's BLAS (the interpreter's products), if threadpoolctl can tell."""
    from ..runtime.threads import current_threads

    return current_threads().get("blas")


def thread_setting() -> str:
    """The key of the timings: they hold for one thread count of the interpreter's BLAS."""
    return f"blas threads {blas_threads()}"


def _read_cached(path: Path) -> dict:
    """The decisions stored at ``path``, by thread setting (those well formed)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    kept = {}
    for setting, known in data.items():
        try:
            float(known["compiled_s"]), float(known["interpreted_s"])
            kept[setting] = known
        except (KeyError, TypeError, ValueError):
            continue
    return kept


def _write_cached(path: Path, data: dict) -> None:
    try:
        handle, temporary = tempfile.mkstemp(prefix=".auto-cost-", dir=path.parent)
        with os.fdopen(handle, "w") as file:
            json.dump(data, file)
        os.replace(temporary, path)
    except OSError:
        pass  # a read-only cache: the choice is measured again next time


def sample_inputs(facts, seed: int = 0) -> list[np.ndarray]:
    """Inputs of the segment's shapes for timing: floats in [-1, 1], integers and booleans zero
    (always valid indices, lengths and quantized values)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for fact in facts:
        dtype = fact.dtype.np
        shape = tuple(int(d) for d in fact.shape)
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.uniform(-1.0, 1.0, shape).astype(dtype))
        else:
            arrays.append(np.zeros(shape, dtype))
    return arrays


def default_clock() -> Callable[[], float]:
    """The CPU time of the calling thread when the interpreter's BLAS runs on one thread (what a
    run computes, whatever else the machine does), else elapsed time."""
    return time.thread_time if blas_threads() == 1 else time.perf_counter


class MeasuredCosts:
    """Costs timed on this machine: ``clock`` (by default :func:`default_clock`), medians of a few
    runs after warm-up; per-node compiled costs from a build with per-node timers (in ``cache_dir``)."""

    def __init__(self, cache_dir=None, clock: Callable[[], float] | None = None):
        self.cache_dir = cache_dir
        self.clock = clock or default_clock()

    def segment(self, segment, compiled) -> tuple[float, float]:
        return measure(segment, compiled, self.clock)

    def model(self, auto, interpreted) -> tuple[float, float]:
        inputs = sample_inputs(interpreted.input_facts)
        return measure_pair(auto.state(), interpreted.state(), inputs, self.clock)

    def nodes(self, segment) -> dict[str, tuple[float, float]]:
        from ..runtime.profile import profile
        from . import compile_model

        timed = compile_model(segment, name="timed", cache_dir=self.cache_dir, optimize=False, profile=True)
        inputs = sample_inputs(timed.input_facts)
        state = timed.state()
        for _ in range(2):
            state.run(list(inputs))
        state = timed.state()
        runs = 5
        for _ in range(runs):
            state.run(list(inputs))
        seconds = state.node_seconds() / runs
        compiled: dict[str, float] = {}
        lowered = timed.model  # the segment as prepared for lowering: the ids of the program's nodes
        for step, code in enumerate(timed.source.program.nodes):
            members = code.members or (code.node_id,)
            for member in members:  # a fused step's time shared by its nodes
                name = lowered.nodes[member].name
                compiled[name] = compiled.get(name, 0.0) + float(seconds[step]) / len(members)
        report = profile(segment, list(inputs), warmup=2, iterations=runs)
        # a node that lowers to no code (a reshape in place) costs nothing compiled
        return {node.name: (compiled.get(node.name, 0.0), node.real) for node in report.nodes
                if node.op not in ("Source", "Const")}


def measure(segment, compiled, clock: Callable[[], float] = time.perf_counter, warmup: int = 2,
            runs: int = 15, budget: float = 1.0) -> tuple[float, float]:
    """Median seconds per run of ``compiled`` (a CompiledModel) and of ``segment`` (the same
    nodes in the interpreter), on inputs of their shapes (:func:`measure_pair`)."""
    return measure_pair(compiled.state(), segment.state(), sample_inputs(compiled.input_facts), clock, warmup,
                        runs, budget)


def measure_pair(first, second, inputs: list[np.ndarray], clock: Callable[[], float] = time.perf_counter,
                 warmup: int = 2, runs: int = 15, budget: float = 1.0) -> tuple[float, float]:
    """Median seconds per run of two states on ``inputs``: ``warmup`` untimed runs of each, then
    up to ``runs`` timed runs taking turns (a change of load falls on both alike), at least 5,
    fewer than ``runs`` once the timed runs took more than ``budget`` seconds."""
    engines = [first, second]
    for engine in engines:
        for _ in range(warmup):
            engine.run(list(inputs))
    samples: list[list[float]] = [[], []]
    spent = 0.0
    for index in range(runs):
        for engine, times in zip(engines, samples):
            start = clock()
            engine.run(list(inputs))
            times.append(clock() - start)
        spent += samples[0][-1] + samples[1][-1]
        if index >= 4 and spent > budget:
            break
    return statistics.median(samples[0]), statistics.median(samples[1])


def check_model(auto, interpreted, costs: Costs, cache_root: Path) -> tuple[bool, float | None, float | None, str]:
    """Whether ``auto`` (with compiled segments) runs faster than ``interpreted`` (within
    :data:`MARGIN`), timed by ``costs`` once and cached under ``cache_root`` by the model's
    nodes, its segments' builds and the thread setting: (faster, auto s, interpreted s, why)."""
    digest = hashlib.sha256(thread_setting().encode())
    for node in auto.nodes:
        digest.update(f"{node.name}\0{node.op.name}\0".encode())
        library = getattr(getattr(node.op, "compiled", None), "library", None)
        if library is not None:
            digest.update(Path(library).parent.name.encode())
    cache = cache_root / "auto-models" / f"{digest.hexdigest()[:24]}.json"
    stored = _read_cached(cache).get("model")
    why = "cached"
    if stored is None:
        try:
            auto_s, interpreted_s = costs.model(auto, interpreted)
        except (TractileError, TypeError, ValueError, FloatingPointError) as error:
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            return True, None, None, f"not measured ({first})"
        stored = {"compiled_s": float(auto_s), "interpreted_s": float(interpreted_s)}
        why = "measured"
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass
        _write_cached(cache, {"model": stored})
    faster = stored["compiled_s"] <= stored["interpreted_s"] * MARGIN
    return faster, stored["compiled_s"], stored["interpreted_s"], why
