"""A RAM budget (``tractile compile --max-ram``): the planned RAM of a compiled model, layers
computed a few rows at a time until it fits, and a clear refusal, naming where memory peaks,
when even the smallest plan found is over budget.

The planner already overlaps layers as finely as their kernels allow: convolutions write their
outputs row by row over the input rows they have consumed, pointwise ones pixel by pixel, and
element-wise ops in place. When that is not enough, :func:`fit_ram_budget` searches schedules
around the step where memory peaks (:mod:`.budget_search`): regions of the graph computed by rows
with line buffers (:mod:`.rows`: residual additions, branches and global average pools
included, each row computed once) and chains of convolutions in bands of rows (:mod:`.bands`:
the overlapping rows recomputed). Of the schedules that fit, it takes the one estimated to
add the fewest instructions; when none fits, the one with the least RAM, and searches again
around its new peak.
"""
from __future__ import annotations

from ..errors import TractileError, UnsupportedOpError
from .budget_search import Candidate, Schedule, candidates, memory_order, schedule_cost
from .lower import lower
from .ops.conv_gemm import lower_within_arena
from .program import ARENA
from .target import Target, find_target

#: rounds of the search (schedules built on the previous round's least RAM)
MAX_ROUNDS = 3
#: candidates lowered and planned per round, at most
MAX_TRIALS = 12


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
    split = "".join(f"; nodes {', '.join(f'#{n}' for n in chain.nodes)} in bands of {chain.rows} rows"
                    for chain in source.program.chains)
    split += "".join(f"; nodes {', '.join(f'#{n}' for n in region.nodes)} by rows, {region.rows} a step"
                     for region in source.program.regions)
    raise TractileError(
        f"{source.name} needs at least {needed} B of RAM (arena {report['arena_bytes']} B with every layer "
        f"overlapping its inputs where its kernel allows{split}, state {report['state_bytes']} B, inputs and "
        f"outputs {report['io_bytes']} B), over the budget of {budget} B{where}. Raise --max-ram to {needed} or "
        "more, or shrink that layer (fewer channels, a stride earlier)")


def fit_ram_budget(typed, budget: int, name: str = "model", target="host", inputs_in_arena: bool = False,
                   **options):
    """The generated source of ``typed`` (optimized, concrete shapes) within ``budget`` bytes of
    planned RAM (:func:`planned_ram`), with regions by rows or chains in bands when needed; a
    TractileError naming the smallest RAM reached otherwise. ``options`` go to ``generate``.
    The report's ``budget`` entry says what was chosen and its estimated added instructions."""
    from . import generate

    target = find_target(target)
    base = generate(typed, name, target, optimize=False, inputs_in_arena=inputs_in_arena, **options)
    unconstrained = planned_ram(base.report)
    search = _Search(typed, name, target, inputs_in_arena, base.report["state_bytes"] + base.report["io_bytes"])
    schedule = Schedule() if unconstrained <= budget else search.run(budget, unconstrained)
    source = base if schedule == Schedule() else generate(
        typed, name, target, optimize=False, inputs_in_arena=inputs_in_arena, chains=schedule.chains,
        regions=schedule.regions, order=schedule.order, **options)
    source.report["budget"] = {"max_ram": budget, "unconstrained_ram": unconstrained,
                               "schedule": schedule.describe(),
                               "estimated_added_instructions": schedule_cost(schedule, search.costs)}
    check_ram_budget(source, budget)
    return source


class _Search:
    """Rounds of candidates (:func:`~.budget_search.candidates`), each round around the peak of
    the best schedule so far."""

    def __init__(self, typed, name: str, target: Target, inputs_in_arena: bool, fixed: int):
        self.typed, self.name, self.target = typed, name, target
        self.inputs_in_arena, self.fixed = inputs_in_arena, fixed
        self.costs: dict = {}

    def planned(self, schedule: Schedule):
        program, plan = lower_within_arena(lambda: lower(self.typed, self.name, self.target, schedule.chains,
                                                         self.inputs_in_arena, schedule.regions, schedule.order),
                                           self.target.alignment)
        return program, plan.arena_bytes + self.fixed

    def run(self, budget: int, unconstrained: int) -> Schedule:
        best, best_ram = Schedule(), unconstrained
        program, _ = self.planned(best)
        reordered = Schedule(order=memory_order(self.typed))
        if reordered.order != tuple(self.typed.eval_order(self.typed.outputs)):
            trial_program, ram = self.planned(reordered)
            if ram <= budget:
                return reordered
            if ram < best_ram:
                best, best_ram, program = reordered, ram, trial_program
        for _ in range(MAX_ROUNDS):
            found = candidates(self.typed, program, best, self.costs)
            fitting = sorted((c for c in found if c.arena + self.fixed <= budget),
                             key=lambda c: (schedule_cost(c.schedule, self.costs), c.arena))
            smallest = sorted(found, key=lambda c: (c.arena, schedule_cost(c.schedule, self.costs)))
            round_best: tuple[Candidate, int, object] | None = None
            for candidate in _unique([*fitting[:MAX_TRIALS], *smallest[:MAX_TRIALS // 3]]):
                try:
                    trial_program, ram = self.planned(candidate.schedule)
                except UnsupportedOpError:
                    continue
                if ram <= budget:
                    return candidate.schedule
                if round_best is None or ram < round_best[1]:
                    round_best = (candidate, ram, trial_program)
            if round_best is None or round_best[1] >= best_ram:
                break
            best, best_ram, program = round_best[0].schedule, round_best[1], round_best[2]
        return best


def _unique(found: list[Candidate]) -> list[Candidate]:
    seen, result = set(), []
    for candidate in found:
        if candidate.schedule not in seen:
            seen.add(candidate.schedule)
            result.append(candidate)
    return result
