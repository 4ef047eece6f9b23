"""Static memory: lifetimes, shared storage for aliases, in-place overlaps, arena offsets.

Every value the compiled model computes lives in one arena at an offset fixed before the
program runs. The plan is built in three steps:

1. **Aliases** (Reshape and kin) share their source's bytes: tensors are grouped, a group
   lives from its first definition to its last read. A group holds at most one pinned
   storage (a model input, output or constant); aliases that would join two are copies.
   *Views* (a convolution writing its channels of a Concat's output in place) join the
   Concat's output first, spanning all of its bytes from their own definition on.
2. **Overlaps**: an op that can write its output over an input that dies at the op
   (element-wise ops, activations, depthwise convolutions channel by channel, 1×1
   convolutions pixel by pixel) merges the two groups into one *block* with the input at a
   fixed distance from the output.
3. **Offsets**: blocks are placed by greedy-by-size (TFLite Micro's planner: largest
   first, each at the lowest aligned offset free during its lifetime), also by other
   orders, with and without the overlaps; the smallest arena wins, so the plan is never
   worse than TFLite Micro's on the same lifetimes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .program import ARENA, CTensor, Program


@dataclass(eq=False)
class Group:
    """Tensors sharing bytes at relative offsets (aliases at 0; overlapped inputs elsewhere)."""

    members: dict[int, tuple[CTensor, int]] = field(default_factory=dict)
    storage: str = ARENA
    pinned: CTensor | None = None

    @property
    def size(self) -> int:
        return max((offset + span(t) for t, offset in self.members.values()), default=0)

    @property
    def anchored(self) -> bool:
        """Bound to one storage: pinned, holding a model input planned in the arena, or views (which
        need the arena: the C names a view by its offset)."""
        return self.pinned is not None or any(t.arena_input or t.view for t, _ in self.members.values())

    @property
    def first(self) -> int:
        return min(t.first for t, _ in self.members.values())

    @property
    def last(self) -> int:
        return max(t.last for t, _ in self.members.values())


class Groups:
    """Union-find of tensors into groups with relative offsets."""

    def __init__(self, tensors: list[CTensor]):
        self.group_of: dict[int, Group] = {}
        for tensor in tensors:
            group = Group({id(tensor): (tensor, 0)}, tensor.storage, None if tensor.storage == ARENA else tensor)
            self.group_of[id(tensor)] = group

    def of(self, tensor: CTensor) -> Group:
        return self.group_of[id(tensor)]

    def offset_in_group(self, tensor: CTensor) -> int:
        return self.of(tensor).members[id(tensor)][1]

    def merge(self, keep: Group, other: Group, shift: int) -> Group:
        """Move ``other``'s members into ``keep`` at ``shift`` more bytes (negative shifts move ``keep``)."""
        if shift < 0:
            keep.members = {k: (t, o - shift) for k, (t, o) in keep.members.items()}
            shift = 0
        for key, (tensor, offset) in other.members.items():
            keep.members[key] = (tensor, offset + shift)
            self.group_of[key] = keep
        if other.pinned is not None:
            keep.pinned, keep.storage = other.pinned, other.storage
        return keep

    def distinct(self) -> list[Group]:
        seen: dict[int, Group] = {}
        for group in self.group_of.values():
            seen.setdefault(id(group), group)
        return list(seen.values())


@dataclass
class MemoryPlan:
    """The outcome: arena size, each arena tensor's offset, and the figures of the report."""

    arena_bytes: int
    lower_bound_bytes: int
    no_reuse_bytes: int
    overlaps_used: int
    strategy: str
    in_place: set = field(default_factory=set)


def align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def span(tensor: CTensor) -> int:
    """The bytes a tensor occupies from its place in its group (a view: all of its Concat's)."""
    return tensor.view[1] if tensor.view else tensor.nbytes


def share_aliases(program: Program) -> Groups:
    """Step 1: group aliases; those that would join two pinned storages stay copies."""
    groups = Groups(program.tensors)
    for code in program.nodes:
        for view in code.views:
            target, source = groups.of(view.target), groups.of(view.source)
            assert target is not source and target.pinned is None and source.pinned is None, view.target.var
            groups.merge(source, target, groups.offset_in_group(view.source) - groups.offset_in_group(view.target))
            view.shared = True
    for code in program.nodes:
        for alias in code.aliases:
            target, source = groups.of(alias.target), groups.of(alias.source)
            if target is source:
                alias.shared = True
                continue
            if target.anchored and source.anchored:
                alias.shared = False
                continue
            groups.merge(source, target, groups.offset_in_group(alias.source) - groups.offset_in_group(alias.target))
            alias.shared = True
    return groups


def apply_overlaps(program: Program, groups: Groups, alignment: int, chosen: set[int] | None = None) -> set[int]:
    """Step 2: merge each op's output with an input that dies there, when the op allows it
    (only the overlaps whose ``id`` is in ``chosen``, when given)."""
    used: set[int] = set()
    for step, code in enumerate(program.nodes):
        for overlap in code.overlaps:
            if chosen is not None and id(overlap) not in chosen:
                continue
            out_group, in_group = groups.of(overlap.output), groups.of(overlap.input)
            if out_group is in_group or out_group.storage != ARENA or in_group.storage != ARENA:
                continue
            if overlap.output.view or overlap.input.view:
                continue
            if in_group.last > step or out_group.first < step:
                continue
            others = [t for t in code.inputs if t is not overlap.input]
            if any(groups.of(t) is in_group for t in others):
                continue
            lag = align_up(overlap.lag, alignment)  # a longer lead is as safe: the output only trails further
            shift = groups.offset_in_group(overlap.output) + lag - groups.offset_in_group(overlap.input)
            groups.merge(out_group, in_group, shift)
            used.add(id(code))
    return used


