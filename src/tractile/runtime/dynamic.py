"""Models typed and planned at their first run, once per input signature.

When analysis cannot finish before the inputs are seen (an input without a shape, a rank
that depends on data, as in silero-vad's If branches of different ranks), ``tractile.load``
returns a :class:`DynamicModel` instead of failing. A run's *signature* is each input's datum
type and shape, plus the value of the small integer inputs that decide an If or a shape (a
sample rate, a count). The first run with a signature types the model as loaded for those
facts, those values as constants (so that what they decide folds away), optimizes and plans
it; later runs with that signature reuse the plan, and another signature plans again.

Which inputs decide: integer or bool inputs of at most ``DECIDING_ITEMS`` items that reach an
If condition or a Loop's trip count or condition, and those whose value, left to run time,
leaves a dim or a rank of the plan to the data. An input seen with more than
``DECIDING_VALUES`` values stops being part of signatures when the model can be planned
without its value. At most ``PLANS`` plans are kept (the least recently used goes first).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..datum import DatumType
from ..dim import TDim, is_fresh
from ..errors import RunError, RunTimeFactsError
from ..fact import InferenceFact
from ..graph import OutletId
from .state import onnxruntime_call, order_inputs

#: an input value of at most this many items can be part of a signature
DECIDING_ITEMS = 16
#: an input seen with more distinct values than this stops being part of signatures
DECIDING_VALUES = 8
#: plans kept per model
PLANS = 32


class _Plan:
    """One signature's optimized model, and which inputs it still takes at run time."""

    def __init__(self, key: tuple, typed, runtime_inputs: tuple[int, ...], signature: str):
        self.key = key
        self.typed = typed
        self.runtime_inputs = runtime_inputs
        self.signature = signature


