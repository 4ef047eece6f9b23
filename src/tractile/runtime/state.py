"""Run state: binds symbols from the inputs, evaluates the plan, frees values early."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..datum import DatumType
from ..dim import TDim
from ..errors import RunError, TractileError
from ..fact import OPTIONAL, SEQUENCE, TENSOR, InferenceFact, TypedFact
from ..ops.base import Limits, end_deadline, start_deadline
from ..ops.tensor_list import UnsetItem
from .fused import build_program
from .plan import SimplePlan, direct_call


class SimpleState:
    """Runs a :class:`SimplePlan`; holds the per-run memory of stateful ops.

    One state per thread: states share the plan (read-only) but nothing else.
    """

    def __init__(self, plan: SimplePlan, check_facts: bool = False):
        self.plan = plan
        self.check_facts = check_facts
        self.bindings: dict[str, int] = {}
        self.op_states: dict[int, Any] = {}
        self._program = []  # one entry per plan step (profiles time them one by one)
        for index, step in enumerate(plan.steps):
            if step.op.is_stateless:
                evaluate = step.op.eval
            else:
                op_state = step.op.state()
                self.op_states[index] = op_state
                evaluate = op_state.eval
            self._program.append((evaluate, step.inputs, step.outputs, step.frees))
        # what runs: element-wise runs fused, one-output steps apart (their result stored directly)
        self._fused = build_program(plan, [entry[0] for entry in self._program])
        self._runs = [(evaluate, reads, writes[0] if len(writes) == 1 else -1, writes, frees)
                      for evaluate, reads, writes, frees, _ in self._fused]
        self._checkers = [self._input_checker(name, fact) for name, fact in zip(plan.input_names, plan.input_facts)]
        self._template: list[Any] = [None] * plan.slot_count
        for slot, value in plan.constants.items():
            self._template[slot] = value
        self._direct = direct_call(plan, self.op_states)
        # the direct call's own quick form (a compiled segment's fast_run), where the plan adds nothing
        self._fast = None if self._direct is None or check_facts or self._direct[1:] != (None, None) \
            else getattr(self.op_states[0], "fast_run", None)

    def reset(self) -> None:
        """Forget what stateful ops remember (start a new stream)."""
        for op_state in self.op_states.values():
            op_state.reset()

    # inputs ---------------------------------------------------------------------------------
    def _ordered_inputs(self, inputs) -> tuple[list, bool]:
        return order_inputs(self.plan.input_names, inputs)

    def _input_checker(self, name: str, fact: TypedFact):
        """A function ``(value, bindings) -> checked value`` for one input, built once.

        Inputs whose shape is fully known are checked with one datum type and one shape
        comparison; the general check (symbols, containers, conversions) runs otherwise and
        on any mismatch, to say what is wrong.
        """
        general = self._check_input
        if fact.kind != TENSOR or not fact.is_concrete() \
                or fact.dtype == DatumType.STRING:
            return lambda value, bindings: general(name, fact, value, bindings)
        assert fact.dtype is not None  # a concrete fact
        dtype, shape = fact.dtype.np, tuple(fact.shape)

        def check(value, bindings):
            if type(value) is np.ndarray and value.dtype == dtype and value.shape == shape:
                return value
            return general(name, fact, value, bindings)

        return check

    def _check_input(self, name: str, fact: TypedFact, value, bindings: dict[str, int]) -> np.ndarray:
        if fact.kind != TENSOR:
            return check_container_value(fact, value, f'input "{name}"')
        assert fact.dtype is not None  # a typed tensor fact
        expected = fact.dtype.np
        if value is None:
            raise RunError(f'input "{name}" is None: give an array ({fact})')
        if not isinstance(value, np.ndarray):
            try:
                value = np.asarray(value, dtype=expected)
            except (TypeError, ValueError, OverflowError) as error:
                raise RunError(f'input "{name}": {type(value).__name__} cannot become an array of {fact.dtype} '
                               f"({error})") from None
        if value.dtype != expected and not (fact.dtype == DatumType.STRING and value.dtype.kind in "OUS"):
            raise RunError(f'input "{name}": expected {fact} but got datum type {value.dtype}'
                           f" (convert it with .astype(np.{expected.name}))")
        if not fact.has_rank:  # a rank that depends on data: only a bound to check
            if fact.max_rank is not None and value.ndim > fact.max_rank:
                raise RunError(f'input "{name}": expected {fact} but got shape {value.shape}')
            return value
        if value.ndim != len(fact.shape):
            raise RunError(f'input "{name}": expected rank {len(fact.shape)} ({fact}) '
                           f"but got shape {value.shape}")
        for axis, (dim, actual) in enumerate(zip(fact.shape, value.shape)):
            if isinstance(dim, int):
                if dim != actual:
                    raise RunError(f'input "{name}": expected {fact} but got shape {value.shape} '
                                   f"(axis {axis} should be {dim})")
            elif len(dim.terms) == 1 and dim.terms[0][1] == 1 and len(dim.terms[0][0]) == 1 \
                    and isinstance(dim.terms[0][0][0], str):
                symbol = dim.terms[0][0][0]
                bound = bindings.setdefault(symbol, actual)
                if bound != actual:
                    raise RunError(f'input "{name}": axis {axis} is {actual} but {symbol} is already {bound} '
                                   "from another input")
        for axis, (dim, actual) in enumerate(zip(fact.shape, value.shape)):
            if isinstance(dim, TDim) and dim.symbols() <= bindings.keys():
                if dim.eval(bindings) != actual:
                    raise RunError(f'input "{name}": axis {axis} is {actual} but should be {dim} '
                                   f"= {dim.eval(bindings)} with {bindings}")
        return value

    # running --------------------------------------------------------------------------------
    def run(self, inputs: Sequence[Any] | Mapping[str, Any] | None, feed: Mapping[str, Any] | None = None):
        """Run the plan. A list in gives a list out; a dict in gives a dict by output name.

        onnxruntime's form works too: ``run(output_names, feed)`` (``output_names`` a list of
        names or None for all) gives the listed outputs as a list, in that order."""
        fast = self._fast
        if fast is not None and feed is None and type(inputs) is list and Limits.max_run_seconds is None:
            try:
                outputs = fast(inputs)
            except STEP_ERRORS as error:
                raise step_error(error, self.plan.steps[0]) from (None if isinstance(error, TractileError) else error)
            if outputs is not None:
                return outputs
        if feed is not None:
            names = onnxruntime_call(inputs, feed, self.plan.output_names)
            outputs = self.run(dict(feed))
            return [outputs[name] for name in names]
        plan = self.plan
        if type(inputs) is list and len(inputs) == len(plan.input_slots):
            ordered, as_dict = inputs, False
        else:
            ordered, as_dict = self._ordered_inputs(inputs)
        if self._direct is not None and not self.check_facts and Limits.max_run_seconds is None:
            outputs = self._run_direct(ordered)
            return dict(zip(plan.output_names, outputs)) if as_dict else outputs
        token = start_deadline() if Limits.max_run_seconds is not None else None
        try:
            values, fed = self._execute(ordered)
        finally:
            end_deadline(token)
        outputs = [_detached(values[slot], fed) for slot in plan.output_slots]
        if as_dict:
            return dict(zip(plan.output_names, outputs))
        return outputs

    def _run_direct(self, ordered: Sequence[Any]) -> list:
        call, reads, gives = self._direct
        bindings: dict[str, int] = {}
        checked = [check(value, bindings) for check, value in zip(self._checkers, ordered)]
        self.bindings = bindings
        try:
            outputs = call(checked if reads is None else [checked[i] for i in reads])
        except STEP_ERRORS as error:
            raise step_error(error, self.plan.steps[0]) from (None if isinstance(error, TractileError) else error)
        return outputs if gives is None else [outputs[i] for i in gives]

    def run_nested(self, inputs: list) -> list:
        """Run from inside another op (a control-flow body, a subgraph): inputs in order,
        outputs as produced, without the defensive copies ``run`` makes for callers."""
        if len(inputs) != len(self.plan.input_slots):
            self._ordered_inputs(inputs)
        values, _ = self._execute(inputs)
        return [values[slot] for slot in self.plan.output_slots]

    def _execute(self, ordered: Sequence[Any]) -> tuple[list, list]:
        """Check and bind the inputs, run every step; return the slot values and the input arrays."""
        plan = self.plan
        bindings: dict[str, int] = {}
        values = self._template.copy()
        fed = []
        for slot, check, value in zip(plan.input_slots, self._checkers, ordered):
            checked = check(value, bindings)
            values[slot] = checked
            if isinstance(checked, np.ndarray):
                fed.append(checked)
            else:
                fed.extend(_arrays_in(checked))
        self.bindings = bindings
        if self.check_facts:
            self._run_checked(values, bindings)
            return values, fed
        index = 0
        try:
            with np.errstate(all="ignore"):
                # index names the failing entry in the handler below
                for index, (evaluate, reads, single, writes, frees) in enumerate(self._runs):  # noqa: B007
                    results = evaluate([values[i] for i in reads])
                    if single >= 0:
                        values[single] = results[0]
                    else:
                        for slot, result in zip(writes, results):
                            values[slot] = result
                    for slot in frees:
                        values[slot] = None
        except STEP_ERRORS as error:
            step = self._failing_step(index, values, error)
            raise step_error(error, step) from (None if isinstance(error, TractileError) else error)
        return values, fed

    def _failing_step(self, index: int, values: list, error: Exception):
        """The plan step that raised ``error`` in program entry ``index``: a fused run is
        re-run step by step (its steps are stateless) to find it."""
        steps = self._fused[index][4]
        if len(steps) == 1:
            return self.plan.steps[steps[0]]
        value = values[self.plan.steps[steps[0]].inputs[0]]
        with np.errstate(all="ignore"):
            for step_index in steps:
                try:
                    value = self._program[step_index][0]([value])[0]
                except STEP_ERRORS:
                    return self.plan.steps[step_index]
        return self.plan.steps[steps[-1]]

    def _run_checked(self, values: list, bindings: dict[str, int]) -> None:
        from ..ops.base import CHECKING_FACTS

        token = CHECKING_FACTS.set(True)
        try:
            with np.errstate(all="ignore"):
                self._run_checked_steps(values, bindings)
        finally:
            CHECKING_FACTS.reset(token)

    def _run_checked_steps(self, values: list, bindings: dict[str, int]) -> None:
        from .check import check_step_outputs

        for index, step in enumerate(self.plan.steps):
            try:
                results = self._program[index][0]([values[i] for i in step.inputs])
            except STEP_ERRORS as error:
                raise step_error(error, step) from (None if isinstance(error, TractileError) else error)
            check_step_outputs(step, results, bindings)
            for slot, result in zip(step.outputs, results):
                values[slot] = result
            for slot in step.frees:
                values[slot] = None


def order_inputs(names: Sequence[str], inputs, what: str = "the model") -> tuple[list, bool]:
    """Inputs as a list in ``names`` order, and whether they came as a dict by name.

    Accepts a dict by name, a sequence in order, or a single array; a RunError says what is
    missing or unknown.
    """
    if inputs is None or isinstance(inputs, (str, bytes, bytearray)):
        got = "None" if inputs is None else type(inputs).__name__
        raise RunError(f"{what} takes its inputs as a list in order ({', '.join(names)}), a dict by name or one "
                       f"array; got {got}")
    if isinstance(inputs, (int, float, complex, np.generic)):
        inputs = [inputs]
    if isinstance(inputs, Mapping):
        unknown = [k for k in inputs if k not in names]
        if unknown:
            raise RunError(f"unknown input(s) {', '.join(map(repr, unknown))}; the inputs of {what} are "
                           + ", ".join(names))
        missing = [n for n in names if n not in inputs]
        if missing:
            raise RunError(f"missing input(s): {', '.join(missing)}")
        return [inputs[name] for name in names], True
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    try:
        inputs = list(inputs)
    except TypeError:
        raise RunError(f"{what} takes its inputs as a list in order ({', '.join(names)}), a dict by name or one "
                       f"array; got {type(inputs).__name__}") from None
    if len(inputs) != len(names):
        raise RunError(f"{what} takes {len(names)} input(s) ({', '.join(names)}), {len(inputs)} given")
    for name, value in zip(names, inputs):
        if value is None:
            raise RunError(f'input "{name}" is None: give an array')
    return inputs, False


#: what an op may raise on bad run-time data; both run paths turn it into an error naming the node
STEP_ERRORS = (TractileError, ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, MemoryError)


def step_error(error: Exception, step) -> TractileError:
    """The error of a failing step, as the user sees it: a TractileError naming the node."""
    if not isinstance(error, TractileError):
        error = RunError(f"{type(error).__name__}: {error}")
    return _at_node(error, step)


def _at_node(error: TractileError, step) -> TractileError:
    from ..errors import node_label

    node = step.node
    label = node_label(node)
    if label in str(error):
        return error
    enriched = type(error)(f"{label}: {error}") if type(error) in (RunError, TractileError) else error
    return enriched


def _arrays_in(value) -> list[np.ndarray]:
    """The tensors a sequence or optional value holds."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, list):
        return [array for item in value for array in _arrays_in(item)]
    return []


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _detached(value, fed: list[np.ndarray]) -> Any:
    """Return outputs the caller may modify: copy constants and views of the inputs."""
    if not isinstance(value, np.ndarray):
        if value is None:
            return None
        if isinstance(value, list):
            return [_detached(item, fed) for item in value]
        return np.asarray(value)
    if not value.flags.writeable:
        return value.copy()
    if value.base is None:  # owns its memory: a view of nothing, so of no input either
        return value.copy() if any(value is x for x in fed) else value
    if fed:
        root = _root(value)
        if any(root is _root(x) for x in fed):
            return value.copy()
    return value


