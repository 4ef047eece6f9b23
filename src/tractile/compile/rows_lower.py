"""The C of a region computed by rows (:mod:`.rows`): one node holding a loop over a table of
steps, each a few rows of one layer with that layer's own kernel.

Layers are lowered by their usual emitters. A windowed layer's kernel call is recorded and
replayed with the step's rows (:data:`~.bands.ROW_ARGS` says which arguments are rows); an
element-wise layer is emitted for a tensor of one row and replayed row by row; a global
average pool's call becomes a sum of the rows into an accumulator and a last division
(:data:`REDUCERS`). All three are keyed by C kernel names, not by op classes.
"""
from __future__ import annotations

import numpy as np

from ..datum import DatumType
from ..graph import OutletId
from .bands import ROW_ARGS, BandEmit
from .ctext import comment_text
from .emit import Emit, call_text
from .program import ARENA, CTensor, NodeCode, Overlap
from .registry import Unsupported, find_emitter
from .rows import Region, RowSchedule, schedule_region

#: average pool kernel -> (row-sum kernel, finishing kernel, accumulator type, argument positions of
#: input, output, channels, rows, columns, low, high in the pool's call)
REDUCERS: dict[str, tuple[str, str, DatumType, tuple[int, ...]]] = {
    "tl_avg_pool_nhwc_s8": ("tl_sum_rows_s8", "tl_avg_finish_s8", DatumType.I32, (0, 1, 5, 3, 4, 14, 15)),
    "tl_avg_pool_nhwc_s8_dsp": ("tl_sum_rows_s8", "tl_avg_finish_s8", DatumType.I32, (0, 1, 5, 3, 4, 14, 15)),
    "tl_avg_pool_nhwc_s16": ("tl_sum_rows_s16", "tl_avg_finish_s16", DatumType.I32, (0, 1, 5, 3, 4, 14, 15)),
    "tl_avg_pool_nhwc_f32": ("tl_sum_rows_f32", "tl_avg_finish_f32", DatumType.F32, (0, 1, 5, 3, 4, 14, 15)),
    "tl_avg_pool_host_f32": ("tl_sum_rows_f32", "tl_avg_finish_f32", DatumType.F32, (0, 1, 5, 3, 4, 14, 15)),
}

#: fields of a step in the table: layer, output buffer row, output rows, top padding, shift source
#: row, rows shifted, then (buffer row, rows) per streamed input
FIXED_FIELDS = 6


class RowsEmit(BandEmit):
    """A layer's emitter with inputs of our choosing: calls recorded (``written`` False), or
    written as lines, like every other statement (layers emitted for one row, replayed row by
    row)."""

    def __init__(self, lowering, node, code: NodeCode, inputs: list[CTensor], written: bool):
        super().__init__(lowering, node, code, inputs)
        self.written = written

    def call(self, function: str, *args) -> None:
        (Emit.call if self.written else BandEmit.call)(self, function, *args)

    def line(self, text: str) -> None:
        Emit.line(self, text)


def _record(lowering, node, inputs: list[CTensor], output: CTensor, written: bool = False) -> tuple[RowsEmit, NodeCode]:
    code = NodeCode(node.id, node.name, node.op.name, "", outputs=[output])
    recorder = RowsEmit(lowering, node, code, inputs, written)
    emitter = find_emitter(node.op)
    if emitter is None:
        raise Unsupported(f"the compiler has no C lowering for {node.op.name}")
    emitter(recorder)
    return recorder, code


def _row_tensor(lowering, tensor: CTensor, role: str) -> CTensor:
    """One row of ``tensor`` behind a local pointer of the step's code."""
    shape = (1, 1, *tensor.shape[2:])
    return CTensor(lowering.names.unique(f"tl_row_{role}"), tensor.dtype, shape, ARENA, tensor.qparams)


