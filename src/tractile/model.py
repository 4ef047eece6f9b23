"""The two model levels and the pipeline that links them.

``InferenceModel`` (partial facts) --analyse--> --into_typed--> ``TypedModel``
--declutter--> --optimize--> runnable ``TypedModel``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .dim import SymbolFactory, TDim, fresh_symbols_scope
from .errors import AnalysisError, TractileError, with_node_context
from .fact import InferenceFact, TypedFact
from .fact_spec import parse_fact
from .fact_unify import unify
from .graph import Graph, OutletId
from .hooks import provided

InputValues = Sequence[Any] | Mapping[str, Any]


class _ModelBase(Graph):
    def __init__(self) -> None:
        super().__init__()
        self.symbols = SymbolFactory()
        self._typed_cache: TypedModel | None = None
        self._plan_cache: Any = None
        #: the change count at which into_optimized made this model (None: it did not)
        self.optimized_at: int | None = None

    def wire_node(self, name: str, op, inputs: Sequence[OutletId]) -> list[OutletId]:
        """Add a node computing ``op`` on ``inputs``; the facts of its outputs are the level's own."""
        raise NotImplementedError

    def add_source(self, name: str, fact) -> OutletId:
        from .ops.io import Source

        outlet = self._wire(name, Source(), [], [fact])[0]
        self.inputs.append(outlet)
        return outlet

    def add_const(self, name: str, value) -> OutletId:
        from .ops.io import Const

        return self.wire_node(name, Const(np.asarray(value)), [])[0]

    def _port(self, which: int | str, outputs: bool) -> int:
        if isinstance(which, str):
            return self.output_index(which) if outputs else self.input_index(which)
        ports = self.outputs if outputs else self.inputs
        if not 0 <= which < len(ports):
            kind = "outputs" if outputs else "inputs"
            raise TractileError(f"the model has {len(ports)} {kind}, no {kind[:-1]} {which}")
        return which

    @property
    def input_facts(self) -> list:
        return [self.outlet_fact(o) for o in self.inputs]

    @property
    def output_facts(self) -> list:
        return [self.outlet_fact(o) for o in self.outputs]

    def input_fact(self, which: int | str = 0):
        return self.outlet_fact(self.inputs[self._port(which, False)])

    def output_fact(self, which: int | str = 0):
        return self.outlet_fact(self.outputs[self._port(which, True)])

    def compile(self, name: str = "model", opt: str = "speed", inputs: Sequence | None = None,
                cache_dir=None, **options):
        """Compile to C and build it for this machine: a :class:`~tractile.compile.host.CompiledModel`
        that runs like a state (see docs/COMPILE.md). ``inputs`` gives concrete input facts."""
        return provided("compile")(self, name=name, opt=opt, inputs=inputs, cache_dir=cache_dir, **options)

    def run(self, inputs: InputValues | Sequence[str] | None,
            feed: Mapping[str, Any] | None = None) -> list[np.ndarray] | dict[str, np.ndarray]:
        """Run once. A list in gives a list out (output order); a dict in gives a dict by output name.
        onnxruntime's ``run(output_names, feed)`` (``None`` for every output) gives a list."""
        return self._runnable().plan().run(inputs, feed)

    def _runnable(self) -> TypedModel:
        raise NotImplementedError


