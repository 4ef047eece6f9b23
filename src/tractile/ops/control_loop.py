"""The ONNX Loop: a body run while a trip count and a condition allow.

Body inputs: iteration number (i64), condition (bool), the N loop-carried values,
then the values read from the enclosing graph. Body outputs: the next condition,
the N carried values, then K per-iteration values stacked into the scan outputs.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..datum import DatumType
from ..dim import TDim, fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import OPTIONAL, TENSOR, InferenceFact, TypedFact
from ..fact_unify import generalize
from .base import Limits, Op, check_alloc, check_deadline
from .control import Body, check_flag_fact, input_symbols, merge_containers, outer_fact, scalar_flag

#: how many times the carried facts may be widened before analysis gives up
_MAX_WIDENINGS = 4


def widen_fact(entry: TypedFact, out: TypedFact, loose: set, what: str) -> TypedFact:
    """A fact covering a carried value both on entry and after one more iteration.

    Dims that change become fresh symbols, remembered in ``loose`` so that the next
    round keeps them; an optional may come back as the value it holds.
    """
    if entry.kind != TENSOR or out.kind != TENSOR:
        if entry.kind == out.kind:
            return merge_containers(entry, out)
        if entry.kind == OPTIONAL and entry.element is not None and (entry.element.kind or TENSOR) == out.kind:
            held = InferenceFact.from_typed(out.without_value())
            return TypedFact.container(OPTIONAL, generalize(entry.element, held))
        raise AnalysisError(f"{what} is {entry} on entry but the body returns {out}")
    if entry.dtype != out.dtype:
        raise AnalysisError(f"{what} is {entry} on entry but the body returns {out} (datum types differ)")
    if entry.rank != out.rank:
        raise AnalysisError(f"{what} is {entry} on entry but the body returns {out}: its rank changes, "
                            "which tractile does not support")
    shape = []
    for old, new in zip(entry.shape, out.shape):
        if old == new or (isinstance(old, TDim) and str(old) in loose):
            shape.append(old)
        else:
            dim = fresh_symbol()
            loose.add(str(dim))
            shape.append(dim)
    return TypedFact(entry.dtype, shape, None, entry.qparams if entry.qparams == out.qparams else None)


def settle_carried(body: Body, prefix: list[TypedFact], carried: list[TypedFact], suffix: list[TypedFact],
                   what: str, out_offset: int) -> tuple[list[TypedFact], list[TypedFact]]:
    """Widen carried facts until the body maps them onto themselves; return them and the
    body's output facts for them."""
    key = ("settle", tuple((str(f), id(f.konst)) for f in [*prefix, *carried, *suffix]))
    found = body.memo.get(key)
    if found is not None:
        return found[0], found[1]
    entry_facts = [*prefix, *carried, *suffix]
    carried = [f.without_value() for f in carried]
    loose: set = set()
    for _ in range(_MAX_WIDENINGS):
        outs = body.output_facts([*prefix, *carried, *suffix])
        widened = [widen_fact(c, o, loose, f"{what} {i}")
                   for i, (c, o) in enumerate(zip(carried, outs[out_offset:out_offset + len(carried)]))]
        if all(a.same_type_and_shape(b) for a, b in zip(widened, carried)):
            body.memo[key] = (carried, outs, entry_facts)
            return carried, outs
        carried = widened
    raise AnalysisError(f"the facts of the {what}s do not settle: {', '.join(map(str, carried))}")


def stacked(items: list[np.ndarray], fact: TypedFact, what: str) -> np.ndarray:
    """Per-iteration values stacked on a new leading axis (an empty stack uses the fact's dims)."""
    if not items:
        shape = (0, *(d if isinstance(d, int) else 0 for d in fact.shape))
        return np.zeros(shape, dtype=fact.dtype.np)
    first = items[0].shape
    for index, item in enumerate(items):
        if item.shape != first:
            raise RunError(f"{what}: iteration {index} gives shape {item.shape}, iteration 0 gave {first}; "
                           "per-iteration values must all have one shape")
    check_alloc((len(items), *first), items[0].dtype, what)
    return np.stack(items)


