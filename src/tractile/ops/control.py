"""Control flow: subgraph bodies (:class:`Body`) and the If op.

A control-flow op holds its subgraphs as :class:`Body` objects. At load time a body
is an :class:`~tractile.model.InferenceModel` whose inputs are the subgraph's own
inputs followed by the values it reads from enclosing scopes. When the op's input
facts are known, the body is analysed and typed for them (once per distinct input
facts); when the enclosing model is typed, the op is rewired with bodies typed,
decluttered and optimized for its actual input facts. Running the op then runs that
one optimized body (planned once) as many times as needed.

Loop and Scan live in :mod:`tractile.ops.control_loop` and :mod:`tractile.ops.control_scan`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..datum import DatumType
from ..dim import TDim, fresh_symbol
from ..errors import AnalysisError, RunError, TractileError, error_kind, rewrapped
from ..fact import OPTIONAL, SEQUENCE, TENSOR, InferenceFact, TypedFact
from ..fact_unify import generalize
from ..graph import InletId
from .base import Op


class Body:
    """A subgraph of a control-flow op.

    ``source`` is the model as loaded (inference level, or typed for formats that load typed,
    like TFLite); ``typed`` is None until the body is specialised for the op's input facts
    (:meth:`specialized`), then the typed and optimized model that runs.
    """

    def __init__(self, source, label: str, typed=None, failure: str | None = None):
        self.source = source
        self.label = label
        self.typed = typed
        #: why the body cannot run with the op's input facts (an If branch never taken)
        self.failure = failure
        #: the class of that error (RunTimeFactsError: facts of a run would settle it)
        self.failure_kind: type[AnalysisError] = AnalysisError
        #: the body as loaded, whose caches every specialisation shares
        self._origin: Body = self
        self._cache: dict = {}
        self._memo: dict = {}
        self.is_random = any(node.op.is_random for node in source.nodes)

    @property
    def input_count(self) -> int:
        return len(self.source.inputs)

    @property
    def output_count(self) -> int:
        return len(self.source.outputs)

    def declared_input(self, index: int) -> InferenceFact:
        """The fact the subgraph declares for input ``index`` (as loaded)."""
        fact = self.source.outlet_fact(self.source.inputs[index])
        return InferenceFact.from_typed(fact) if isinstance(fact, TypedFact) else fact

    def _entry(self, facts: list[TypedFact]) -> dict:
        """The cache entry for these input facts (which it keeps alive: the key holds ids)."""
        cache = self._origin._cache
        key = tuple((str(f), id(f.konst), id(f.sym_value)) for f in facts)
        entry = cache.get(key)
        if entry is None:
            entry = {"facts": list(facts)}
            cache[key] = entry
        return entry

    @property
    def memo(self) -> dict:
        """Results ops derive from this body's facts (shared by its specialisations)."""
        return self._origin._memo

    def output_facts(self, facts: list[TypedFact]) -> list[TypedFact]:
        """The body's output facts when its inputs have ``facts`` (analysed once per facts)."""
        if self.typed is not None and _same_facts(self.typed.input_facts, facts):
            return self.typed.output_facts
        entry = self._entry(facts)
        if "error" in entry:
            raise entry["error"][1](entry["error"][0])
        if "typed" not in entry:
            try:
                entry["typed"] = self._type_for(facts)
            except AnalysisError as error:
                entry["error"] = (error.message, error_kind(error))
                raise
        return entry["typed"].output_facts

    def specialized_or_failed(self, facts: list[TypedFact]) -> Body:
        """Like :meth:`specialized`, but a body that cannot be typed for ``facts`` comes
        back holding the reason (it raises a RunError if it is ever run)."""
        try:
            return self.specialized(facts)
        except AnalysisError as error:
            failed = Body(self.source, self.label, None, failure=str(error))
            failed.failure_kind = error_kind(error)
            failed._origin = self._origin
            return failed

    def specialized(self, facts: list[TypedFact]) -> Body:
        """This body typed, decluttered and optimized for ``facts`` (built once per facts)."""
        if self.typed is not None and _same_facts(self.typed.input_facts, facts):
            return self
        entry = self._entry(facts)
        if "body" not in entry:
            typed = entry.get("typed") or self._type_for(facts)
            entry["typed"] = typed
            try:
                optimized = typed.into_optimized()
            except AnalysisError as error:
                raise rewrapped(error, f"in {self.label}: {error}") from None
            body = Body(self.source, self.label, optimized)
            body._origin = self._origin
            entry["body"] = body
        return entry["body"]

    def _type_for(self, facts: list[TypedFact]):
        if len(facts) != self.input_count:
            raise AnalysisError(f"{self.label} takes {self.input_count} inputs, got {len(facts)}")
        if not hasattr(self.source, "refresh_facts"):
            return self._infer_for(facts)
        typed = self.source.compact()
        for outlet, fact in zip(typed.inputs, facts):
            declared = typed.outlet_fact(outlet)
            if fact.kind == TENSOR and (fact.dtype != declared.dtype or fact.rank != declared.rank):
                raise AnalysisError(f"{self.label} declares {declared} for an input given {fact}")
            if fact.kind == TENSOR and fact.qparams is None and declared.qparams is not None:
                fact = TypedFact(fact.dtype, fact.shape, fact.konst, declared.qparams, fact.sym_value)
            typed.set_outlet_fact(outlet, fact)
        try:
            typed.refresh_facts()
        except AnalysisError as error:
            raise AnalysisError(f"in {self.label}: {error}") from None
        return typed

    def _infer_for(self, facts: list[TypedFact]):
        clone = clone_inference_model(self.source)
        for outlet, fact in zip(clone.inputs, facts):
            clone.set_outlet_fact(outlet, InferenceFact.from_typed(fact))
        try:
            return clone.into_typed(input_facts=facts)
        except AnalysisError as error:
            raise rewrapped(error, f"in {self.label}: {error}") from None

    def runner(self, values: list) -> BodyRunner:
        """A run state for this body (typed for the values' facts if it is not typed yet)."""
        if self.failure is not None:
            raise RunError(f"{self.label} cannot run with these inputs: {self.failure}")
        body = self if self.typed is not None else self.specialized([fact_of_value(v) for v in values])
        return BodyRunner(body)

    def model(self):
        """The model to show in dumps: the optimized one when there is one."""
        return self.typed if self.typed is not None else self.source

    def __str__(self) -> str:
        from .io import Const, Source

        ops = [n.op.name for n in self.model().nodes if not isinstance(n.op, (Source, Const))]
        shown = ", ".join(ops[:4]) + (f" and {len(ops) - 4} more" if len(ops) > 4 else "")
        return f"graph({self.input_count} in, {self.output_count} out: {shown})"

    __repr__ = __str__


