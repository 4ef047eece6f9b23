"""IF and WHILE: TFLite's functional control flow over subgraphs.

A control-flow op holds the subgraphs it calls as TypedModels (each built once by the
loader, whatever number of ops reference it). For the facts its inputs actually have,
a subgraph is re-typed (its input facts replaced, every fact recomputed), optimized and
planned once; each state of the op keeps one run state per subgraph, so running a loop
re-plans and re-types nothing. A WHILE loop variable whose shape the body changes gets
fresh symbols for the changing dims: the body is typed once for those symbolic facts
and its run state binds the symbols from the actual shapes at every iteration.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...datum import DatumType
from ...dim import SymbolFactory, TDim, fresh_symbol
from ...errors import AnalysisError, RunError, rewrapped
from ...fact import TypedFact
from ..base import Limits, check_deadline
from .common import TflOp
from .resource import real_outputs


def entry_fact(declared: TypedFact, given: TypedFact, what: str) -> TypedFact:
    """The fact a subgraph input gets from its caller (the subgraph's quantization is kept)."""
    if declared.dtype != given.dtype or declared.rank != given.rank:
        raise AnalysisError(f"{what}: the subgraph declares {declared}, the caller passes {given}")
    return TypedFact(given.dtype, given.shape, qparams=declared.qparams if declared.qparams else given.qparams)


def merged_fact(a: TypedFact, b: TypedFact, what: str, keep=frozenset()) -> TypedFact:
    """A fact covering both ``a`` and ``b`` (dims that differ become fresh symbols, unless in ``keep``)."""
    if a.dtype != b.dtype or a.rank != b.rank:
        raise AnalysisError(f"{what}: {a} and {b} differ in type or rank")
    shape = []
    for x, y in zip(a.shape, b.shape):
        if x == y or (isinstance(x, TDim) and str(x) in keep):
            shape.append(x)
        else:
            shape.append(fresh_symbol())
    return TypedFact(a.dtype, shape, qparams=a.qparams)


class Subgraph:
    """A subgraph as loaded, with its re-typed and optimized variants (one per input facts)."""

    def __init__(self, model):
        self.model = model
        self._variants: dict = {}

    def typed_for(self, facts: list[TypedFact], what: str):
        """The subgraph typed for these input facts (cached; the model itself when they match)."""
        declared = self.model.input_facts
        if len(declared) != len(facts):
            raise AnalysisError(f"{what}: the subgraph takes {len(declared)} inputs, the caller passes {len(facts)}")
        entries = [entry_fact(d, f, f"{what} input {i}") for i, (d, f) in enumerate(zip(declared, facts))]
        key = tuple(str(f) for f in entries)
        if key not in self._variants:
            if all(d.same_type_and_shape(e) for d, e in zip(declared, entries)):
                typed = self.model
            else:
                typed = self.model.compact()
                typed.symbols = SymbolFactory(f"_u{len(self._variants)}v")
                for outlet, fact in zip(typed.inputs, entries):
                    typed.set_outlet_fact(outlet, fact)
                try:
                    typed.refresh_facts()
                except AnalysisError as error:
                    raise rewrapped(error, f"{what}: {error}") from None
            self._variants[key] = [typed, None]
        return self._variants[key][0]

    def runnable_for(self, facts: list[TypedFact], what: str):
        """The optimized variant for these input facts (its plan is built once, then shared)."""
        typed = self.typed_for(facts, what)
        key = tuple(str(f) for f in (entry_fact(d, f, what) for d, f in zip(self.model.input_facts, facts)))
        variant = self._variants[key]
        if variant[1] is None:
            variant[1] = typed.into_optimized()
        return variant[1]


def _subgraph(model) -> Subgraph:
    cache = model.__dict__.setdefault("_tfl_subgraph", None)
    if cache is None:
        cache = Subgraph(model)
        model.__dict__["_tfl_subgraph"] = cache
    return cache


def subgraph_outputs(model, facts: list[TypedFact], what: str) -> list[TypedFact]:
    """The facts of a subgraph's own outputs when its inputs have ``facts``."""
    return _subgraph(model).typed_for(facts, what).output_facts[:real_outputs(model)]


def runner_for(store: dict, model, values: list, label: str) -> _Runner:
    """The run state of ``model`` for these values, kept in ``store`` (one per program state)."""
    facts = [TypedFact(DatumType.from_numpy(np.asarray(v).dtype), np.shape(v)) for v in values]
    runnable = _subgraph(model).runnable_for(facts, label)
    key = ("runner", id(runnable))
    if key not in store:
        store[key] = _Runner(runnable, label)
    return store[key]


def _truth(value: np.ndarray, what: str) -> bool:
    if value.size != 1:
        raise RunError(f"{what} must hold one value, got shape {value.shape}")
    return bool(value.reshape(-1)[0])


class _Runner:
    """One run state of an optimized subgraph (its hidden effect outputs run, and are dropped)."""

    def __init__(self, model, label: str):
        self.label = label
        self.state = model.plan().state()
        self.count = real_outputs(model)

    def run(self, values: list) -> list:
        try:
            return self.state.run_nested(values)[:self.count]
        except RunError as error:
            raise RunError(f"in {self.label}: {error}") from None

    def reset(self) -> None:
        self.state.reset()


@dataclass(frozen=True, eq=False)
class If(TflOp):
    """IF: input 0 is the condition; the others go to ``then_branch`` or ``else_branch``."""

    then_branch: object = field(default=None, repr=False)
    else_branch: object = field(default=None, repr=False)
    #: a last input only orders this op after the previous effect (resource variables)
    ordered: bool = False
    is_stateless = False

    def subgraphs(self):
        return {"then": self.then_branch, "else": self.else_branch}

    @property
    def nboutputs(self) -> int:
        return real_outputs(self.then_branch)

    def output_facts(self, inputs):
        inputs = inputs[:-1] if self.ordered else inputs
        if not inputs:
            raise AnalysisError("IF needs a condition input")
        if inputs[0].dtype != DatumType.BOOL or inputs[0].volume not in (1,):
            raise AnalysisError(f"the IF condition must be one bool, got {inputs[0]}")
        branches = []
        for label, model in (("then branch", self.then_branch), ("else branch", self.else_branch)):
            branches.append(subgraph_outputs(model, list(inputs[1:]), f"IF {label}"))
        if len(branches[0]) != len(branches[1]):
            raise AnalysisError(f"IF branches give {len(branches[0])} and {len(branches[1])} outputs")
        return [merged_fact(a, b, f"IF output {i}") if not a.same_type_and_shape(b) else a.without_value()
                for i, (a, b) in enumerate(zip(*branches))]

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self):
        return _IfState(self)


