"""A RAM budget (``tractile compile --max-ram``): the planned RAM of a compiled model, layers
split into bands of rows until it fits, and a clear refusal, naming where memory peaks, when
even the smallest plan found is over budget.

The planner already overlaps layers as finely as their kernels allow: convolutions write their
outputs row by row over the input rows they have consumed, pointwise ones pixel by pixel, and
element-wise ops in place. When that is not enough, :func:`fit_ram_budget` computes chains of
convolutions around the peak in bands of output rows (:mod:`.bands`, MCUNet's patch-based
inference by rows), trying chains from the shortest and bands from the tallest (the least
recomputation first), chain after chain while the peak moves elsewhere."""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import TractileError, UnsupportedOpError
from .bands import Chain, chains_of
from .lower import lower
from .memory import plan_memory
from .program import ARENA
from .target import Target, find_target

#: output rows per band tried, tallest (least recomputation) first
BAND_ROWS = (8, 4, 2, 1)
#: the longest chain tried, in layers
MAX_CHAIN = 10
#: chains added one after another while the budget is not met
MAX_CHAINS = 3


def planned_ram(report: dict) -> int:
    """Bytes of RAM the model needs besides its stack: the context (arena and state) and the
    input and output buffers."""
    return report["arena_bytes"] + report["state_bytes"] + report["io_bytes"]


def peak_step(program) -> tuple[int, int]:
    """(index of the node where the most arena bytes are live, those bytes)."""
    best = (0, 0)
    for step in range(len(program.nodes)):
        live = sum(t.nbytes for t in program.tensors
                   if t.storage == ARENA and t.home is None and t.first <= step <= t.last)
        if live > best[1]:
            best = (step, live)
    return best


def check_ram_budget(source, budget: int) -> None:
    """Raise a TractileError when the model's planned RAM exceeds ``budget`` bytes."""
    report = source.report
    needed = planned_ram(report)
    if needed <= budget:
        return
    step, live = peak_step(source.program)
    node = source.program.nodes[step] if source.program.nodes else None
    where = (f'; most memory is live at node #{node.node_id} "{node.name}" ({node.op}): {live} B of tensors '
             "before overlapping") if node else ""
    banded = "".join(f"; nodes {', '.join(f'#{n}' for n in chain.nodes)} in bands of {chain.rows} rows"
                     for chain in source.program.chains)
    raise TractileError(
        f"{source.name} needs at least {needed} B of RAM (arena {report['arena_bytes']} B with every layer "
        f"overlapping its inputs where its kernel allows{banded}, state {report['state_bytes']} B, inputs and "
        f"outputs {report['io_bytes']} B), over the budget of {budget} B{where}. Raise --max-ram to {needed} or "
        "more, or shrink that layer (fewer channels, a stride earlier)")


def fit_ram_budget(typed, budget: int, name: str = "model", target="host", **options):
    """The generated source of ``typed`` (optimized, concrete shapes) within ``budget`` bytes of
    planned RAM (:func:`planned_ram`), with chains of layers in bands when needed; a
    TractileError naming the smallest RAM reached otherwise. ``options`` go to ``generate``."""
    from . import generate

    target = find_target(target)
    best = generate(typed, name, target, optimize=False, **options)
    ram = planned_ram(best.report)
    chains: list[Chain] = []
    for _ in range(MAX_CHAINS):
        if ram <= budget:
            break
        found = _next_chain(typed, name, target, best.program if not chains else lower(typed, name, target, chains),
                            chains, budget)
        if found is None or found[1] >= ram:
            break
        chains, ram = found
    if chains:
        best = generate(typed, name, target, optimize=False, chains=chains, **options)
    check_ram_budget(best, budget)
    return best


def _ram(typed, name: str, target: Target, chains: Sequence[Chain]) -> int | None:
    """The planned RAM with ``chains`` in bands (lowered and planned, not rendered), or None
    when a chain cannot run in bands."""
    try:
        program = lower(typed, name, target, chains)
    except UnsupportedOpError:
        return None
    plan = plan_memory(program, target.alignment)
    io = sum(t.nbytes for t in program.inputs) + sum(t.nbytes for t in program.outputs)
    return plan.arena_bytes + program.state_bytes + io


def _next_chain(typed, name: str, target: Target, program, chains: list[Chain], budget: int):
    """(chains, RAM) with one more chain through the node where memory peaks in ``program``:
    the first that meets the budget, else the one with the least RAM; None if none helps."""
    plan_memory(program, target.alignment)
    step, _ = peak_step(program)
    peak = program.nodes[step].node_id
    taken = {node for chain in chains for node in chain.nodes}
    best = None
    for run in chains_of(typed):
        if peak not in run or peak in taken:
            continue
        at = run.index(peak)
        low = at
        while low > 0 and run[low - 1] not in taken:
            low -= 1
        high = at
        while high + 1 < len(run) and run[high + 1] not in taken:
            high += 1
        for start in sorted({low, at}):
            for end in range(max(at, start + 1), min(start + MAX_CHAIN, high + 1)):
                previous = None
                for rows in BAND_ROWS:
                    trial = [*chains, Chain(tuple(run[start:end + 1]), rows)]
                    ram = _ram(typed, name, target, trial)
                    if ram is None:
                        break
                    if ram <= budget:
                        return trial, ram
                    if best is None or ram < best[1]:
                        best = (trial, ram)
                    if ram == previous:  # the bands are not what peaks: thinner ones will not help
                        break
                    previous = ram
    return best