class BodyRunner:
    """Runs one specialised body many times with a single state (its plan is built once)."""

    def __init__(self, body: Body):
        from .base import CHECKING_FACTS

        self.body = body
        self.state = body.typed.plan().state(check_facts=CHECKING_FACTS.get())

    def run(self, values: list) -> list:
        try:
            return self.state.run_nested(values)
        except RunError as error:
            raise RunError(f"in {self.body.label}: {error}") from None


def clone_inference_model(model):
    """A copy of a model's graph sharing its ops, facts and symbols (so a body can be
    analysed again from scratch for other input facts)."""
    clone = type(model)()
    clone.symbols = model.symbols
    clone.properties = dict(model.properties)
    for node in model.nodes:
        clone.add_node(node.name, node.op, [o.fact for o in node.outputs])
    for node in model.nodes:
        for slot, outlet in enumerate(node.inputs):
            clone.add_edge(outlet, InletId(node.id, slot))
    clone.inputs = list(model.inputs)
    clone.outputs = list(model.outputs)
    clone.outlet_labels = dict(model.outlet_labels)
    return clone


def _same_facts(a: list[TypedFact], b: list[TypedFact]) -> bool:
    return len(a) == len(b) and all(x.same_type_and_shape(y) for x, y in zip(a, b))


def fact_of_value(value) -> TypedFact:
    """The fact of a run-time value: a tensor (no constant kept), a list or None."""
    if isinstance(value, list):
        element = None
        for item in value:
            item_fact = InferenceFact.from_typed(fact_of_value(item))
            element = item_fact if element is None else generalize(element, item_fact)
        return TypedFact.container(SEQUENCE, element)
    if value is None:
        return TypedFact.container(OPTIONAL, InferenceFact())
    value = np.asarray(value)
    return TypedFact(DatumType.from_numpy(value.dtype), value.shape)