def greedy_offsets(blocks: list[tuple[int, int, int]], alignment: int, order: str) -> tuple[list[int], int]:
    """Place ``(size, first, last)`` blocks: each at the lowest aligned offset free over its lifetime.

    ``order`` "size" is TFLite Micro's greedy-by-size; "area" weighs size by lifetime;
    "first" places in order of definition.
    """
    return place_groups([[(0, size, first, last)] for size, first, last in blocks], alignment, order)


Member = tuple[int, int, int, int]  # (offset in the group, bytes, first step, last step)


def place_groups(groups: list[list[Member]], alignment: int, order: str) -> tuple[list[int], int]:
    """Place groups of tensors at fixed relative offsets, greedily as :func:`greedy_offsets`
    does, but checking conflicts tensor by tensor: a group whose members live at different
    times (a chain of in-place layers) packs as tightly as its members allow."""
    sizes = [max((rel + size for rel, size, _, _ in members), default=0) for members in groups]
    firsts = [min((m[2] for m in members), default=0) for members in groups]
    keys = {
        "size": lambda i: (-sizes[i], firsts[i]),
        "area": lambda i: (-sum(m[1] * (m[3] - m[2] + 1) for m in groups[i]), -sizes[i]),
        "first": lambda i: (firsts[i], -sizes[i]),
    }
    offsets = [0] * len(groups)
    placed: list[tuple[int, int, int, int]] = []  # (start, end, first, last) of placed tensors
    for index in sorted(range(len(groups)), key=keys[order]):
        members = groups[index]
        clashes = [(start - rel - size, end - rel) for rel, size, first, last in members
                   for start, end, p_first, p_last in placed
                   if p_first <= last and first <= p_last and size and end > start]
        candidates = sorted({0, *(align_up(high, alignment) for _, high in clashes if high > 0)})
        for candidate in candidates:
            if all(not (low < candidate < high) for low, high in clashes):
                break
        offsets[index] = candidate
        placed.extend((candidate + rel, candidate + rel + size, first, last) for rel, size, first, last in members)
    total = max((offsets[i] + sizes[i] for i in range(len(groups))), default=0)
    return offsets, total


def plan_memory(program: Program, alignment: int) -> MemoryPlan:
    """Plan the arena of ``program`` (sets every arena tensor's ``offset``)."""
    base = share_aliases(program)
    arena_groups = [g for g in base.distinct() if g.storage == ARENA and g.members]
    lower_bound = _lower_bound(arena_groups, len(program.nodes))
    no_reuse = sum(align_up(g.size, alignment) for g in arena_groups)

    candidates = sorted((o for code in program.nodes for o in code.overlaps),
                        key=lambda o: -min(o.input.nbytes, o.output.nbytes))[:MAX_OVERLAP_TRIALS]
    best = min(_placement(program, alignment, set()), _placement(program, alignment, {id(o) for o in candidates}),
               key=lambda placement: placement[0])
    current, chosen = _placement(program, alignment, set()), set[int]()
    for _ in range(2):
        for overlap in candidates:
            if id(overlap) in chosen:
                continue
            trial = _placement(program, alignment, chosen | {id(overlap)})
            if trial[0] <= current[0]:
                current, chosen = trial, chosen | {id(overlap)}
    if current[0] < best[0]:
        best = current
    total, blocks, offsets, used, strategy = best
    for group, offset in zip(blocks, offsets):
        for tensor, relative in group.members.values():
            tensor.offset = offset + relative + (tensor.view[0] if tensor.view else 0)
    for group in share_aliases(program).distinct():
        if group.pinned is not None:
            for tensor, _ in group.members.values():
                if tensor is not group.pinned:
                    tensor.home = group.pinned
    return MemoryPlan(total, lower_bound, no_reuse, len(used), strategy, used)


#: overlaps tried one by one (largest first), kept when the arena does not grow (chained
#: overlaps can also grow a block); the result is compared with none and with all of them
MAX_OVERLAP_TRIALS = 64


def _placement(program: Program, alignment: int, chosen: set[int]) -> tuple:
    """The smallest placement over the greedy orders with the ``chosen`` overlaps applied."""
    groups = share_aliases(program)
    used = apply_overlaps(program, groups, alignment, chosen) if chosen else set()
    blocks = [g for g in groups.distinct() if g.storage == ARENA and g.members]
    shapes = [[(rel, align_up(span(t), alignment), t.first, t.last) for t, rel in g.members.values()]
              for g in blocks]
    best: tuple | None = None
    for order in ("size", "area", "first"):
        offsets, total = place_groups(shapes, alignment, order)
        if best is None or total < best[0]:
            best = (total, blocks, offsets, used, f"greedy by {order}" + (", in place" if used else ""))
    assert best is not None
    return best


def _lower_bound(groups: list[Group], steps: int) -> int:
    """The largest sum of bytes live at one step (no overlap of live values allowed)."""
    peak = 0
    for step in range(max(steps, 1)):
        live = sum(g.size for g in groups if g.first <= step <= g.last)
        peak = max(peak, live)
    return peak
