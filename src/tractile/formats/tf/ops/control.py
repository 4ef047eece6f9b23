"""TensorFlow functional control flow: PartitionedCall / StatefulPartitionedCall (inlined),
If / StatelessIf (tractile's If with one body per branch) and While / StatelessWhile
(tractile's Loop: its body runs TensorFlow's body then its condition on the new values).
"""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....fact import InferenceFact, ShapeFactoid
from ....ops import logic
from ....ops.control import Body, If
from ....ops.control_loop import Loop
from ....ops.reduce import Reduce
from ..loader import invariant_args
from ..registry import TfNode, Translated, tf_op


@tf_op("PartitionedCall", "StatefulPartitionedCall")
def call(node: TfNode):
    return node.scope.inline(node, node.func("f"), [node.input(i) for i in range(len(node.inputs))])


def as_flag(node: TfNode, outlet, suffix: str):
    """A condition as TensorFlow reads it: a bool scalar as is; a number is true when not zero."""
    dtype = node.scope.model.outlet_fact(outlet).dtype
    if dtype == DatumType.BOOL or dtype is None:
        return outlet
    zero = np.zeros((), dtype=dtype.np)
    equal = node.wire(f"{suffix}_is_zero", logic.Equal(), [outlet, zero])
    return node.wire(f"{suffix}_flag", logic.Not(), equal)[0]


@tf_op("If", "StatelessIf")
def if_(node: TfNode):
    args = [node.input(i) for i in range(1, len(node.inputs))]
    scope = node.scope
    then_model = scope.function_model(node, node.func("then_branch"), args)
    else_model = scope.function_model(node, node.func("else_branch"), args)
    positions = tuple(range(1, len(args) + 1))
    op = If(Body(then_model, f'then_branch of If node "{node.name}"'),
            Body(else_model, f'else_branch of If node "{node.name}"'), positions, positions)
    return Translated(op, [as_flag(node, node.input(0), "cond")] + args)


def _scalar_flag(scope, outlet, name: str):
    """A While condition's result as the bool scalar a Loop body returns."""
    fact = scope.model.outlet_fact(outlet)
    if fact.dtype not in (DatumType.BOOL, None):
        zero = np.zeros((), dtype=fact.dtype.np)
        outlet = scope.model.wire_node(f"{name}/is_zero", logic.Equal(), [outlet, scope.add_const(
            f"{name}/zero", zero)])[0]
        outlet = scope.model.wire_node(f"{name}/flag", logic.Not(), [outlet])[0]
    if fact.rank == 0:
        return outlet
    reduce = Reduce("max", None, False)  # a one-element tensor: its only item
    as_int = scope.model.wire_node(f"{name}/as_int", _Cast(DatumType.I32), [outlet])[0]
    reduced = scope.model.wire_node(f"{name}/scalar", reduce, [as_int])[0]
    return scope.model.wire_node(f"{name}/bool", _Cast(DatumType.BOOL), [reduced])[0]


def _Cast(dtype):  # noqa: N802 - reads as the op it makes
    from ....ops.cast import Cast

    return Cast(dtype)


@tf_op("While", "StatelessWhile")
def while_(node: TfNode):
    scope = node.scope
    args = [node.input(i) for i in range(len(node.inputs))]
    cond_name, body_name = node.func("cond"), node.func("body")
    first = scope.inline(node, cond_name, args)
    if len(first) != 1:
        raise node.error(f"the condition {cond_name!r} returns {len(first)} values, not one")
    first_flag = _scalar_flag(scope, first[0], f"{node.name}/first_cond")

    def then_condition(body_scope, outputs):
        if len(outputs) != len(args):
            raise node.error(f"the body {body_name!r} returns {len(outputs)} values for {len(args)} loop variables")
        flag = body_scope.inline(node, cond_name, outputs)
        return [_scalar_flag(body_scope, flag[0], "next_cond")] + outputs

    counters = [("iteration", InferenceFact(DatumType.I64, ShapeFactoid((), False))),
                ("condition", InferenceFact(DatumType.BOOL, ShapeFactoid((), False)))]
    invariants = invariant_args(scope.library.get(body_name, repr(node)))
    body = scope.function_model(node, body_name, args, counters, then_condition, invariants)
    op = Loop(Body(body, f'body of While node "{node.name}"'), len(args), has_trip_count=False, has_condition=True)
    return Translated(op, [first_flag] + args)