# facts crossing the body boundary ------------------------------------------------------------

def input_symbols(facts: list[TypedFact]) -> set[str]:
    """The symbols the enclosing scope knows from these facts."""
    known: set[str] = set()
    for fact in facts:
        if fact.kind == TENSOR:
            known |= fact.symbols()
    return known


def outer_fact(fact: TypedFact, known: set[str], keep_value: bool = False) -> TypedFact:
    """A body output fact as seen outside: dims on symbols private to the body become fresh."""
    if fact.kind != TENSOR or not fact.has_rank:
        return fact.without_value() if fact.kind == TENSOR else fact
    shape = [d if not isinstance(d, TDim) or d.symbols() <= known else fresh_symbol() for d in fact.shape]
    if keep_value and list(shape) == list(fact.shape):
        return TypedFact(fact.dtype, shape, fact.konst, fact.qparams, fact.sym_value)
    return TypedFact(fact.dtype, shape, None, fact.qparams)


def merge_containers(a: TypedFact, b: TypedFact) -> TypedFact:
    """A container fact covering two of one kind (what they hold generalised)."""
    return generalize(InferenceFact.from_typed(a), InferenceFact.from_typed(b)).to_typed()


def merge_facts(a: TypedFact, b: TypedFact, what: str) -> TypedFact:
    """A fact covering both (dims that differ become fresh symbols); raise if type or rank differ."""
    if a.kind != TENSOR or b.kind != TENSOR:
        if a.kind == b.kind:
            return merge_containers(a, b)
        raise AnalysisError(f"{what}: a {a.kind} ({a}) and a {b.kind} ({b}) cannot be merged")
    if a.dtype != b.dtype:
        raise AnalysisError(f"{what}: datum types differ ({a} and {b})")
    if not a.has_rank or not b.has_rank or a.rank != b.rank:
        return TypedFact.unknown_rank(a.dtype, _max_rank(a, b), a.qparams if a.qparams == b.qparams else None)
    shape = [x if x == y else fresh_symbol() for x, y in zip(a.shape, b.shape)]
    if shape == list(a.shape) and a.konst is not None and b.konst is not None and a == b:
        return a
    return TypedFact(a.dtype, shape, None, a.qparams if a.qparams == b.qparams else None)


def _max_rank(*facts: TypedFact) -> int | None:
    """A bound on the rank of a value that may be any of ``facts`` (None: unbounded)."""
    bounds = [f.rank if f.has_rank else f.max_rank for f in facts]
    return None if any(b is None for b in bounds) else max(bounds)


def scalar_flag(value: np.ndarray, what: str) -> bool:
    """The truth of a one-element tensor (a condition)."""
    if not isinstance(value, np.ndarray) or value.size != 1:
        raise RunError(f"{what} must hold exactly one value, got {getattr(value, 'shape', type(value).__name__)}")
    return bool(value.reshape(-1)[0])


def check_flag_fact(fact: TypedFact, what: str) -> None:
    if fact.kind != TENSOR or fact.dtype != DatumType.BOOL:
        raise AnalysisError(f"{what} must be a bool tensor, got {fact}")
    if not all(d == 1 for d in fact.shape if isinstance(d, int)) or fact.rank > 1:
        raise AnalysisError(f"{what} must hold one value (shape () or (1)), got {fact}")


