"""Execution plan: evaluation order, value slots and each value's last use."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..graph import OutletId
from ..ops.io import Const, Source


class Step:
    """One node to evaluate: its op, the slots it reads, the slots it writes, the slots to free."""

    __slots__ = ("node", "op", "inputs", "outputs", "frees")

    def __init__(self, node, op, inputs: tuple[int, ...], outputs: tuple[int, ...]):
        self.node = node
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.frees: tuple[int, ...] = ()


class SimplePlan:
    """What a state needs to run a typed model: built once, shared by any number of states.

    Every outlet the outputs need gets a slot. Constants are stored once in the
    plan; each other value is dropped right after its last reader ran.
    """

    def __init__(self, model, outputs: Sequence[OutletId] | None = None):
        self.model = model
        self.outputs = list(model.outputs if outputs is None else outputs)
        order = model.eval_order(self.outputs)
        slot_of: dict[OutletId, int] = {}
        self.constants: dict[int, np.ndarray] = {}
        self.steps: list[Step] = []
        for node_id in order:
            node = model.nodes[node_id]
            for slot in range(len(node.outputs)):
                slot_of[OutletId(node_id, slot)] = len(slot_of)
            if isinstance(node.op, Source):
                continue
            if isinstance(node.op, Const):
                value = node.op.value
                value.flags.writeable = False
                self.constants[slot_of[OutletId(node_id, 0)]] = value
                continue
            reads = tuple(slot_of[o] for o in node.inputs)
            writes = tuple(slot_of[OutletId(node_id, s)] for s in range(len(node.outputs)))
            op = node.op.prepared([model.outlet_fact(o) for o in node.inputs])
            self.steps.append(Step(node, op, reads, writes))
        self.slot_count = len(slot_of)
        self.slot_of = slot_of
        missing = [o for o in model.inputs if o not in slot_of]
        for outlet in missing:
            slot_of[outlet] = self.slot_count
            self.slot_count += 1
        self.input_slots = tuple(slot_of[o] for o in model.inputs)
        self.output_slots = tuple(slot_of[o] for o in self.outputs)
        self.input_facts = [model.outlet_fact(o) for o in model.inputs]
        self.input_names = model.input_names()
        self.output_names = [model.outlet_label(o) for o in self.outputs]
        self._compute_frees()
        self.has_state = any(not step.op.is_stateless for step in self.steps)
        #: how states group the steps (runtime/fused.py), computed by the first state
        self.fused_runs: list | None = None

    def _compute_frees(self) -> None:
        keep = set(self.output_slots) | set(self.constants)
        last_reader: dict[int, int] = {}
        for index, step in enumerate(self.steps):
            for slot in step.inputs:
                last_reader[slot] = index
        frees: dict[int, list[int]] = {}
        for slot, index in last_reader.items():
            if slot not in keep:
                frees.setdefault(index, []).append(slot)
        for index, step in enumerate(self.steps):
            unread = [s for s in step.outputs if s not in last_reader and s not in keep]
            step.frees = tuple(frees.get(index, [])) + tuple(unread)

    def state(self, check_facts: bool = False):
        """A new run state (one per thread or per stream)."""
        from .state import SimpleState

        return SimpleState(self, check_facts=check_facts)

    def run(self, inputs, feed=None):
        return self.state().run(inputs, feed)

    def last_use(self) -> dict[OutletId, int]:
        """For each wire, the index of the last step that reads it (for tools and tests)."""
        by_slot = {slot: outlet for outlet, slot in self.slot_of.items()}
        result: dict[OutletId, int] = {}
        for index, step in enumerate(self.steps):
            for slot in step.inputs:
                result[by_slot[slot]] = index
        return result

    def __repr__(self) -> str:
        return f"SimplePlan({len(self.steps)} steps, {self.slot_count} slots)"


def direct_call(plan: SimplePlan, op_states: dict):
    """For a plan that is one node reading inputs and giving every output once, whose state
    (``op_states[0]``) offers ``direct_call`` (a compiled segment): that node's call without the
    plan, and where its inputs and outputs are in the plan's order (None: the same order)."""
    if len(plan.steps) != 1 or 0 not in op_states:
        return None
    step = plan.steps[0]
    if not set(step.inputs) <= set(plan.input_slots) or len(set(plan.input_slots)) != len(plan.input_slots) \
            or sorted(step.outputs) != sorted(set(plan.output_slots)) or len(plan.output_slots) != len(step.outputs):
        return None
    offer = getattr(op_states[0], "direct_call", None)
    reads = [plan.input_slots.index(slot) for slot in step.inputs]
    call = None if offer is None else offer([plan.input_facts[i] for i in reads])
    if call is None:
        return None
    gives = [step.outputs.index(slot) for slot in plan.output_slots]
    return (call, None if reads == list(range(len(plan.input_slots))) else reads,
            None if gives == list(range(len(gives))) else gives)
