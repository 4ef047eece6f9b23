"""A RAM budget (``tractile compile --max-ram``): the planned RAM of a compiled model, and a
clear refusal, naming where memory peaks, when even the smallest plan is over budget.

The planner already splits layers as finely as its kernels allow: convolutions write their
outputs row by row over the input rows they have consumed, pointwise ones pixel by pixel, and
element-wise ops in place; the arena it returns is the smallest it found."""
from __future__ import annotations

from ..errors import TractileError
from .program import ARENA


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
    raise TractileError(
        f"{source.name} needs at least {needed} B of RAM (arena {report['arena_bytes']} B with every layer "
        f"overlapping its inputs where its kernel allows, state {report['state_bytes']} B, inputs and outputs "
        f"{report['io_bytes']} B), over the budget of {budget} B{where}. Raise --max-ram to {needed} or more, or "
        "shrink that layer (fewer channels, a stride earlier)")
