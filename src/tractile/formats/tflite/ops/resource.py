"""Translations of the resource-variable operators and CALL_ONCE (both directions)."""
from __future__ import annotations

from ....errors import ModelFormatError
from ....ops.control import Body
from ....ops.resource import AssignVariable, CallOnce, ReadVariable, VarHandle
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else (value or "")


@tflite_op("VAR_HANDLE")
def var_handle(node: TflNode):
    options = node.options("VarHandleOptions")
    if options is None:
        return VarHandle()
    return VarHandle(container=_text(options.Container()), shared_name=_text(options.SharedName()))


@tflite_writer(VarHandle)
def write_var_handle(op: VarHandle, ctx) -> OpSpec:
    fields = {"Container": op.container, "SharedName": op.shared_name}
    return OpSpec("VAR_HANDLE", ("VarHandleOptions", fields), [], output_types={0: "RESOURCE"})


@tflite_op("READ_VARIABLE")
def read_variable(node: TflNode):
    output = node.output(0)
    if any(d < 0 for d in output.shape):
        raise ModelFormatError(f"{node.where}: variables of unknown shape are not supported")
    return Translated(ReadVariable(shape=tuple(output.shape), dtype=output.dtype, qparams=node.output_quant()), [0])


@tflite_writer(ReadVariable)
def write_read_variable(op: ReadVariable, ctx) -> OpSpec:
    return OpSpec("READ_VARIABLE", ("ReadVariableOptions", {}), [0])


@tflite_op("ASSIGN_VARIABLE")
def assign_variable(node: TflNode):
    return Translated(AssignVariable(), [0, 1])


@tflite_writer(AssignVariable)
def write_assign_variable(op: AssignVariable, ctx) -> OpSpec:
    return OpSpec("ASSIGN_VARIABLE", ("AssignVariableOptions", {}), [0, 1], outputs=[])


@tflite_op("CALL_ONCE")
def call_once(node: TflNode):
    options = node.options("CallOnceOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing CallOnceOptions")
    init = node.subgraph_model(options.InitSubgraphIndex())
    return Translated(CallOnce(init=Body(init, "the CALL_ONCE subgraph")), [])


@tflite_writer(CallOnce)
def write_call_once(op: CallOnce, ctx) -> OpSpec:
    return OpSpec("CALL_ONCE", ("CallOnceOptions", {"InitSubgraphIndex": ctx.subgraph(op.init.source)}), [],
                  outputs=[])