class DynamicModel:
    """A model typed, optimized and planned at its first run with each input signature.

    ``source`` is the model as loaded (with the facts and values given to ``load``);
    ``analysed`` the same, analysed as far as analysis goes: its facts are what
    ``input_facts`` and ``output_facts`` show. ``reason`` says why typing waits for a run.
    """

    def __init__(self, source, analysed, reason: str):
        self.source = source
        self.analysed = analysed
        self.reason = reason
        self._names = list(source.input_names())
        self._plans: OrderedDict[tuple, _Plan] = OrderedDict()
        self._deciding: dict[tuple, tuple[int, ...]] = {}
        self._required: dict[tuple, frozenset[int]] = {}
        self._seen: dict[int, set[bytes]] = {}
        self._lock = threading.RLock()
        self._controls = _inputs_reaching_controls(source)

    # what is known before a run ----------------------------------------------------------------
    def input_names(self) -> list[str]:
        return list(self._names)

    def output_names(self) -> list[str]:
        return self.source.output_names()

    @property
    def input_facts(self) -> list[InferenceFact]:
        return self.analysed.input_facts

    @property
    def output_facts(self) -> list[InferenceFact]:
        return self.analysed.output_facts

    def input_fact(self, which: int | str = 0) -> InferenceFact:
        return self.analysed.input_fact(which)

    def output_fact(self, which: int | str = 0) -> InferenceFact:
        return self.analysed.output_fact(which)

    @property
    def plans(self) -> list[tuple[str, Any]]:
        """The signatures planned so far (``"1,576,f32; 2,1,128,f32; sr=16000"``) and their
        optimized TypedModels, least recently used first."""
        with self._lock:
            return [(plan.signature, plan.typed) for plan in self._plans.values()]

    def __str__(self) -> str:
        facts = ", ".join(f"{n}: {f}" for n, f in zip(self._names, self.input_facts))
        return f"DynamicModel({facts}; typed at the first run of each input signature: {self.reason})"

    # running ----------------------------------------------------------------------------------
    def run(self, inputs, feed: Mapping[str, Any] | None = None):
        """Run once: as ``TypedModel.run`` (a list in, a list out; a dict in, a dict out;
        onnxruntime's ``run(None, feed)``), planning first for a new input signature."""
        return self.state().run(inputs, feed)

    def plan(self) -> DynamicModel:
        """Plans are made per input signature, at run time: the model stands for its plan."""
        return self

    def state(self, check_facts: bool = False) -> DynamicState:
        """A run state (one per thread): it keeps one state per signature it has run."""
        return DynamicState(self, check_facts)

    def typed_for(self, inputs):
        """The optimized TypedModel that runs ``inputs`` (a list, a dict by name or one array),
        typed and planned for their signature now if it is new: to inspect, compile or
        profile that form."""
        arrays, _ = self.checked_inputs(inputs)
        return self.planned(arrays).typed

    def checked_inputs(self, inputs) -> tuple[list[np.ndarray], bool]:
        """``inputs`` as arrays in input order, checked against the input facts analysis
        established (a RunError names the input); and whether they came as a dict."""
        ordered, as_dict = order_inputs(self._names, inputs)
        bindings: dict[str, int] = {}
        return [_checked(name, fact, value, bindings)
                for name, fact, value in zip(self._names, self.input_facts, ordered)], as_dict

    def planned(self, arrays: list[np.ndarray]) -> _Plan:
        """The plan of these checked inputs' signature (built now if it is new)."""
        with self._lock:
            shapes = tuple((a.dtype.str, a.shape) for a in arrays)
            if shapes not in self._deciding:
                self._explore(shapes, arrays)
            deciding = self._effective(shapes, arrays)
            key = shapes + tuple((i, arrays[i].tobytes()) for i in deciding)
            plan = self._plans.get(key)
            if plan is None:
                try:
                    typed = self._typed(arrays, deciding)
                except RunTimeFactsError:  # an input left out of signatures turns out to be needed
                    if deciding == self._deciding[shapes]:
                        raise
                    self._required[shapes] = frozenset(self._deciding[shapes])
                    return self.planned(arrays)
                plan = self._store(key, typed, arrays, deciding)
            self._plans.move_to_end(key)
            return plan

    # planning ---------------------------------------------------------------------------------
    def _explore(self, shapes: tuple, arrays: list[np.ndarray]) -> None:
        """The first run with these shapes: find the inputs whose values decide, keeping the
        plan built on the way."""
        candidates = [i for i, a in enumerate(arrays) if a.dtype.kind in "biu" and a.size <= DECIDING_ITEMS]
        deciding = [i for i in candidates if i in self._controls]
        required: frozenset[int] = frozenset()
        try:
            typed = self._typed(arrays, deciding)
        except RunTimeFactsError:
            if len(deciding) == len(candidates):
                raise
            deciding = candidates
            required = frozenset(candidates)
            typed = self._typed(arrays, deciding)
        extra = [i for i in candidates if i not in deciding and _decides_shape(typed, self._names[i])]
        if extra:
            deciding = sorted(deciding + extra)
            typed = self._typed(arrays, deciding)
        self._deciding[shapes] = tuple(deciding)
        self._required[shapes] = required
        self._store(shapes + tuple((i, arrays[i].tobytes()) for i in deciding), typed, arrays, tuple(deciding))

    def _effective(self, shapes: tuple, arrays: list[np.ndarray]) -> tuple[int, ...]:
        """The deciding inputs whose values are part of this signature: those not seen with
        too many values (unless the model cannot be typed without them)."""
        kept = []
        for index in self._deciding[shapes]:
            seen = self._seen.setdefault(index, set())
            if len(seen) <= DECIDING_VALUES:
                seen.add(arrays[index].tobytes())
            if len(seen) <= DECIDING_VALUES or index in self._required[shapes]:
                kept.append(index)
        return tuple(kept)

    def _typed(self, arrays: list[np.ndarray], deciding: Sequence[int]):
        """The model as loaded, typed for these arrays (``deciding`` ones as constants), optimized."""
        from ..ops.control import clone_inference_model

        model = clone_inference_model(self.source)
        for outlet, array in zip(model.inputs, arrays):
            model.set_outlet_fact(outlet, InferenceFact(DatumType.from_numpy(array.dtype), array.shape))
        if deciding:
            model.with_input_values({self._names[i]: arrays[i] for i in deciding})
        return model.into_optimized()

    def _store(self, key: tuple, typed, arrays: list[np.ndarray], deciding: Sequence[int]) -> _Plan:
        runtime = tuple(i for i in range(len(arrays)) if i not in deciding)
        shown = []
        for index, array in enumerate(arrays):
            if index in deciding:
                shown.append(f"{self._names[index]}={np.array2string(array, threshold=DECIDING_ITEMS)}")
            else:
                dims = ",".join(str(d) for d in array.shape)
                shown.append(f"{dims},{DatumType.from_numpy(array.dtype)}" if dims
                             else str(DatumType.from_numpy(array.dtype)))
        plan = _Plan(key, typed, runtime, "; ".join(shown))
        self._plans[key] = plan
        while len(self._plans) > PLANS:
            self._plans.popitem(last=False)
        return plan