def lower_region(lowering, region: Region) -> NodeCode:
    """One node of code computing ``region`` step by step (see the module's docstring)."""
    model = lowering.model
    schedule = schedule_region(model, region)
    nodes = [model.nodes[layer.node] for layer in schedule.layers]
    lowering._step = len(lowering.program.nodes)
    last = nodes[-1]
    names = ", ".join(f"#{n.id}" for n in nodes)
    comment = comment_text(f"nodes {names} by rows, {region.rows} output row{'s' if region.rows > 1 else ''} a "
                           f"step, line buffers of {schedule.buffer_bytes} B")
    code = NodeCode(last.id, last.name, "Rows(" + ", ".join(n.op.name for n in nodes) + ")", comment,
                    members=region.nodes)
    emit = Emit(lowering, nodes[0], code)
    whole: dict[OutletId, CTensor] = {}
    for outlet, tensor in schedule.tensors.items():
        if tensor.whole and outlet.node not in region.nodes:
            if outlet not in lowering.tensors:
                raise Unsupported(f"the region reads node #{outlet.node}, which runs after its first node: its "
                                  "nodes must be consecutive in the evaluation order")
            whole[outlet] = lowering.tensor_of(outlet)
            code.inputs.append(whole[outlet])
    buffers: dict[OutletId, str] = {}
    table = _step_table(schedule)
    small = np.abs(table).max(initial=0) < 1 << 15
    read = "TL_READ_S16" if small else "TL_READ_S32"

    def field(k: int) -> str:
        return f"{read}(tl_s + {k})"

    cases, kernels = [], []
    reducers: list[tuple[str, CTensor, int, str]] = []
    for index, (layer, node) in enumerate(zip(schedule.layers, nodes)):
        if schedule.tensors[layer.output].whole:
            (out,) = lowering.node_outputs(node)
            whole[layer.output] = out
            code.outputs.append(out)
        else:
            fact = node.outputs[0].fact
            out = CTensor(lowering.node_var(node.name, "full"), fact.dtype,
                          tuple(int(d) for d in fact.concrete_shape()), ARENA, fact.qparams)
            lowering.tensors[layer.output] = out
            row_bytes = out.nbytes // out.shape[1]
            words = -(-schedule.capacity[layer.output] * row_bytes // 8)
            buffers[layer.output] = f"({out.ctype} *){Emit(lowering, node, code).scratch('rows', DatumType.I64, words)}"
        ins = [lowering.tensor_of(o) for o in node.inputs]
        others = [t for slot, t in enumerate(ins) if slot not in layer.geometry.streamed]
        code.inputs.extend(t for t in others if t not in code.inputs)
        shifts = any(step.shift and step.shift[1] for step in schedule.steps if step.layer == index)
        body, kernel = _layer_code(lowering, emit, node, layer, ins, out, whole, buffers, reducers, field, shifts)
        kernels.append(kernel)
        cases.append((index, node, body))
    code.kernel = "rows of " + "+".join(dict.fromkeys(kernels))
    fields = table.shape[1]
    table_name = emit.constant("steps", table.reshape(-1), DatumType.I16 if small else DatumType.I32)
    emit.line("{")
    emit.line("  int32_t tl_step;")
    for _, acc, channels, _ in reducers:
        emit.line(f"  memset({acc}, 0, {channels}u * sizeof *{acc});")
    emit.line(f"  for (tl_step = 0; tl_step < {len(table)}; ++tl_step) {{")
    emit.line(f"    const {'int16_t' if small else 'int32_t'} *tl_s = {table_name} + tl_step * {fields};")
    emit.line(f"    switch ({read}(tl_s)) {{")
    for index, node, body in cases:
        emit.line(f"    case {index}: /* node #{node.id} {comment_text(node.name)} ({node.op.name}) */")
        for text in body:
            emit.line("\n".join(" " * 6 + piece for piece in text.splitlines()))
        emit.line("      break;")
    emit.line("    default:")
    emit.line("      break;")
    emit.line("    }")
    emit.line("  }")
    for finish, _, _, _ in reducers:
        emit.line(f"  {finish}")
    emit.line("}")
    first_in = next((t for o, t in whole.items() if o.node not in region.nodes), None)
    first_out = next((whole[la.output] for la in schedule.layers
                      if schedule.tensors[la.output].whole and la.geometry.kind != "reduce"), None)
    if schedule.lag is not None and first_in is not None and first_out is not None:
        code.overlaps.append(Overlap(first_out, first_in, schedule.lag))
    lowering.program.tensors.extend(code.outputs)
    return code


def _pointer(tensor: CTensor, where: str, row_field: str, buffers, outlet) -> str:
    """The address of the row ``row_field`` names, in a whole tensor or a line buffer."""
    return f"{buffers.get(outlet) or where} + {row_field} * {tensor.count // tensor.shape[1]}"


def _layer_code(lowering, emit: Emit, node, layer, ins: list[CTensor], out: CTensor, whole, buffers, reducers,
                field, shifts: bool) -> tuple[list[str], str]:
    """The statements of one layer's case in the step loop, and the kernel it calls."""
    streamed = list(layer.geometry.streamed)
    sources = {slot: whole.get(node.inputs[slot]) for slot in streamed}
    x_args = {slot: _pointer(ins[slot], emit.arg(sources[slot] or ins[slot]), field(FIXED_FIELDS + 2 * k), buffers,
                             node.inputs[slot]) for k, slot in enumerate(streamed)}
    y_arg = _pointer(out, emit.arg(out), field(1), buffers, layer.output)
    lines = []
    if layer.output in buffers and shifts:
        row_bytes = out.nbytes // out.shape[1]
        target = buffers[layer.output]
        lines.append(f"if ({field(5)}) /* keep the rows still needed: move them to the buffer's start */\n"
                     f"  memmove({target}, {target} + {field(4)} * {out.count // out.shape[1]}, "
                     f"(size_t){field(5)} * {row_bytes}u);")
    if layer.geometry.kind == "rows":
        row_ins = [(_row_tensor(lowering, ins[slot], f"x{slot}") if slot in streamed else ins[slot])
                   for slot in range(len(ins))]
        row_out = _row_tensor(lowering, out, "y")
        recorder, code = _record(lowering, node, row_ins, row_out, written=True)
        if code.scratch:
            raise Unsupported(f"node #{node.id} needs scratch memory and cannot run by rows")
        lines.append("{")
        lines.append("  int32_t tl_r;")
        lines.append(f"  for (tl_r = 0; tl_r < {field(2)}; ++tl_r) {{")
        for slot in streamed:
            tensor = row_ins[slot]
            lines.append(f"    const {tensor.ctype} *const {tensor.var} = {x_args[slot]} + tl_r * {tensor.count};")
        lines.append(f"    {row_out.ctype} *const {row_out.var} = {y_arg} + tl_r * {row_out.count};")
        lines += ["    " + text for text in code.lines]
        lines.append("  }")
        lines.append("}")
        return lines, code.kernel or "(loop)"
    recorder, code = _record(lowering, node, ins, out)
    if code.lines or len(recorder.calls) != 1:
        raise Unsupported(f"node #{node.id}'s code is not one kernel call: it cannot run by rows")
    function, args = recorder.calls[0]
    values = list(args)
    if layer.geometry.kind == "reduce":
        if function not in REDUCERS:
            raise Unsupported(f"node #{node.id}'s kernel {function} cannot accumulate rows")
        summing, finish, acc_type, (x, y, channels, rows, columns, low, high) = REDUCERS[function]
        acc = Emit(lowering, node, emit.code).scratch("acc", acc_type, int(args[channels]))
        width = int(args[columns])
        lines.append(call_text(summing, [x_args[0], acc, f"{field(2)} * {width}", emit.arg(args[channels])]))
        count = int(args[rows]) * width
        reducers.append((f"{finish}({acc}, {emit.arg(args[y])}, {emit.arg(args[channels])}, {count}, "
                         f"{emit.arg(args[low])}, {emit.arg(args[high])});", acc, int(args[channels]), function))
        return lines, summing
    if function not in ROW_ARGS:
        raise Unsupported(f"node #{node.id}'s kernel {function} cannot run by rows")
    roles = ROW_ARGS[function]
    values[roles[0]], values[roles[1]] = x_args[0], y_arg
    if len(roles) == 5:
        values[roles[2]], values[roles[3]], values[roles[4]] = field(FIXED_FIELDS + 1), field(2), field(3)
    else:
        values[roles[2]] = f"{field(2)} * {int(out.shape[2])}"
    lines.append(call_text(function, [emit.arg(v) for v in values]))
    return lines, function


def _step_table(schedule: RowSchedule) -> np.ndarray:
    """One row of int fields per step (see :data:`FIXED_FIELDS`)."""
    width = FIXED_FIELDS + 2 * max(len(layer.inputs) for layer in schedule.layers)
    table = np.zeros((len(schedule.steps), width), np.int64)
    for row, step in enumerate(schedule.steps):
        shift = step.shift or (0, 0)
        table[row, :FIXED_FIELDS] = (step.layer, step.at, step.count, step.pad, shift[0], shift[1])
        for k, (_, rows, at) in enumerate(step.inputs):
            table[row, FIXED_FIELDS + 2 * k:FIXED_FIELDS + 2 * k + 2] = (at, rows)
    return table
