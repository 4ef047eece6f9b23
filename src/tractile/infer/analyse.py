"""Graph-level static analysis: forward and backward sweeps until a fixed point.

Per node, the op's declarative rules run first (they can move information both
ways); then, once every input fact is complete, the op's typed ``output_facts``
fills in the outputs; and when every input value is known, the op is evaluated
so that values (including symbolic shape computations) flow on. Evaluation is
skipped when it would create a constant much larger than the constants it reads
(the TFDeploy heuristic: ``ConstantOfShape([1000, 1000])`` stays an op).
"""
from __future__ import annotations

import numpy as np

from ..datum import DatumType
from ..dim import TDim, is_fresh
from ..errors import AnalysisError, TractileError, with_node_context
from ..fact import InferenceFact, ShapeFactoid, TypedFact
from ..fact_unify import unify
from ..graph import OutletId
from ..ops.io import Const, Source
from .rules import Solver

#: a folded value may hold at most this many elements more than the values it reads
FOLD_ALLOWANCE = 256
#: symbolic (int/TDim) values are only propagated while this small
SYMBOLIC_VALUE_LIMIT = 64
_STRING = DatumType.STRING
_UNKNOWN = InferenceFact()


def fold_limit(inputs: list[InferenceFact]) -> int:
    """How many elements a value computed from these inputs may have to be worth keeping."""
    read = sum(int(f.value.size) for f in inputs if f.value is not None)
    return max(2 * read, FOLD_ALLOWANCE)


def _forget_fresh(fact: TypedFact) -> InferenceFact:
    if not fact.is_tensor or not fact.has_rank:
        return InferenceFact.from_typed(fact)
    dims = tuple(None if is_fresh(d) else d for d in fact.shape)
    value = fact.known_value()
    return InferenceFact(fact.dtype, ShapeFactoid(dims, False), value)


def _concrete_or_symbolic(value: np.ndarray) -> np.ndarray | None:
    if value.dtype != object:
        return value
    flat = value.ravel().tolist()
    if all(isinstance(v, (int, np.integer)) for v in flat):
        return np.asarray(flat, dtype=np.int64).reshape(value.shape)
    if value.size <= SYMBOLIC_VALUE_LIMIT and all(isinstance(v, (int, np.integer, TDim)) for v in flat):
        return value
    return None


def infer_node(op, inputs: list[InferenceFact], outputs: list[InferenceFact]):
    """Apply an op's rules, typed facts and evaluation to its port facts."""
    if op.rules_in_output_facts and all(f.is_complete() for f in inputs):
        try:
            return inputs, _typed_outputs(op, inputs, outputs)
        except AnalysisError:
            pass  # the rules say what is wrong in their words
    solver = Solver(inputs, outputs)
    op.rules(solver, solver.inputs, solver.outputs)
    solver.solve()
    inputs, outputs = solver.result()
    if not all(f.is_complete() for f in inputs):
        return inputs, outputs
    return inputs, _typed_outputs(op, inputs, outputs)


def _typed_outputs(op, inputs: list[InferenceFact], outputs: list[InferenceFact]) -> list[InferenceFact]:
    """The output facts from the op's typed ``output_facts`` (inputs complete), values evaluated."""
    typed = op.output_facts([f.to_typed() for f in inputs])
    outputs = [unify(o, _forget_fresh(t)) for o, t in zip(outputs, typed)]
    if (op.is_stateless and not op.is_random and all(f.value is not None for f in inputs)
            and any(o.value is None for o in outputs) and all(o.is_tensor for o in outputs)):
        outputs = _propagate_values(op, inputs, outputs)
    return outputs