class DynamicState:
    """Runs a :class:`DynamicModel`, with one run state per input signature it has seen
    (a stateful op's memory belongs to the signature's state)."""

    def __init__(self, model: DynamicModel, check_facts: bool = False):
        self.model = model
        self.check_facts = check_facts
        self._states: dict[tuple, Any] = {}

    def run(self, inputs, feed: Mapping[str, Any] | None = None):
        if feed is not None:
            names = onnxruntime_call(inputs, feed, self.model.output_names())
            outputs = self.run(dict(feed))
            return [outputs[name] for name in names]
        arrays, as_dict = self.model.checked_inputs(inputs)
        plan = self.model.planned(arrays)
        state = self._states.get(plan.key)
        if state is None:
            state = plan.typed.plan().state(check_facts=self.check_facts)
            self._states[plan.key] = state
            while len(self._states) > PLANS:
                self._states.pop(next(iter(self._states)))
        outputs = state.run([arrays[i] for i in plan.runtime_inputs])
        return dict(zip(self.model.output_names(), outputs)) if as_dict else outputs

    def reset(self) -> None:
        """Forget every signature's state (stateful ops start again)."""
        self._states.clear()


def _checked(name: str, fact: InferenceFact, value, bindings: dict[str, int]) -> np.ndarray:
    """``value`` as an array, against what analysis established about the input."""
    if value is None:
        raise RunError(f'input "{name}" is None: give an array ({fact})')
    if fact.kind is not None:
        raise RunError(f'input "{name}" is a {fact.kind}: this model is typed at its first run, for tensors only')
    dtype = fact.dtype.np if fact.dtype is not None else None
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as error:
            raise RunError(f'input "{name}": {type(value).__name__} cannot become an array of {fact.dtype} '
                           f"({error})") from None
    if dtype is not None and value.dtype != dtype:
        raise RunError(f'input "{name}": expected {fact} but got datum type {value.dtype}'
                       f" (convert it with .astype(np.{dtype.name}))")
    shape = fact.shape
    if shape.open:
        if len(shape.dims) > value.ndim:
            raise RunError(f'input "{name}": expected {fact} (at least {len(shape.dims)} dims) but got shape '
                           f"{value.shape}")
    elif len(shape.dims) != value.ndim:
        raise RunError(f'input "{name}": expected rank {len(shape.dims)} ({fact}) but got shape {value.shape}')
    for axis, (dim, actual) in enumerate(zip(shape.dims, value.shape)):
        if isinstance(dim, int) and dim != actual:
            raise RunError(f'input "{name}": expected {fact} but got shape {value.shape} (axis {axis} should be {dim})')
        if isinstance(dim, TDim) and len(dim.symbols()) == 1 and str(dim) in dim.symbols():
            bound = bindings.setdefault(str(dim), actual)
            if bound != actual:
                raise RunError(f'input "{name}": axis {axis} is {actual} but {dim} is already {bound} from '
                               "another input")
    return value


def _inputs_reaching_controls(model) -> set[int]:
    """Positions of the inputs whose values flow into an If condition or a Loop's trip count
    or condition (in the model's own graph)."""
    from ..ops.control import If
    from ..ops.control_loop import Loop

    found = set()
    for index, start in enumerate(model.inputs):
        seen, todo = {start.node}, [start]
        while todo and index not in found:
            outlet = todo.pop()
            for inlet in model.outlet_successors(outlet):
                op = model.nodes[inlet.node].op
                if (isinstance(op, If) and inlet.slot == 0) or (isinstance(op, Loop) and inlet.slot < 2):
                    found.add(index)
                    break
                if inlet.node not in seen:
                    seen.add(inlet.node)
                    todo.extend(OutletId(inlet.node, slot) for slot in range(len(model.nodes[inlet.node].outputs)))
    return found


def _decides_shape(typed, name: str) -> bool:
    """Whether a wire computed from input ``name`` of ``typed`` has a dim or a rank left to
    the data (which the input's value would settle)."""
    if name not in typed.input_names():
        return False
    start = typed.inputs[typed.input_index(name)]
    seen, todo = {start.node}, [start]
    while todo:
        outlet = todo.pop()
        for inlet in typed.outlet_successors(outlet):
            if inlet.node in seen:
                continue
            seen.add(inlet.node)
            for slot, out in enumerate(typed.nodes[inlet.node].outputs):
                fact = out.fact
                if fact.is_tensor and (not fact.has_rank or any(is_fresh(d) for d in fact.shape)):
                    return True
                todo.append(OutletId(inlet.node, slot))
    return False
