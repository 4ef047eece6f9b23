"""Data movement ops: Transpose, Slice, Concat, Split, Pad, Tile, Expand, DepthToSpace/
SpaceToDepth, Trilu, Gather, GatherND, DynamicUpdateSlice and nearest-neighbour Resize; and
ConstantOfShape, a fill.
Constant-parameter moves are traced through the interpreter into copy blocks
(:mod:`.datamove`); Gather at run-time indices has a kernel.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ...graph import OutletId
from ...ops import array as core
from ...ops import indexing, layout
from ...ops.image import Resize
from ...ops.shape import ConstantOfShape
from ..emit import Emit
from ..program import Alias
from ..registry import Unsupported, emitter
from . import host_move
from .datamove import BASE, MAX_BLOCKS, block_table, copy_blocks, trace

HEADER = "tl_array.h"

#: ops whose every input is moved into the output (the others move input 0 only)
ALL_INPUTS_MOVE = (core.Concat,)
#: ops moving their first inputs (the others are constant parameters)
FIRST_INPUTS_MOVE = {indexing.DynamicUpdateSlice: 2}


def _fill_values(op, inputs: list, maps: list[np.ndarray]) -> list:
    """For each output, the value written where nothing is moved (padding), read from a real run."""
    if all(np.all(positions >= BASE) for positions in maps):
        return [None] * len(maps)
    fills: list = []
    for positions, output in zip(maps, op.eval(inputs)):
        filled = positions < BASE
        if not filled.any():
            fills.append(None)
            continue
        values = np.asarray(output)[filled]
        if not (np.all(values == values.flat[0]) or (values.dtype.kind == "f" and np.all(np.isnan(values)))):
            raise Unsupported("the filled elements do not all hold one value")
        fills.append(values.flat[0])
    return fills


def channel_slice(e: Emit) -> tuple[int, int] | None:
    """(first channel, channels) of the channel Concat of 4-D tensors that alone reads the node's
    only output, when that output may be written straight into the Concat's (a view: the
    Concat copies nothing of it; the producer writes its pixels that many channels apart); None
    when it may not (the Concat's output is the model's, or either node is computed in bands)."""
    lowering, node = e.lowering, e.node
    if len(node.outputs) != 1 or len(e.outputs) != 1 or len(e.output().shape) != 4:
        return None
    outlet = OutletId(node.id, 0)
    readers = lowering.model.outlet_successors(outlet)
    if len(readers) != 1:
        return None
    concat = lowering.model.nodes[readers[0].node]
    banded = lowering._banded
    if (not isinstance(concat.op, core.Concat) or concat.op.quant is not None or concat.op.axis % 4 != 3
            or node.id in banded or concat.id in banded or len(concat.outputs) != 1
            or OutletId(concat.id, 0) in lowering._output_ports or OutletId(concat.id, 0) in lowering.bound
            or concat.outputs[0].fact.dtype != e.output().dtype):
        return None
    facts = [lowering.model.outlet_fact(i) for i in concat.inputs]
    channels = [int(f.shape[3]) for f in facts]
    first = sum(channels[:readers[0].slot])
    return first, sum(channels)


def _in_place_inputs(e: Emit, element: int) -> set[int]:
    """The inputs of a channel Concat their producers wrote in place (:func:`channel_slice`)."""
    found, first = set(), 0
    for slot, tensor in enumerate(e.inputs):
        if tensor.view is not None:
            if tensor.view != (first * element, e.output().nbytes):
                raise Unsupported(f"{e.node.name}: input {slot} was written at byte {tensor.view[0]} of the "
                               f"concatenation, not {first * element}")
            e.code.views.append(Alias(tensor, e.output()))
            found.add(slot)
        first += int(tensor.shape[-1]) if tensor.shape else 0
    return found


@emitter(core.Transpose, core.Slice, core.Pad, core.Split, core.Concat, layout.Tile, layout.Expand,
         layout.DepthToSpace, layout.SpaceToDepth, layout.Trilu, indexing.DynamicUpdateSlice, Resize)
def data_movement(e: Emit) -> None:
    op = e.op
    if isinstance(op, Resize) and op.mode != "nearest":
        if op.mode != "linear":
            raise Unsupported(f"{op.mode} resizing (only nearest-neighbour resizing moves values)")
        from .resize import tflite_bilinear

        tflite_bilinear(e)
        return
    if isinstance(op, core.Concat) and op.quant is not None:
        if op.flavour == "onnxruntime":
            from . import onnxruntime

            onnxruntime.concat(e)
            return
        raise Unsupported("a concatenation that rescales its inputs")
    data_slots = list(range(len(e.inputs))) if isinstance(op, ALL_INPUTS_MOVE) else \
        list(range(FIRST_INPUTS_MOVE.get(type(op), 1)))
    for slot in data_slots:
        for output in e.outputs:
            if e.input(slot).dtype != output.dtype or e.input(slot).qparams != output.qparams:
                raise Unsupported(f"{op.name} that changes the type or quantization "
                                  f"({e.input_fact(slot)} -> {output.fact})")
    inputs = []
    for slot, tensor in enumerate(e.inputs):
        if slot in data_slots:
            inputs.append(tensor.value if tensor.value is not None else np.zeros(tensor.shape, tensor.dtype.np))
        else:
            inputs.append(e.const_input(slot, f"{op.name}'s input {slot}"))
    sizes = [e.input(slot).count for slot in data_slots]
    maps = trace(op, data_slots, inputs, sizes)
    for positions, output in zip(maps, e.outputs):
        if tuple(positions.shape) != tuple(output.shape):
            raise Unsupported(f"tracing gave shape {positions.shape} for {output.fact}")
    fills = _fill_values(op, inputs, maps)
    starts = list(np.cumsum([0, *sizes[:-1]]))
    e.use(HEADER)
    element = np.dtype(e.output(0).dtype.np).itemsize
    sources = [e.input(slot) for slot in data_slots]
    in_place = _in_place_inputs(e, element) if isinstance(op, core.Concat) else set()
    if in_place:
        e.line(f"/* {', '.join(e.input(slot).var for slot in sorted(in_place))}: written in place by "
               f"{'their' if len(in_place) > 1 else 'its'} producer */")
    copied, kernel = False, "tl_copy_blocks"
    for index, (positions, output) in enumerate(zip(maps, e.outputs)):
        fill = "NULL"
        if fills[index] is not None:
            fill = f"(const uint8_t *){e.constant(f'fill{index}', np.asarray([fills[index]], output.dtype.np))}"
        blocks = copy_blocks(positions, starts)
        if blocks is not None and not in_place and len(sources) == 1 and fills[index] is None and len(e.outputs) == 1 \
                and host_move.nchw_to_nhwc(e, blocks, output, sources[0], element):
            copied, kernel = True, "tl_nchw_to_nhwc_u32"
            continue
        if in_place:
            if blocks is None:
                raise Unsupported("a concatenation of more blocks than tl_copy_blocks takes")
            blocks = [block for block in blocks if block[1] not in in_place]
            if not blocks:
                continue
        copied = True
        if blocks is None:
            if len(sources) != 1:
                raise Unsupported(f"a move of more than {MAX_BLOCKS} blocks from several inputs")
            table = np.where(positions >= BASE, positions - BASE, -1).reshape(-1).astype(np.int32)
            e.call("tl_copy_indexed", f"(uint8_t *){e.arg(output)}", f"(const uint8_t *){e.arg(sources[0])}",
                   fill, element, e.constant(f"moves{index}", table), output.count)
            continue
        table, rank = block_table(blocks)
        if len(sources) == 1:
            source_list = f"&source{index}"
            e.line(f"{{ const uint8_t *const source{index} = (const uint8_t *){e.arg(sources[0])};")
        else:
            source_list = f"sources{index}"
            e.line(f"{{ const uint8_t *const sources{index}[{len(sources)}] = "
                   f"{{{', '.join(f'(const uint8_t *){e.arg(s)}' for s in sources)}}};")
        e.call("  tl_copy_blocks", f"(uint8_t *){e.arg(output)}", source_list, fill, element,
               e.constant(f"blocks{index}", table.reshape(-1)), len(blocks), rank)
        e.line("}")
    e.set_kernel(kernel if copied else "(in place)")


@emitter(ConstantOfShape)
def constant_of_shape(e: Emit) -> None:
    """Its output filled with its value on each run (a constant the optimizer left unfolded, as
    too large to hold twice: a bias made by ConstantOfShape, say)."""
    e.const_input(0, "ConstantOfShape's shape")
    y = e.output(0)
    value = e.constant("value", np.asarray(e.op.value).reshape(-1)[:1], y.dtype)
    e.line(f"for (int32_t i = 0; i < {y.count}; ++i) {e.arg(y)}[i] = {value}[0];")
    e.set_kernel("(fill)")


@emitter(indexing.Gather, indexing.GatherND)
def gather(e: Emit) -> None:
    """Gather: traced when the indices are constant, else rows copied at run-time indices."""
    if e.const_value(1) is not None:
        return _traced_gather(e)
    if isinstance(e.op, indexing.GatherND):
        raise Unsupported("GatherND at run-time indices")
    op = e.op
    data, indices, y = e.input(0), e.input(1), e.output(0)
    if getattr(op, "batch_dims", 0):
        raise Unsupported("GATHER with batch_dims at run-time indices")
    if indices.dtype not in (DatumType.I64, DatumType.I32, DatumType.I16):
        raise Unsupported(f"Gather indices of type {indices.dtype}")
    if data.dtype != y.dtype or data.qparams != y.qparams:
        raise Unsupported("a Gather that changes the type")
    if data.storage == "const" and e.target.progmem:
        raise Unsupported("a run-time Gather from a table in program memory")
    axis = op.axis % len(data.shape)
    outer = int(np.prod(data.shape[:axis], dtype=np.int64))
    inner = int(np.prod(data.shape[axis + 1:], dtype=np.int64))
    element = np.dtype(data.dtype.np).itemsize
    e.use(HEADER)
    negative = 1
    e.line(f"if (tl_gather_rows((uint8_t *){e.arg(y)}, (const uint8_t *){e.arg(data)}, {e.arg(indices)}, "
           f"{np.dtype(indices.dtype.np).itemsize}, {outer}, {indices.count}, {data.shape[axis]}, {inner}, "
           f"{element}, {negative})) return {e.failure('an index is out of range')};")
    e.set_kernel("tl_gather_rows")


def _traced_gather(e: Emit) -> None:
    try:
        e.op.output_facts([e.input_fact(0), e.input_fact(1)])
        e.op.eval([np.zeros(e.input(0).shape, e.input(0).dtype.np), e.const_value(1)])
    except (RunError, AnalysisError) as error:
        raise Unsupported(f"constant {e.op.name} indices that do not fit: {error}") from None
    data_movement(e)
