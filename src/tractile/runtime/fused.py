"""The run program: plan steps as a state executes them, runs of element-wise steps fused.

A run of unary element-wise steps (``Abs -> Neg -> Tanh``, an activation after an
activation), each reading only the previous one's value and that value read by nobody else,
executes as one program entry: the first op computes a fresh array and the next ones apply
their NumPy kernel to it in place. The plan (``plan.steps``: one step per node, which
profiles, fact checks and tools use) is unchanged; only the order of execution of the fused
steps moves them next to each other, which their dependencies allow. Results are the same
arrays bit for bit: each in-place kernel is the op's own computation.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..fact import TENSOR
from ..ops.activations import Activation, Tanh, fusable
from ..ops.unary import UnaryOp

#: (evaluate, input slots, output slots, slots to free after it, plan step indices it runs)
Entry = tuple[Callable, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def inplace_kernel(op, dtype: np.dtype | None) -> Callable | None:
    """A function ``kernel(y, y)`` applying ``op`` in place to an f32/f64 array ``y`` the caller
    owns and returning it (a ufunc where there is one: the cheapest call); None when ``op``
    has none for ``dtype``."""
    if dtype not in _FLOATS or not isinstance(op, UnaryOp) or type(op).output_type is not None:
        return None
    if isinstance(op, Tanh):
        return np.tanh
    if isinstance(op, Activation) and fusable(op):
        apply = op.apply_inplace
        return lambda y, _: apply(y)
    return getattr(type(op), "ufunc", None)


def _tensor_dtype(fact) -> np.dtype | None:
    if fact is None or getattr(fact, "kind", None) != TENSOR or fact.dtype is None:
        return None
    return np.dtype(fact.dtype.np)


def slot_dtypes(plan) -> dict[int, np.dtype | None]:
    """The NumPy datum type of each slot whose fact is a tensor's."""
    model = plan.model
    dtypes = {slot: _tensor_dtype(model.outlet_fact(outlet)) for outlet, slot in plan.slot_of.items()}
    for slot, value in plan.constants.items():
        dtypes[slot] = value.dtype if isinstance(value, np.ndarray) else None
    return dtypes


def fused_runs(plan, dtypes: dict[int, np.dtype | None]) -> list[list[int]]:
    """Plan step indices grouped in execution order: each group one step, or a run of unary
    element-wise steps of one f32/f64 type where each reads the previous one's only value,
    which nobody else reads."""
    steps = plan.steps
    readers: dict[int, int] = {}
    for step in steps:
        for slot in step.inputs:
            readers[slot] = readers.get(slot, 0) + 1
    outputs = set(plan.output_slots)
    producer = {slot: index for index, step in enumerate(steps) for slot in step.outputs}
    follower: dict[int, int] = {}  # step index -> the fused step that runs right after it
    for index, step in enumerate(steps):
        if not (step.op.is_stateless and len(step.inputs) == 1 and len(step.outputs) == 1):
            continue
        slot = step.inputs[0]
        dtype = dtypes.get(slot)
        if inplace_kernel(step.op, dtype) is None or dtypes.get(step.outputs[0]) != dtype:
            continue
        before = producer.get(slot)
        if before is None or readers.get(slot) != 1 or slot in outputs:
            continue
        head = steps[before]
        if len(head.outputs) == 1 and head.op.is_stateless and isinstance(head.op, UnaryOp):
            follower[before] = index
    followed = set(follower.values())
    groups = []
    for index in range(len(steps)):
        if index in followed:
            continue
        group = [index]
        while group[-1] in follower:
            group.append(follower[group[-1]])
        groups.append(group)
    return groups


def plan_runs(plan) -> list[tuple[tuple[int, ...], tuple, tuple[int, ...]]]:
    """Per program entry: the plan step indices it runs, the in-place kernels of the steps after
    the first, the slots to free after it. Computed once per plan (states share it)."""
    cached = plan.fused_runs
    if cached is not None:
        return cached
    steps = plan.steps
    dtypes = slot_dtypes(plan)
    runs = []
    for group in fused_runs(plan, dtypes):
        inner = {steps[i].outputs[0] for i in group[:-1]}
        frees = tuple(dict.fromkeys(slot for i in group for slot in steps[i].frees if slot not in inner))
        dtype = dtypes[steps[group[0]].outputs[0]]
        kernels = tuple(inplace_kernel(steps[i].op, dtype) for i in group[1:])
        runs.append((tuple(group), kernels, frees))
    plan.fused_runs = runs
    return runs


def build_program(plan, evaluators: list[Callable]) -> list[Entry]:
    """The entries a state runs: ``evaluators[i]`` runs plan step ``i``."""
    steps = plan.steps
    program: list[Entry] = []
    for group, kernels, frees in plan_runs(plan):
        first, last = steps[group[0]], steps[group[-1]]
        evaluate = _fused(evaluators[group[0]], kernels) if kernels else evaluators[group[0]]
        program.append((evaluate, first.inputs, last.outputs, frees, group))
    return program


def _fused(head: Callable, kernels: tuple) -> Callable:
    def evaluate(inputs):
        y = head(inputs)[0]
        if type(y) is not np.ndarray or y.base is not None or not y.flags.writeable \
                or np.may_share_memory(y, inputs[0]):
            y = np.array(y)  # the kernels write in place: own the array
        for kernel in kernels:
            y = kernel(y, y)
        return [y]

    return evaluate
