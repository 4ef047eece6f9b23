"""Per-node profiling: wall, user and system time of every step, over repeated runs.

Profiling uses its own run loop (:func:`profile_state_run`), so a plain ``run``
pays nothing for it.
"""
from __future__ import annotations

import resource
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TractileError


@dataclass
class NodeProfile:
    """Times of one node, per iteration (seconds), after warm-up and outlier removal."""

    node_id: int
    name: str
    op: str
    attributes: dict
    real: float
    user: float
    system: float
    flops: float | None = None
    bytes_moved: float | None = None

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s (None when the op cannot count its FLOPs)."""
        if self.flops is None or self.real <= 0:
            return None
        return self.flops / self.real / 1e9

    @property
    def gbytes_per_second(self) -> float | None:
        """Achieved memory traffic in GB/s, counting each input and output once."""
        if self.bytes_moved is None or self.real <= 0:
            return None
        return self.bytes_moved / self.real / 1e9


@dataclass
class ProfileReport:
    """What :func:`profile` measured: per node, totals, and per op type."""

    nodes: list[NodeProfile]
    real: float
    user: float
    system: float
    iterations: int
    warmup: int
    bindings: dict[str, int] = field(default_factory=dict)

    def by_op(self) -> list[tuple[str, int, float]]:
        """(op, node count, real time per iteration) per op type, slowest first."""
        groups: dict[str, list[NodeProfile]] = {}
        for node in self.nodes:
            groups.setdefault(node.op, []).append(node)
        rows = [(op, len(nodes), sum(n.real for n in nodes)) for op, nodes in groups.items()]
        return sorted(rows, key=lambda row: -row[2])

    def slowest(self, count: int = 20) -> list[NodeProfile]:
        return sorted(self.nodes, key=lambda n: -n.real)[:count]

    def as_dict(self) -> dict[str, Any]:
        total = self.real or 1e-12
        return {
            "iterations": self.iterations,
            "warmup": self.warmup,
            "total": {"real": self.real, "user": self.user, "system": self.system},
            "bindings": self.bindings,
            "nodes": [{"id": n.node_id, "name": n.name, "op": n.op, "attributes": n.attributes,
                       "real": n.real, "user": n.user, "system": n.system, "share": n.real / total,
                       "flops": n.flops, "gflops": n.gflops, "bytes": n.bytes_moved,
                       "gbytes_per_second": n.gbytes_per_second} for n in self.nodes],
            "ops": [{"op": op, "count": count, "real": real, "share": real / total}
                    for op, count, real in self.by_op()],
        }


def _cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def profile_state_run(state, inputs) -> list[tuple[float, float, float]]:
    """Run ``state`` once, timing each step: [(real, user, system)] in step order."""
    plan = state.plan
    ordered, _ = state._ordered_inputs(inputs)
    bindings: dict[str, int] = {}
    values: list[Any] = [None] * plan.slot_count
    for slot, value in plan.constants.items():
        values[slot] = value
    for slot, name, fact, value in zip(plan.input_slots, plan.input_names, plan.input_facts, ordered):
        values[slot] = state._check_input(name, fact, value, bindings)
    state.bindings = bindings
    timings = []
    clock = time.perf_counter
    with np.errstate(all="ignore"):
        for evaluate, reads, writes, frees in state._program:
            user0, system0 = _cpu()
            start = clock()
            results = evaluate([values[i] for i in reads])
            real = clock() - start
            user1, system1 = _cpu()
            timings.append((real, user1 - user0, system1 - system0))
            for slot, result in zip(writes, results):
                values[slot] = result
            for slot in frees:
                values[slot] = None
    return timings


def _robust_mean(samples: list[float]) -> float:
    """Mean of the samples within the inter-quartile fences (outliers dropped)."""
    if len(samples) < 4:
        return statistics.fmean(samples)
    q1, _, q3 = statistics.quantiles(samples, n=4)
    spread = q3 - q1
    kept = [s for s in samples if q1 - 1.5 * spread <= s <= q3 + 1.5 * spread]
    return statistics.fmean(kept or samples)


def profile(model, inputs, warmup: int = 3, iterations: int = 20, progress=None) -> ProfileReport:
    """Profile a typed model on ``inputs``: ``warmup`` untimed runs, then ``iterations`` timed ones.

    ``progress(done, total)`` is called after each run if given.
    """
    if iterations < 1:
        raise TractileError("profiling needs at least one iteration")
    plan = model.plan()
    state = plan.state()
    total_runs = warmup + iterations
    for index in range(warmup):
        state.run(inputs)
        if progress:
            progress(index + 1, total_runs)
    per_step: list[list[tuple[float, float, float]]] = [[] for _ in plan.steps]
    for index in range(iterations):
        for step_index, timing in enumerate(profile_state_run(state, inputs)):
            per_step[step_index].append(timing)
        if progress:
            progress(warmup + index + 1, total_runs)
    nodes = []
    for step, samples in zip(plan.steps, per_step):
        node = step.node
        real = _robust_mean([s[0] for s in samples])
        user = _robust_mean([s[1] for s in samples])
        system = _robust_mean([s[2] for s in samples])
        nodes.append(NodeProfile(node.id, node.name, node.op.name, _attributes(node.op), real, user, system,
                                 _flops(model, node, state.bindings), _bytes_moved(model, node, state.bindings)))
    return ProfileReport(nodes, sum(n.real for n in nodes), sum(n.user for n in nodes),
                         sum(n.system for n in nodes), iterations, warmup, dict(state.bindings))


def _attributes(op) -> dict:
    try:
        return {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                for k, v in op.attributes().items()}
    except Exception:
        return {}


def _flops(model, node, bindings: dict[str, int]) -> float | None:
    from ..dim import eval_dim

    try:
        cost = node.op.cost(model.node_input_facts(node.id))
    except Exception:
        return None
    flops = cost.get("flops") if cost else None
    if flops is None:
        return None
    try:
        return float(eval_dim(flops, bindings))
    except TractileError:
        return None


def _bytes_moved(model, node, bindings: dict[str, int]) -> float | None:
    """Bytes of the node's tensor inputs and outputs (what it must at least read and write)."""
    from ..dim import eval_dim

    facts = [*model.node_input_facts(node.id), *(o.fact for o in node.outputs)]
    total = 0
    try:
        for fact in facts:
            if not fact.is_tensor or fact.dtype is None or fact.dtype.np.kind == "O":
                return None
            count = 1
            for dim in fact.shape:
                count *= eval_dim(dim, bindings)
            total += count * fact.dtype.np.itemsize
    except TractileError:
        return None
    return float(total)


__all__ = ["profile", "ProfileReport", "NodeProfile", "profile_state_run"]
