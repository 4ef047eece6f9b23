"""Resource variables and CALL_ONCE in the context: what persists across invocations.

Each variable (one per handle, as the interpreter's store keys them) is a member of the model's
context holding its value, with a flag saying it was assigned; READ_VARIABLE and
ASSIGN_VARIABLE copy to and from it, and a read before any assignment returns an error status
as the interpreter raises. CALL_ONCE's body runs inside ``if (!done)`` with its flag in the
context. ``NAME_reset`` zeroes the flags, so a reset context forgets the variables and runs
its CALL_ONCE bodies again, as ``state.reset()`` does. A :class:`~tractile.ops.resource.Program`
(the model whose body holds the variables) lowers its body inline.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...datum import DatumType
from ...graph import OutletId
from ...ops.resource import AssignVariable, CallOnce, Program, ReadVariable, VarHandle, real_outputs, resource_id
from ..bodies import body_model, copy_line, lower_body, step
from ..emit import Emit
from ..program import StateField
from ..registry import Unsupported, emitter


@dataclass
class Variable:
    """A resource variable's context members: its value and its "assigned" flag."""

    var: str
    flag: str
    dtype: DatumType
    shape: tuple[int, ...]


def _resources(e: Emit, kind: str) -> dict:
    return e.lowering.program.resources.setdefault(kind, {})


def _handle(e: Emit) -> tuple[int, str]:
    """The id and name of the variable of the node's handle input (whose value the code never reads)."""
    handle = e.input(0)
    e.code.inputs = [t for t in e.code.inputs if t is not handle]
    found = _resources(e, "handles").get(id(handle))
    if found is not None:
        return found
    if handle.value is not None and handle.value.size == 1:
        key = int(handle.value.reshape(-1)[0])
        return key, f"variable_{key}"
    raise Unsupported("the variable's handle must come from a VAR_HANDLE of the model or a constant")


def _variable(e: Emit, dtype: DatumType, shape: tuple[int, ...], use: str) -> Variable:
    key, name = _handle(e)
    variables = _resources(e, "variables")
    found = variables.get(key)
    if found is None:
        lowering = e.lowering
        var, flag = lowering.names.unique(f"variable_{name}", 48), lowering.names.unique(f"variable_{name}_set", 48)
        count = 1
        for dim in shape:
            count *= dim
        lowering.program.state += [StateField(var, dtype, count), StateField(flag, DatumType.U8, 1)]
        found = variables[key] = Variable(var, flag, dtype, tuple(shape))
    elif found.dtype != dtype or found.shape != tuple(shape):
        raise Unsupported(f"variable {name!r} is {use} as {dtype}{list(shape)} but elsewhere as "
                          f"{found.dtype}{list(found.shape)}")
    return found


@emitter(VarHandle)
def var_handle(e: Emit) -> None:
    op: VarHandle = e.op
    key = resource_id(op.container, op.shared_name)
    y = e.output(0)
    _resources(e, "handles")[id(y)] = (key, op.shared_name or f"variable_{key}")
    e.set_kernel("(handle)")
    model = e.lowering.model
    readers = [model.nodes[inlet.node].op for inlet in e.node.outputs[0].successors]
    if all(isinstance(reader, (ReadVariable, AssignVariable)) and inlet.slot == 0
           for reader, inlet in zip(readers, e.node.outputs[0].successors)) \
            and OutletId(e.node.id, 0) not in model.outputs:
        return  # only variables' ops take it, and they know their variable when compiled
    y.used = True
    e.line(f"{y.var}[0] = {key};")


@emitter(ReadVariable)
def read_variable(e: Emit) -> None:
    op: ReadVariable = e.op
    y = e.output(0)
    variable = _variable(e, op.dtype, y.shape, "read")
    status = e.failure("the variable is read before anything was assigned to it")
    e.line(f"if (!ctx->{variable.flag}[0]) return {status};")
    if y.nbytes:
        y.used = True
        e.line(f"memcpy({y.var}, ctx->{variable.var}, {y.nbytes});")
    e.set_kernel("(read variable)")


@emitter(AssignVariable)
def assign_variable(e: Emit) -> None:
    value = e.input(1)
    variable = _variable(e, value.dtype, value.shape, "assigned")
    if value.nbytes:
        value.used = True
        e.line(f"memcpy(ctx->{variable.var}, {value.var}, {value.nbytes});")
    e.line(f"ctx->{variable.flag}[0] = 1;")
    e.set_kernel("(assign variable)")


@emitter(CallOnce)
def call_once(e: Emit) -> None:
    op: CallOnce = e.op
    flags = _resources(e, "call_once")
    flag = flags.get(id(op.init.source))
    if flag is None:
        flag = flags[id(op.init.source)] = e.lowering.node_var(e.node.name, "done")
        e.lowering.program.state.append(StateField(flag, DatumType.U8, 1))
    model = body_model(op.init, [], "the initialisation body")
    step(e, "call once", [f"if (!ctx->{flag}[0]) {{"])
    lower_body(e, model, [], "init")
    e.line(f"  ctx->{flag}[0] = 1;")
    e.line("}")
    e.set_kernel("(control)")


@emitter(Program)
def program(e: Emit) -> None:
    op: Program = e.op
    facts = [e.lowering.model.outlet_fact(o) for o in e.node.inputs]
    model = body_model(op.body, facts, "the model's main graph")
    count = real_outputs(op.body.source)
    results = lower_body(e, model, e.inputs, "main", bound=dict(enumerate(e.outputs[:count])), depth=0,
                         scoped=False)
    for out, result in zip(e.outputs, results[:count]):
        if result.dtype != out.dtype or result.nbytes != out.nbytes:
            raise Unsupported(f"the main graph gives {result.fact} for {out.fact}")
        for line in copy_line(out, result):
            e.line(line)
    e.code.inputs.extend(results)
    e.set_kernel("(program)")