def check_container_value(fact, value, where: str):
    """Check a sequence (list of tensors) or optional (value or None) against its fact.

    ``fact`` is a container TypedFact or InferenceFact; what it holds is checked as far as
    its element fact is known (named dims of elements are not bound: they may vary).
    Returns the value with tuples turned into lists and items into arrays.
    """
    if fact.kind == OPTIONAL:
        if value is None:
            return None
        return _check_element(fact.element, value, f"{where} (optional)")
    if fact.kind == SEQUENCE:
        if not isinstance(value, (list, tuple)):
            raise RunError(f"{where}: expected a sequence (a list of tensors), got {type(value).__name__}")
        return [_check_element(fact.element, item, f"{where}[{index}]") for index, item in enumerate(value)]
    return _check_element(fact, value, where)


def _check_element(fact: InferenceFact | None, value, where: str):
    if isinstance(value, UnsetItem):
        return value
    if fact is not None and fact.kind is not None:
        return check_container_value(fact, value, where)
    if isinstance(value, (list, tuple)) or value is None:
        raise RunError(f"{where}: expected a tensor, got {type(value).__name__}")
    if fact is None:
        return np.asarray(value)
    if not isinstance(value, np.ndarray):
        value = np.asarray(value, dtype=None if fact.dtype is None else fact.dtype.np)
    if fact.dtype is not None and value.dtype != fact.dtype.np and \
            not (fact.dtype == DatumType.STRING and value.dtype.kind in "OUS"):
        raise RunError(f"{where}: expected datum type {fact.dtype}, got {value.dtype}")
    if not fact.shape.open:
        if value.ndim != len(fact.shape.dims):
            raise RunError(f"{where}: expected a tensor of shape ({fact.shape}), got shape {value.shape}")
        for axis, (dim, actual) in enumerate(zip(fact.shape.dims, value.shape)):
            if isinstance(dim, int) and dim != actual:
                raise RunError(f"{where}: expected shape ({fact.shape}), got shape {value.shape} (axis {axis})")
    return value


def onnxruntime_call(output_names, feed, known: Sequence[str]) -> list[str]:
    """The outputs asked for by onnxruntime's ``run(output_names, feed)`` form, checked."""
    if not isinstance(feed, Mapping):
        raise TractileError("run(output_names, feed): feed must be a dict of input name to array "
                            f"(onnxruntime's form), got {type(feed).__name__}; or call run(feed)")
    if output_names is None:
        return list(known)
    if isinstance(output_names, str) or not isinstance(output_names, Sequence):
        raise TractileError("run(output_names, feed): output_names must be a list of output names or None, "
                            f"got {output_names!r}")
    unknown = [name for name in output_names if name not in known]
    if unknown:
        raise TractileError(f"no output named {', '.join(map(repr, unknown))}; the model's outputs are "
                            f"{', '.join(map(repr, known))}")
    return list(output_names)