class InferenceModel(_ModelBase):
    """A model whose wires carry partial facts; formats with incomplete types load here."""

    def wire_node(self, name: str, op, inputs: Sequence[OutletId]) -> list[OutletId]:
        return self._wire(name, op, list(inputs), [InferenceFact() for _ in range(op.nboutputs)])

    def set_input_fact(self, which: int | str, spec) -> InferenceModel:
        """Replace what is known of an input (``"N,3,224,224,f32"``, ``(shape, dtype)``, a fact)."""
        outlet = self.inputs[self._port(which, False)]
        fact = parse_fact(spec)
        _check_against_declared(self.input_names()[self.inputs.index(outlet)], self.outlet_fact(outlet), fact)
        self.set_outlet_fact(outlet, fact)
        self._typed_cache = None
        return self

    def set_output_fact(self, which: int | str, spec) -> InferenceModel:
        """Hint what an output is; analysis can propagate it backwards to the inputs."""
        outlet = self.outputs[self._port(which, True)]
        try:
            self.set_outlet_fact(outlet, unify(self.outlet_fact(outlet), parse_fact(spec)))
        except AnalysisError as error:
            raise AnalysisError(f"output {self.outlet_label(outlet)!r}: {error.message}") from None
        self._typed_cache = None
        return self

    def with_input_values(self, values: Mapping[str | int, Any]) -> InferenceModel:
        """Specialise for known input values (by name or position), in place: each becomes a
        constant, so what it decides (an If on a sample rate, a shape) folds away."""
        from .specialize import replace_inputs_by_values

        replace_inputs_by_values(self, values)
        self._typed_cache = None
        return self

    def analyse(self, obstinate: bool = False) -> InferenceModel:
        """Propagate facts forward and backward until nothing changes (in place)."""
        from .infer.analyse import analyse

        with fresh_symbols_scope(self.symbols):
            analyse(self, obstinate=obstinate)
        return self

    def into_typed(self, input_facts: Sequence[TypedFact] | None = None) -> TypedModel:
        """Analyse, then convert to a TypedModel (statically known values become constants).

        ``input_facts`` (typed facts of the inputs, as a control-flow op passes to its bodies)
        replace the analysed input facts, so inputs whose rank is only known at run time can
        be typed."""
        from .infer.typed import into_typed

        self.analyse()
        with fresh_symbols_scope(self.symbols):
            return into_typed(self, input_facts)

    def into_optimized(self) -> TypedModel:
        return self.into_typed().into_optimized()

    def _runnable(self) -> TypedModel:
        cached = getattr(self, "_typed_cache", None)
        if cached is None:
            cached = self.into_optimized()
            self._typed_cache = cached
        return cached