@dataclass(frozen=True, eq=False)
class Loop(Op):
    """ONNX Loop. Op inputs: trip count (if ``has_trip_count``), condition (if
    ``has_condition``), the ``carried`` initial values, then the enclosing values the body
    reads. Outputs: the final carried values, then the ``body.output_count - 1 - carried``
    scan outputs (per-iteration values stacked on a new axis 0)."""

    body: Body
    carried: int
    has_trip_count: bool = True
    has_condition: bool = True

    @property
    def scan_outputs(self) -> int:
        return self.body.output_count - 1 - self.carried

    @property
    def nboutputs(self) -> int:
        return self.carried + self.scan_outputs

    @property
    def is_random(self) -> bool:  # type: ignore[override]
        return self.body.is_random

    def subgraphs(self):
        return {"body": self.body.model()}

    def _split(self, inputs: list) -> tuple:
        position = 0
        trip = cond = None
        if self.has_trip_count:
            trip, position = inputs[0], 1
        if self.has_condition:
            cond, position = inputs[position], position + 1
        return trip, cond, inputs[position:position + self.carried], inputs[position + self.carried:]

    def _counter_facts(self) -> list[TypedFact]:
        """Facts of the iteration number and condition body inputs (scalars unless declared [1])."""
        facts = []
        for index, dtype in ((0, DatumType.I64), (1, DatumType.BOOL)):
            declared = self.body.declared_input(index)
            shape = declared.shape.dims if declared.shape.is_complete() and declared.rank == 1 else ()
            value = np.ones(shape, dtype=bool) if dtype == DatumType.BOOL else None
            facts.append(TypedFact(dtype, shape, value))
        return facts

    def output_facts(self, inputs):
        if self.body.input_count < 2 + self.carried or self.body.output_count < 1 + self.carried:
            raise AnalysisError(f"Loop body has {self.body.input_count} inputs and {self.body.output_count} "
                                f"outputs, too few for {self.carried} carried values")
        trip, cond, initial, extras = self._split(inputs)
        if len(initial) != self.carried or len(extras) != self.body.input_count - 2 - self.carried:
            raise AnalysisError(f"Loop got {len(inputs)} inputs, its body needs {self.body.input_count - 2} "
                                f"values besides the counters")
        if trip is not None and (trip.kind != TENSOR or trip.dtype != DatumType.I64 or trip.volume != 1):
            raise AnalysisError(f"Loop trip count must be one i64 value, got {trip}")
        if cond is not None:
            check_flag_fact(cond, "Loop condition")
        counters = self._counter_facts()
        carried, outs = settle_carried(self.body, counters, initial, extras, "loop-carried value", 1)
        check_flag_fact(outs[0], "Loop body condition output")
        known = input_symbols(inputs) | {s for f in carried if f.kind == TENSOR for s in f.symbols()}
        iterations = self._iterations(trip, cond, outs[0])
        scans = []
        for slot, fact in enumerate(outs[1 + self.carried:]):
            if fact.kind != TENSOR:
                raise AnalysisError(f"Loop scan output {slot} must be a tensor, the body gives {fact}")
            fact = outer_fact(fact, known)
            scans.append(TypedFact(fact.dtype, (iterations, *fact.shape)))
        return [*carried, *scans]

    def _iterations(self, trip, cond, cond_out):
        """The number of iterations as a dim: the trip count when the condition cannot stop the loop."""
        never_stops = cond is None or (cond.konst is not None and bool(cond.konst.reshape(-1)[0])
                                       and cond_out.konst is not None and bool(cond_out.konst.reshape(-1)[0]))
        if trip is not None and never_stops:
            value = trip.known_value()
            if value is not None:
                count = value.reshape(-1)[0]
                if isinstance(count, TDim):
                    return count
                return max(int(count), 0)
        return fresh_symbol()

    def eval(self, inputs):
        trip, cond, carried, extras = self._split(inputs)
        remaining = None if trip is None else int(np.asarray(trip).reshape(-1)[0])
        running = True if cond is None else scalar_flag(cond, "Loop condition")
        counters = self._counter_facts()
        keep_going = np.ones(counters[1].shape, dtype=bool)
        carried = list(carried)
        counter = lambda i: np.full(counters[0].shape, i, dtype=np.int64)  # noqa: E731
        runner = self.body.runner([counter(0), keep_going, *carried, *extras])
        scans: list[list] = [[] for _ in range(self.scan_outputs)]
        limit = Limits.max_loop_iterations
        iteration = 0
        while running and (remaining is None or iteration < remaining):
            if iteration >= limit:
                raise RunError(f"Loop did not stop after {limit} iterations (the limit; raise it with "
                               "tractile.set_limits(max_loop_iterations=...))")
            check_deadline(f"Loop, iteration {iteration}")
            outs = runner.run([counter(iteration), keep_going, *carried, *extras])
            if cond is not None:
                running = scalar_flag(outs[0], "Loop body condition output")
            carried = outs[1:1 + self.carried]
            for slot, value in enumerate(outs[1 + self.carried:]):
                scans[slot].append(value)
            iteration += 1
        scan_facts = runner.body.typed.output_facts[1 + self.carried:]
        return [*carried, *(stacked(items, fact, f"Loop scan output {slot}")
                            for slot, (items, fact) in enumerate(zip(scans, scan_facts)))]

    def wire_typed(self, model, name, inputs):
        facts = [model.outlet_fact(o) for o in inputs]
        trip, cond, initial, extras = self._split(facts)
        carried, _ = settle_carried(self.body, self._counter_facts(), initial, extras, "loop-carried value", 1)
        body = self.body.specialized([*self._counter_facts(), *carried, *extras])
        return model.wire_node(name, replace(self, body=body), inputs)
