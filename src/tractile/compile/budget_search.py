"""The schedules :func:`~.budget.fit_ram_budget` chooses from, and what each costs.

A :class:`Schedule` is a set of chains computed in bands (:mod:`.bands`: rows recomputed) and
regions computed by rows (:mod:`.rows`: rows kept in line buffers). Candidates are built
around the step where memory peaks: every stretch of the run of row-able nodes through the
peak, at a few row heights. Each candidate gets two host-side estimates, without lowering the
model: its planned RAM (the bytes the current plan keeps live at every other step, and at the
new step the whole tensors it reads and writes, its buffers, and what lives across it) and the
instructions it adds (per step of a region or band, per byte shifted in a line buffer, per
multiply-accumulate recomputed). The search lowers and plans only the candidates whose
estimate fits, cheapest first.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph import OutletId
from ..ops.io import Const, Source
from .bands import Chain, band_table, chains_of
from .program import ARENA, Program
from .rows import Region, row_geometry, schedule_region

#: estimated instructions of one step of a region or one layer of a band (reading the step, the
#: kernel's call and set-up), of a byte moved in a line buffer, and of a multiply-accumulate
STEP_COST, MOVE_COST, MAC_COST = 150, 1, 4
#: output rows per step (regions) or per band (chains) tried, tallest (fewest steps) first
REGION_ROWS = (8, 4, 2, 1)
BAND_ROWS = (8, 4, 2, 1)
#: the longest chain in bands tried, in layers
MAX_CHAIN = 10


@dataclass(frozen=True)
class Schedule:
    """Chains in bands and regions by rows (disjoint sets of nodes), the nodes run in ``order``
    (empty: the model's evaluation order)."""

    chains: tuple[Chain, ...] = ()
    regions: tuple[Region, ...] = ()
    order: tuple[int, ...] = ()

    @property
    def parts(self) -> list[Chain | Region]:
        return [*self.chains, *self.regions]

    @property
    def nodes(self) -> set[int]:
        return {n for part in self.parts for n in part.nodes}

    def without(self, nodes: set[int]) -> Schedule:
        return Schedule(tuple(c for c in self.chains if not nodes & set(c.nodes)),
                        tuple(r for r in self.regions if not nodes & set(r.nodes)), self.order)

    def describe(self) -> list[dict]:
        return [*({"kind": "order", "nodes": list(self.order), "rows": 0} for _ in self.order[:1]),
                *({"kind": "bands", "nodes": list(c.nodes), "rows": c.rows} for c in self.chains),
                *({"kind": "rows", "nodes": list(r.nodes), "rows": r.rows} for r in self.regions)]


@dataclass
class Candidate:
    """A schedule with its estimated arena."""

    schedule: Schedule
    arena: int


def step_bytes(program: Program) -> list[int]:
    """Bytes of the arena in use at each step of a planned program (tensors sharing bytes once)."""
    spans = [(t.offset, t.offset + t.nbytes, t.first, t.last) for t in program.tensors
             if t.storage == ARENA and t.home is None and t.offset is not None and t.nbytes]
    result = []
    for step in range(len(program.nodes)):
        live = sorted((start, end) for start, end, first, last in spans if first <= step <= last)
        total, reach = 0, 0
        for start, end in live:
            if end > reach:
                total += end - max(start, reach)
                reach = end
        result.append(total)
    return result


def row_runs(model, order: tuple[int, ...] = ()) -> list[list[int]]:
    """Maximal runs of nodes that can run by rows, consecutive in ``order`` (default: the model's
    evaluation order)."""
    runs: list[list[int]] = [[]]
    for node_id in order or model.eval_order(model.outputs):
        node = model.nodes[node_id]
        if isinstance(node.op, (Source, Const)):
            continue
        if row_geometry(model, node) is None:
            runs.append([])
        else:
            runs[-1].append(node_id)
    return [run for run in runs if len(run) > 1]


def _macs(model, node_id: int) -> int:
    node = model.nodes[node_id]
    try:
        return int(node.op.cost([model.outlet_fact(o) for o in node.inputs])["flops"]) // 2
    except Exception:  # an op without a cost: no recomputation is charged for it
        return 0


class Estimator:
    """Estimates of candidates against one planned program (the current schedule's)."""

    def __init__(self, model, program: Program, costs: dict):
        self.model = model
        self.costs = costs
        self.program = program
        self.steps = step_bytes(program)
        self.step_of: dict[int, int] = {}
        for step, code in enumerate(program.nodes):
            for node in code.members or (code.node_id,):
                self.step_of[node] = step

    def arena(self, nodes: tuple[int, ...], buffers: int, whole_out: list[int], lag: int | None) -> int | None:
        """The arena when ``nodes`` (consecutive steps) become one step with ``buffers`` bytes of
        its own and the whole outputs ``whole_out`` (bytes), the first overlapping the first whole
        input ``lag`` bytes before it (None: no overlap)."""
        steps = sorted({self.step_of[n] for n in nodes if n in self.step_of})
        if not steps or steps[-1] - steps[0] + 1 != len(steps):
            return None
        first, last = steps[0], steps[-1]
        outside = max([b for k, b in enumerate(self.steps) if not first <= k <= last], default=0)
        produced = {id(t) for code in self.program.nodes[first:last + 1] for t in (*code.outputs, *code.scratch)}
        live = [t for t in self.program.tensors if t.storage == ARENA and t.home is None and t.nbytes
                and t.first <= first <= t.last and id(t) not in produced]
        reads = sorted((t.offset, t.offset + t.nbytes) for t in live if t.offset is not None)
        total, reach = 0, 0
        for start, end in reads:
            if end > reach:
                total += end - max(start, reach)
                reach = end
        saving = 0
        entering = [t for t in live if any(t in code.inputs for code in self.program.nodes[first:last + 1])]
        if lag is not None and whole_out and entering:
            x = max(entering, key=lambda t: t.nbytes).nbytes
            saving = max(0, x + whole_out[0] - max(whole_out[0], lag + x))
        return max(outside, total + sum(whole_out) + buffers - saving)

    def region(self, region: Region) -> Candidate | None:
        try:
            schedule = schedule_region(self.model, region)
        except ValueError:
            return None
        whole_out = [schedule.tensors[la.output].row_bytes * schedule.tensors[la.output].height
                     for la in schedule.layers if schedule.tensors[la.output].whole and la.geometry.kind != "reduce"
                     and la.output not in self.model.outputs]
        reduce_bytes = sum(8 * int(np.prod(self.model.nodes[la.node].outputs[0].fact.shape))
                           for la in schedule.layers if la.geometry.kind == "reduce")
        arena = self.arena(region.nodes, schedule.buffer_bytes + reduce_bytes, whole_out, schedule.lag)
        if arena is None:
            return None
        moved = sum(step.shift[1] * schedule.tensors[schedule.layers[step.layer].output].row_bytes
                    for step in schedule.steps if step.shift)
        self.costs[region] = len(schedule.steps) * STEP_COST + moved * MOVE_COST
        return Candidate(Schedule(regions=(region,)), arena)

    def chain(self, chain: Chain) -> Candidate | None:
        figures = chain_figures(self.model, chain)
        if figures is None:
            return None
        buffers, lag, out_bytes, recomputed, bands = figures
        in_arena = OutletId(chain.nodes[-1], 0) not in self.model.outputs
        arena = self.arena(chain.nodes, buffers, [out_bytes] if in_arena else [], lag)
        if arena is None:
            return None
        self.costs[chain] = recomputed * MAC_COST + bands * len(chain.nodes) * STEP_COST
        return Candidate(Schedule(chains=(chain,)), arena)


def chain_figures(model, chain: Chain) -> tuple[int, int, int, int, int] | None:
    """(band buffer bytes, lag of the output before the input, output bytes, multiply-accumulates
    recomputed, bands) of a chain in bands, from the facts alone."""
    layers, row_bytes, row_macs = [], [], []
    for node_id in chain.nodes:
        node = model.nodes[node_id]
        geometry = row_geometry(model, node)
        if geometry is None or geometry.kind != "window":
            return None
        x = model.outlet_fact(node.inputs[0]).shape
        y = node.outputs[0].fact
        in_h, out_h = int(x[1]), int(y.shape[1])
        layers.append((in_h, out_h, geometry.stride, geometry.dilation, geometry.kernel, geometry.top))
        row_bytes.append((int(x[2]) * int(x[3]) * model.outlet_fact(node.inputs[0]).dtype.np.itemsize,
                          int(y.shape[2]) * int(y.shape[3]) * y.dtype.np.itemsize))
        row_macs.append(_macs(model, node_id) // max(out_h, 1))
    table = band_table(layers, chain.rows)
    sizes = [0, 0]
    for index in range(len(layers) - 1):
        sizes[index % 2] = max(sizes[index % 2], int(table[:, 5 * index + 3].max()) * row_bytes[index][1])
    recomputed = sum(int(table[:, 5 * i + 3].sum() - layers[i][1]) * row_macs[i] for i in range(len(layers)))
    last = 5 * (len(layers) - 1)
    lag = 0
    for band in range(len(table)):
        written = int(table[band, last + 2] + table[band, last + 3]) * row_bytes[-1][1]
        needed = int(table[band + 1, 0]) * row_bytes[0][0] if band + 1 < len(table) else layers[0][0] * row_bytes[0][0]
        lag = max(lag, written - needed)
    return sum(sizes), lag, layers[-1][1] * row_bytes[-1][1], recomputed, len(table)


def candidates(model, program: Program, current: Schedule, costs: dict) -> list[Candidate]:
    """Schedules that change ``current`` around the step of ``program`` where memory peaks (the
    added instructions of every part they hold land in ``costs``)."""
    estimator = Estimator(model, program, costs)
    peak = int(np.argmax(estimator.steps)) if estimator.steps else 0
    code = program.nodes[peak]
    peak_nodes = set(code.members or (code.node_id,))
    found: list[Candidate] = []
    for runs, limit, make in ((row_runs(model, current.order), None, lambda n, r: estimator.region(Region(n, r))),
                              (chains_of(model), MAX_CHAIN, lambda n, r: estimator.chain(Chain(n, r)))):
        for run in runs:
            at = [i for i, n in enumerate(run) if n in peak_nodes]
            if not at:
                continue
            for start in range(0, min(at) + 1):
                for end in range(max(max(at), start + 1), min(start + (limit or len(run)), len(run))):
                    nodes = tuple(run[start:end + 1])
                    parts = [p for p in current.parts if set(p.nodes) & set(nodes)]
                    if any(not set(p.nodes) <= set(nodes) for p in parts):
                        continue
                    rest = current.without(set(nodes))
                    for rows in (REGION_ROWS if limit is None else BAND_ROWS):
                        candidate = make(nodes, rows)
                        if candidate is not None:
                            found.append(Candidate(Schedule(rest.chains + candidate.schedule.chains,
                                                            rest.regions + candidate.schedule.regions, rest.order),
                                                   candidate.arena))
    return found


def schedule_cost(schedule: Schedule, costs: dict) -> int:
    """Estimated instructions ``schedule`` adds to the model's."""
    return sum(costs.get(part, 0) for part in schedule.parts)


def memory_order(model) -> tuple[int, ...]:
    """An evaluation order with independent branches reordered: depth first, as the model's, but
    at each node the inputs whose branch needs the most memory beyond what it leaves (peak less
    result, Sethi and Ullman's rule, shared inputs counted in each branch) are computed first, so
    that a branch's large intermediates are not live beside another branch's result."""
    result: dict[int, int] = {}
    peak: dict[int, int] = {}
    firsts: dict[int, list[int]] = {}

    def nbytes(node_id: int) -> int:
        total = 0
        for outlet in model.nodes[node_id].outputs:
            fact, shape = outlet.fact, outlet.fact.concrete_shape()
            if fact.is_tensor and fact.konst is None and shape is not None:
                total += int(np.prod([int(d) for d in shape])) * fact.dtype.np.itemsize
        return total

    for node_id in model.eval_order(model.outputs):
        kids = list(dict.fromkeys(o.node for o in model.nodes[node_id].inputs))
        kids.sort(key=lambda k: result[k] - peak[k])
        held, top = 0, 0
        for kid in kids:
            top = max(top, held + peak[kid])
            held += result[kid]
        result[node_id] = nbytes(node_id)
        peak[node_id] = max(top, held + result[node_id])
        firsts[node_id] = kids
    order: list[int] = []
    done: set[int] = set()
    for target in [o.node for o in model.outputs] + [o.node for o in model.inputs]:
        stack = [(target, 0)]
        while stack:
            node_id, position = stack.pop()
            if node_id in done:
                continue
            kids = firsts[node_id]
            if position < len(kids):
                stack.append((node_id, position + 1))
                if kids[position] not in done:
                    stack.append((kids[position], 0))
                continue
            done.add(node_id)
            order.append(node_id)
    return tuple(order)