class TypedModel(_ModelBase):
    """A model whose every wire has a full :class:`~tractile.fact.TypedFact`."""

    def wire_node(self, name: str, op, inputs: Sequence[OutletId]) -> list[OutletId]:
        inputs = list(inputs)
        facts = [self.outlet_fact(o) for o in inputs]
        try:
            with fresh_symbols_scope(self.symbols):
                outputs = op.output_facts(facts)
        except AnalysisError as error:
            from .graph import Node

            pending: Node[Any] = Node(len(self.nodes), self.unique_name(name), op, inputs, [])
            raise with_node_context(error, pending, facts) from None
        if len(outputs) != op.nboutputs:
            raise TractileError(f"{op.name}.output_facts gave {len(outputs)} facts for {op.nboutputs} outputs")
        return self._wire(name, op, inputs, outputs)

    def set_input_fact(self, which: int | str, spec) -> TypedModel:
        """Set an input's fact; downstream facts are recomputed.

        A text or ``(shape, dtype)`` spec keeps the input's quantization when it keeps its
        datum type (``"100,1,i8"`` batches a quantized input without losing its scale).
        """
        outlet = self.inputs[self._port(which, False)]
        fact = spec if isinstance(spec, TypedFact) else parse_fact(spec).to_typed()
        previous = self.outlet_fact(outlet)
        if not isinstance(spec, TypedFact) and fact.qparams is None and previous.qparams is not None \
                and fact.dtype == previous.dtype:
            fact = TypedFact(fact.dtype, fact.shape, qparams=previous.qparams)
        self.set_outlet_fact(outlet, fact)
        self.refresh_facts()
        return self

    def with_input_values(self, values: Mapping[str | int, Any], optimize: bool = True) -> TypedModel:
        """A copy specialised for known input values (by name or position): each becomes a
        constant; with ``optimize`` the copy is decluttered and optimized, so an If on a known
        condition folds away."""
        from .specialize import replace_inputs_by_values

        model = self.compact()
        replace_inputs_by_values(model, values)
        model.refresh_facts()
        if not optimize:
            return model
        model = model.declutter()  # folds what the values decide (an If inlined: facts after it refreshed)
        model.refresh_facts()
        return model.into_optimized()

    def refresh_facts(self) -> None:
        """Recompute every node's output facts from its inputs (after an input fact changed)."""
        for node_id in self.eval_order(self.outputs + [OutletId(n.id, 0) for n in self.nodes if n.outputs]):
            node = self.nodes[node_id]
            if not node.inputs:
                continue
            facts = self.node_input_facts(node_id)
            try:
                with fresh_symbols_scope(self.symbols):
                    outputs = node.op.output_facts(facts)
            except AnalysisError as error:
                raise with_node_context(error, node, facts) from None
            for outlet, fact in zip(node.outputs, outputs):
                outlet.fact = fact
        self.changes += 1
        self._plan_cache = None

    def declutter(self) -> TypedModel:
        """Remove format and training artefacts (no-ops, foldable constants, BatchNorm)."""
        return provided("declutter")(self)

    def optimize(self) -> TypedModel:
        """Rewrite for speed (fused bias and activations, kernel choices)."""
        return provided("optimize")(self)

    def into_optimized(self) -> TypedModel:
        """Decluttered then optimized; the model itself when it came out of this and has not
        changed since (so a model is optimized once on its way to C)."""
        if self.is_optimized:
            return self
        model = self.declutter().optimize()
        model.optimized_at = model.changes
        return model

    @property
    def is_optimized(self) -> bool:
        """Whether the model is as :meth:`into_optimized` made it (no change since)."""
        return self.optimized_at == self.changes

    def into_typed(self) -> TypedModel:
        return self

    def analyse(self, obstinate: bool = False) -> TypedModel:
        return self

    def compact(self) -> TypedModel:
        """A copy with only the nodes the outputs need, numbered in evaluation order."""
        from .patch import compact

        return compact(self)

    def plan(self, outputs: Sequence[OutletId] | None = None):
        """The execution plan (built once, shared by states)."""
        if outputs is not None:
            return provided("plan")(self, list(outputs))
        cached = getattr(self, "_plan_cache", None)
        if cached is None:
            cached = provided("plan")(self)
            self._plan_cache = cached
        return cached

    def state(self):
        """A fresh run state: reuse it for repeated runs from one thread."""
        return self.plan().state()

    def save_tflite(self, path) -> None:
        """Write this model (made of TFLite ops, as loaded from a .tflite file) as a .tflite file."""
        provided("save_tflite")(self, path)

    def pulse(self, symbol: str, size: int, outputs: Sequence[str | int] | None = None):
        """Streaming form: consume ``size`` frames of the axis whose length is ``symbol`` per push
        (a :class:`~tractile.pulse.PulsedModel`; see docs/STREAMING.md). ``outputs`` keeps only
        those outputs (names or positions), e.g. to drop an LSTM's final states."""
        return provided("pulse")(self, symbol, size, outputs)

    def profile(self, inputs, warmup: int = 3, iterations: int = 20, progress=None):
        """Time every node over repeated runs (see :class:`tractile.runtime.profile.ProfileReport`)."""
        return provided("profile")(self, inputs, warmup=warmup, iterations=iterations, progress=progress)

    def _runnable(self) -> TypedModel:
        return self


def _check_against_declared(name: str, declared: InferenceFact, given: InferenceFact) -> None:
    """Refuse an input fact that contradicts the model's declared shape: another rank, or a
    declared symbol given at another axis (``1,40,T`` for a model declared ``1,T,40``). Fixed
    dims may be overridden (a model exported with batch 1 run with a batch of N)."""
    known = declared.shape
    if known is None or given.shape is None or known.open or given.shape.open:
        return
    declared_dims, given_dims = list(known.dims), list(given.shape.dims)
    if not declared_dims or not given_dims:
        return
    problems = []
    if len(declared_dims) != len(given_dims):
        problems.append(f"{len(given_dims)} dims given, {len(declared_dims)} declared")
    else:
        where = {str(d): axis for axis, d in enumerate(declared_dims) if _is_symbol(d)}
        for axis, (want, got) in enumerate(zip(declared_dims, given_dims)):
            if want is None or got is None:
                continue
            if _is_symbol(got) and where.get(str(got), axis) != axis:
                problems.append(f"{got} is axis {where[str(got)]}, given at axis {axis}")
    if problems:
        shown = lambda fact: ",".join("?" if d is None else str(d) for d in fact.shape.dims)  # noqa: E731
        raise TractileError(f'input "{name}": the fact {shown(given)} contradicts the model\'s declared shape '
                            f"{shown(declared)} ({'; '.join(problems)})")


def _is_symbol(dim) -> bool:
    return isinstance(dim, TDim) and len(dim.symbols()) == 1 and str(dim) in dim.symbols()