# If ------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class If(Op):
    """Run ``then_body`` or ``else_body`` depending on input 0 (a one-element bool).

    Inputs after the condition are the values the branches read from the enclosing
    graph; ``then_inputs`` / ``else_inputs`` give, for each branch input, its index
    among the op's inputs. Branches yielding different shapes give fresh dims.
    """

    then_body: Body
    else_body: Body
    then_inputs: tuple[int, ...]
    else_inputs: tuple[int, ...]

    @property
    def nboutputs(self) -> int:
        return self.then_body.output_count

    @property
    def is_random(self) -> bool:  # type: ignore[override]
        return self.then_body.is_random or self.else_body.is_random

    def subgraphs(self):
        return {"then_branch": self.then_body.model(), "else_branch": self.else_body.model()}

    def attributes(self):
        return {"then_inputs": list(self.then_inputs), "else_inputs": list(self.else_inputs)}

    def output_facts(self, inputs):
        if not inputs:
            raise AnalysisError("If takes a condition input")
        check_flag_fact(inputs[0], "If condition")
        if self.then_body.output_count != self.else_body.output_count:
            raise AnalysisError(f"If branches have {self.then_body.output_count} and "
                                f"{self.else_body.output_count} outputs")
        known = input_symbols(inputs)
        cond = inputs[0].konst
        if cond is not None and cond.size == 1:
            body, indices = self._branch(bool(cond.reshape(-1)[0]))
            facts = body.output_facts([inputs[i] for i in indices])
            return [outer_fact(f, known, keep_value=True) for f in facts]
        then_facts = _facts_or_error(self.then_body, [inputs[i] for i in self.then_inputs])
        else_facts = _facts_or_error(self.else_body, [inputs[i] for i in self.else_inputs])
        if isinstance(then_facts, AnalysisError) and isinstance(else_facts, AnalysisError):
            raise then_facts
        if isinstance(then_facts, AnalysisError) or isinstance(else_facts, AnalysisError):
            facts = else_facts if isinstance(then_facts, AnalysisError) else then_facts
            return [outer_fact(f, known) for f in facts]
        return [merge_facts(outer_fact(a, known, True), outer_fact(b, known, True), f"If output {slot}")
                for slot, (a, b) in enumerate(zip(then_facts, else_facts))]

    def _branch(self, flag: bool) -> tuple[Body, tuple[int, ...]]:
        return (self.then_body, self.then_inputs) if flag else (self.else_body, self.else_inputs)

    def eval(self, inputs):
        body, indices = self._branch(scalar_flag(inputs[0], "If condition"))
        values = [inputs[i] for i in indices]
        return body.runner(values).run(values)

    def wire_typed(self, model, name, inputs):
        facts = [model.outlet_fact(o) for o in inputs]
        then_body = self.then_body.specialized_or_failed([facts[i] for i in self.then_inputs])
        else_body = self.else_body.specialized_or_failed([facts[i] for i in self.else_inputs])
        if then_body.failure is not None and else_body.failure is not None:
            raise then_body.failure_kind(then_body.failure)
        typed = replace(self, then_body=then_body, else_body=else_body)
        return model.wire_node(name, typed, inputs)

    def declutter(self, model, node):
        facts = [model.outlet_fact(o) for o in node.inputs]
        cond = facts[0].konst
        if cond is not None and cond.size == 1:
            body, indices = self._branch(bool(cond.reshape(-1)[0]))
            body = body.specialized([facts[i] for i in indices])
            return inline_body(model, node, body.typed, [node.inputs[i] for i in indices])
        return None


def _facts_or_error(body: Body, facts: list[TypedFact]) -> list[TypedFact] | AnalysisError:
    """A branch's output facts, or the error that says it cannot run with these inputs."""
    try:
        return body.output_facts(facts)
    except AnalysisError as error:
        return error


def inline_body(model, node, body_model, inputs) -> ModelPatch:  # noqa: F821
    """A patch replacing ``node`` by the nodes of ``body_model`` wired to ``inputs``."""
    from ..graph import OutletId
    from ..ops.io import Source
    from ..patch import ModelPatch

    patch = ModelPatch(model, f"inline {node.name}")
    mapping = {outlet: patch.tap(outer) for outlet, outer in zip(body_model.inputs, inputs)}
    for body_node_id in body_model.eval_order():
        body_node = body_model.nodes[body_node_id]
        if isinstance(body_node.op, Source):
            continue
        outlets = patch.wire_node(f"{node.name}.{body_node.name}", body_node.op,
                                  [mapping[o] for o in body_node.inputs])
        for slot, outlet in enumerate(outlets):
            mapping[OutletId(body_node_id, slot)] = outlet
    for slot, outlet in enumerate(body_model.outputs):
        try:
            patch.shunt(OutletId(node.id, slot), mapping[outlet])
        except TractileError:
            return None
    patch.obliterate(node.id)
    return patch
