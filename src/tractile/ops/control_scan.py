"""The ONNX Scan: a body run once per slice of its scan inputs, carrying state.

Body inputs: the N state values, one slice of each of the M scan inputs (the scan
axis removed), then the values read from the enclosing graph. Body outputs: the N
next states, then K per-iteration values stacked along each scan output's axis.

Opset 8's form (``batched``) has a leading batch axis on every state and scan input,
scan axis 1, and an optional ``sequence_lens`` first input; outputs past a batch
item's length are zeros.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..dim import Dim
from ..errors import AnalysisError, RunError
from ..fact import TENSOR, TypedFact
from .base import Limits, Op
from .control import Body, input_symbols, outer_fact
from .control_loop import settle_carried, stacked


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise AnalysisError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


@dataclass(frozen=True, eq=False)
class Scan(Op):
    """ONNX Scan (opset 9+ axes and directions, or opset 8's batched form)."""

    body: Body
    states: int
    scan_inputs: int
    input_axes: tuple[int, ...] = ()
    input_directions: tuple[int, ...] = ()
    output_axes: tuple[int, ...] = ()
    output_directions: tuple[int, ...] = ()
    batched: bool = False
    has_sequence_lens: bool = False

    @property
    def scan_outputs(self) -> int:
        return self.body.output_count - self.states

    @property
    def nboutputs(self) -> int:
        return self.body.output_count

    @property
    def is_random(self) -> bool:  # type: ignore[override]
        return self.body.is_random

    def subgraphs(self):
        return {"body": self.body.model()}

    def _split(self, inputs: list) -> tuple:
        lens = inputs[0] if self.has_sequence_lens else None
        rest = inputs[1:] if self.has_sequence_lens else inputs
        n, m = self.states, self.scan_inputs
        return lens, rest[:n], rest[n:n + m], rest[n + m:]

    def _direction(self, directions: tuple[int, ...], index: int) -> int:
        return directions[index] if index < len(directions) else 0

    def _input_axis(self, index: int, rank: int) -> int:
        if self.batched:
            return 1
        axis = self.input_axes[index] if index < len(self.input_axes) else 0
        return _axis(axis, rank, f"Scan input {index} axis")

    def _body_facts(self, inputs: list[TypedFact]) -> tuple[list, list, list, Dim, Dim | None]:
        """Facts of the body's state, slice and enclosing inputs; the scan length; the batch."""
        lens, states, scans, extras = self._split(inputs)
        if len(scans) != self.scan_inputs or len(states) + len(scans) + len(extras) != self.body.input_count:
            raise AnalysisError(f"Scan got {len(inputs)} inputs, its body takes {self.body.input_count} "
                                f"({self.states} states, {self.scan_inputs} scan inputs)")
        batch = None
        length = None
        slices = []
        for index, fact in enumerate(scans):
            if fact.kind != TENSOR or fact.rank < (2 if self.batched else 1):
                raise AnalysisError(f"Scan input {index} must be a tensor with a scan axis, got {fact}")
            axis = self._input_axis(index, fact.rank)
            dim = fact.shape[axis]
            if length is None or (not isinstance(length, int) and isinstance(dim, int)):
                length = dim
            elif isinstance(length, int) and isinstance(dim, int) and length != dim:
                raise AnalysisError(f"Scan inputs have different lengths ({length} and {dim})")
            shape = [d for i, d in enumerate(fact.shape) if i != axis]
            if self.batched:
                batch, shape = shape[0], shape[1:]
            slices.append(TypedFact(fact.dtype, shape))
        if self.batched:
            for index, fact in enumerate(states):
                if fact.kind != TENSOR or fact.rank < 1:
                    raise AnalysisError(f"Scan (opset 8) state {index} must have a batch axis, got {fact}")
            states = [TypedFact(f.dtype, f.shape[1:], None, f.qparams) for f in states]
        return states, slices, list(extras), length, batch

    def output_facts(self, inputs):
        states, slices, extras, length, batch = self._body_facts(inputs)
        if length is None:
            raise AnalysisError("Scan needs at least one scan input")
        states, outs = settle_carried(self.body, [], states, [*slices, *extras], "Scan state", 0)
        known = input_symbols(inputs) | {s for f in states if f.kind == TENSOR for s in f.symbols()}
        facts = [TypedFact(f.dtype, (batch, *f.shape)) if self.batched else f for f in states]
        for slot, fact in enumerate(outs[self.states:]):
            if fact.kind != TENSOR:
                raise AnalysisError(f"Scan output {slot} must be a tensor, the body gives {fact}")
            fact = outer_fact(fact, known)
            if self.batched:
                facts.append(TypedFact(fact.dtype, (batch, length, *fact.shape)))
                continue
            axis = self.output_axes[slot] if slot < len(self.output_axes) else 0
            axis = _axis(axis, fact.rank + 1, f"Scan output {slot} axis")
            shape = list(fact.shape)
            shape.insert(axis, length)
            facts.append(TypedFact(fact.dtype, shape))
        return facts

    def wire_typed(self, model, name, inputs):
        states, slices, extras, _, _ = self._body_facts([model.outlet_fact(o) for o in inputs])
        states, _ = settle_carried(self.body, [], states, [*slices, *extras], "Scan state", 0)
        body = self.body.specialized([*states, *slices, *extras])
        return model.wire_node(name, replace(self, body=body), inputs)

    # running ------------------------------------------------------------------------------
    def eval(self, inputs):
        lens, states, scans, extras = self._split(inputs)
        if not self.batched:
            return self._scan(list(states), list(scans), list(extras), None)
        batch = scans[0].shape[0]
        length = scans[0].shape[1]
        lengths = np.full(batch, length, dtype=np.int64) if lens is None else np.asarray(lens).reshape(-1)
        if lengths.shape != (batch,) or np.any(lengths < 0) or np.any(lengths > length):
            raise RunError(f"Scan sequence_lens {lengths.tolist()} do not fit batch {batch} and length {length}")
        results = [self._scan([s[b] for s in states], [x[b] for x in scans], list(extras), int(lengths[b]),
                              length) for b in range(batch)]
        return [np.stack([r[slot] for r in results]) for slot in range(self.nboutputs)]

    def _scan(self, states: list, scans: list, extras: list, count: int | None, padded: int | None = None):
        """One scan (one batch item in opset 8's form, whose scan axis is then 0)."""
        moved = [x if self.batched else np.moveaxis(x, self._input_axis(i, x.ndim), 0)
                 for i, x in enumerate(scans)]
        total = moved[0].shape[0]
        if any(x.shape[0] != total for x in moved):
            raise RunError(f"Scan inputs have different lengths: {[x.shape[0] for x in moved]}")
        count = total if count is None else count
        if count > Limits.max_loop_iterations:
            raise RunError(f"Scan over {count} steps is past the iteration limit {Limits.max_loop_iterations} "
                           "(raise it with tractile.set_limits(max_loop_iterations=...))")

        def slice_at(index: int, step: int) -> np.ndarray:
            reverse = self._direction(self.input_directions, index)
            return moved[index][count - 1 - step if reverse else step]

        if total:
            runner = self.body.runner([*states, *(x[0] for x in moved), *extras])
            body = runner.body
        elif self.body.typed is not None:
            runner, body = None, self.body
        else:
            raise RunError("Scan over zero steps needs a typed body")
        collected: list[list] = [[] for _ in range(self.scan_outputs)]
        for step in range(count):
            outs = runner.run([*states, *(slice_at(i, step) for i in range(len(moved))), *extras])
            states = outs[:self.states]
            for slot, value in enumerate(outs[self.states:]):
                collected[slot].append(value)
        facts = body.typed.output_facts[self.states:]
        outputs = []
        for slot, (items, fact) in enumerate(zip(collected, facts)):
            if self._direction(self.output_directions, slot):
                items = items[::-1]
            if padded is not None and count < padded:
                filler = np.zeros_like(items[0]) if items else None
                items = items + [filler] * (padded - count) if items else items
            value = stacked(items, fact, f"Scan output {slot}")
            if not self.batched:
                axis = self.output_axes[slot] if slot < len(self.output_axes) else 0
                value = np.moveaxis(value, 0, _axis(axis, value.ndim, f"Scan output {slot} axis"))
            outputs.append(value)
        return [*states, *outputs]