def _propagate_values(op, inputs, outputs):
    limit = fold_limit(inputs)
    for fact in outputs:
        dims = fact.shape.dims
        if fact.shape.is_complete() and all(isinstance(d, int) for d in dims):
            if int(np.prod(dims, dtype=np.int64)) > limit:
                return outputs
    symbolic = any(f.value.dtype == object and f.dtype != _STRING for f in inputs)
    try:
        with np.errstate(all="ignore"):
            values = op.eval([f.value for f in inputs])
    except TractileError:
        if symbolic:
            return outputs
        raise
    except Exception as error:
        if symbolic:
            return outputs
        raise AnalysisError(f"evaluating on constant inputs failed: {error!r}") from error
    result = []
    for fact, value in zip(outputs, values):
        value = np.asarray(value)
        if fact.dtype == _STRING:
            kept = value
        else:
            kept = _concrete_or_symbolic(value) if value.size <= limit else None
        result.append(fact if kept is None else unify(fact, InferenceFact(fact.dtype, None, kept)))
    return result


def analyse_node(model, node_id: int) -> bool:
    """Infer one node; write back what it learnt. Return True if any fact changed."""
    return bool(_analyse_node(model, model.nodes[node_id]))


def _analyse_node(model, node) -> list[OutletId]:
    """Infer one node; write back what it learnt. Return the wires whose fact changed."""
    if isinstance(node.op, Source):
        return []
    if isinstance(node.op, Const):
        return _analyse_const(model, node)
    inputs = [model.outlet_fact(o) for o in node.inputs]
    outputs = [o.fact for o in node.outputs]
    try:
        new_inputs, new_outputs = infer_node(node.op, inputs, outputs)
    except AnalysisError as error:
        raise with_node_context(error, node, inputs) from None
    except TractileError:
        raise
    except Exception as error:  # an op bug must still reach the user as a TractileError
        raise with_node_context(AnalysisError(f"internal error: {error!r}"), node, inputs) from error
    changed = []
    for outlet, old, new in zip(node.inputs, inputs, new_inputs):
        if new != old:
            current = model.outlet_fact(outlet)
            try:
                merged = unify(current, new)
            except AnalysisError as error:
                raise with_node_context(error, node, inputs) from None
            if merged != current:
                model.set_outlet_fact(outlet, merged)
                changed.append(outlet)
    for slot, (old, new) in enumerate(zip(outputs, new_outputs)):
        if new != old:
            model.set_outlet_fact(OutletId(node.id, slot), new)
            changed.append(OutletId(node.id, slot))
    return changed


def _analyse_const(model, node) -> list[OutletId]:
    """A constant's fact is its value's (what its rules say, without a solver)."""
    outlet = node.outputs[0]
    value = node.op.value
    if outlet.fact.value is not None and outlet.fact.value is value:
        return []
    if value.dtype != object and outlet.fact == _UNKNOWN:
        outlet.fact = InferenceFact(DatumType.from_numpy(value.dtype), ShapeFactoid(value.shape, False))
        outlet.fact.value = value
        return [OutletId(node.id, 0)]
    try:
        fact = unify(outlet.fact, InferenceFact.from_typed(node.op.output_facts([])[0]))
    except AnalysisError as error:
        raise with_node_context(error, node) from None
    if fact == outlet.fact:
        return []
    outlet.fact = fact
    return [OutletId(node.id, 0)]


def analyse(model, obstinate: bool = False, max_sweeps: int = 64) -> None:
    """Alternate forward and backward sweeps over the evaluation order until no fact changes.

    The first sweep infers every node; later ones only the nodes next to a wire whose fact
    changed after they were last inferred (inferring a node again on unchanged facts would
    learn nothing), so a graph whose facts settle in one forward sweep costs one sweep.
    With ``obstinate``, a node that fails is skipped instead of stopping the analysis
    (useful to dump a broken model as far as it can be understood).
    """
    order = model.eval_order()
    pending = set(order)
    for sweep in range(max_sweeps):
        if not pending:
            return
        for node_id in (order if sweep % 2 == 0 else reversed(order)):
            if node_id not in pending:
                continue
            pending.discard(node_id)
            node = model.nodes[node_id]
            try:
                changed = _analyse_node(model, node)
            except AnalysisError:
                if not obstinate:
                    raise
                continue
            for outlet in changed:
                if outlet.node != node_id:
                    pending.add(outlet.node)
                pending.update(inlet.node for inlet in model.outlet_successors(outlet) if inlet.node != node_id)