class _IfState:
    def __init__(self, op: If):
        self.op = op
        self.runners: dict = {}

    def eval(self, inputs):
        inputs = inputs[:-1] if self.op.ordered else inputs
        chosen = _truth(inputs[0], "the IF condition")
        model = self.op.then_branch if chosen else self.op.else_branch
        facts = [TypedFact(DatumType.from_numpy(v.dtype), v.shape) for v in inputs[1:]]
        runnable = _subgraph(model).runnable_for(facts, "IF branch")
        runner = self.runners.get(id(runnable))
        if runner is None:
            runner = self.runners[id(runnable)] = _Runner(runnable, "the IF then branch" if chosen else
                                                          "the IF else branch")
        return runner.run(list(inputs[1:]))

    def reset(self) -> None:
        for runner in self.runners.values():
            runner.reset()


@dataclass(frozen=True, eq=False)
class While(TflOp):
    """WHILE: loop variables go through ``body`` as long as ``cond`` says true."""

    cond: object = field(default=None, repr=False)
    body: object = field(default=None, repr=False)
    #: a last input only orders this op after the previous effect (resource variables)
    ordered: bool = False
    is_stateless = False

    def subgraphs(self):
        return {"cond": self.cond, "body": self.body}

    @property
    def nboutputs(self) -> int:
        return real_outputs(self.body)

    def loop_facts(self, inputs: list[TypedFact]) -> list[TypedFact]:
        """The facts of the loop variables over all iterations (changing dims become symbols)."""
        key = ("loop", tuple(str(f) for f in inputs))
        return self.derived(key, lambda: self._settle([TypedFact(f.dtype, f.shape, qparams=f.qparams)
                                                       for f in inputs]))

    def _settle(self, facts: list[TypedFact]) -> list[TypedFact]:
        created: set[str] = set()
        for _ in range(4):
            outputs = subgraph_outputs(self.body, facts, "WHILE body")
            if len(outputs) != len(facts):
                raise AnalysisError(f"the WHILE body gives {len(outputs)} outputs for {len(facts)} loop variables")
            merged = [merged_fact(f, o, f"WHILE loop variable {i}", created) for i, (f, o) in
                      enumerate(zip(facts, outputs))]
            if all(m.same_type_and_shape(f) for m, f in zip(merged, facts)):
                return facts
            for fact in merged:
                created |= {str(d) for d in fact.shape if isinstance(d, TDim)}
            facts = merged
        raise AnalysisError("the shapes of the WHILE loop variables do not settle")

    def output_facts(self, inputs):
        facts = self.loop_facts(list(inputs[:-1] if self.ordered else inputs))
        cond = subgraph_outputs(self.cond, facts, "WHILE cond")
        if len(cond) != 1 or cond[0].dtype != DatumType.BOOL or cond[0].volume != 1:
            raise AnalysisError(f"the WHILE condition must give one bool, got {[str(f) for f in cond]}")
        return facts

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self):
        return _WhileState(self)


class _WhileState:
    def __init__(self, op: While):
        self.op = op
        self.runners = None

    def _prepare(self, inputs):
        facts = self.op.loop_facts([TypedFact(DatumType.from_numpy(v.dtype), v.shape, qparams=self.op.iq(i))
                                    for i, v in enumerate(inputs)])
        cond = _subgraph(self.op.cond).runnable_for(facts, "WHILE cond")
        body = _subgraph(self.op.body).runnable_for(facts, "WHILE body")
        return facts, _Runner(cond, "the WHILE condition"), _Runner(body, "the WHILE body")

    def eval(self, inputs):
        inputs = inputs[:-1] if self.op.ordered else inputs
        if self.runners is None or not self._fits(inputs):
            self.runners = self._prepare(inputs)
        _, cond, body = self.runners
        values = list(inputs)
        limit = Limits.max_loop_iterations
        for iteration in range(limit + 1):
            check_deadline(f"WHILE, iteration {iteration}")
            if not _truth(cond.run(values)[0], "the WHILE condition"):
                return values
            values = body.run(values)
        raise RunError(f"WHILE ran more than {limit} iterations (raise the limit with "
                       "tractile.set_limits(max_loop_iterations=...))")

    def _fits(self, inputs) -> bool:
        facts = self.runners[0]
        for fact, value in zip(facts, inputs):
            if fact.rank != value.ndim or any(isinstance(d, int) and d != s for d, s in zip(fact.shape, value.shape)):
                return False
        return True

    def reset(self) -> None:
        if self.runners is not None:
            self.runners[1].reset()
            self.runners[2].reset()
