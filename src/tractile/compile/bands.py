"""Banded execution of a chain of convolutions (MCUNet's patch-based inference, by rows).

A chain of NHWC convolutions whose intermediate tensors are big (the first layers of a
MobileNet) is computed a band of the last layer's output rows at a time: for each band, every
layer of the chain computes just the rows the next one needs (the overlap between bands is
recomputed), so of each intermediate tensor only one band is ever live. The chain lowers to one
node: a loop over the bands that calls each layer's usual kernel with the band's row counts and
a shifted top padding (a band holds every input row of the image its outputs read, so the
kernel's clipping at the band's edges is its clipping at the image's), reading the first
layer's input and writing the last layer's output in place, the bands of the layers in between
in scratch buffers. The rows of every band are computed on the host and stored in a table.

Lowering reuses the layers' own emitters: :class:`BandEmit` records their kernel call instead
of writing it, and :data:`ROW_ARGS` says which arguments of each kernel are rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..graph import Node, OutletId
from ..ops.conv import Conv
from ..ops.conv_nhwc import kernel_dims
from .ctext import comment_text
from .emit import Emit
from .program import ARENA, CTensor, NodeCode, Overlap
from .registry import Unsupported, find_emitter

#: kernel -> argument positions of (input, output, input rows, output rows, top padding), or
#: (input, output, pixels) for the kernels that run over pixels (1×1 convolutions)
ROW_ARGS: dict[str, tuple[int, ...]] = {
    "tl_conv_nhwc_f32": (0, 3, 5, 8, 17), "tl_conv_nhwc_s8": (0, 3, 5, 8, 17), "tl_conv_nhwc_s16": (0, 3, 5, 8, 17),
    "tl_dwconv_nhwc_f32": (0, 3, 6, 9, 18), "tl_dwconv_nhwc_s8": (0, 3, 6, 9, 18),
    "tl_dwconv_nhwc_s16": (0, 3, 6, 9, 18),
    "tl_dwconv3x3_s8_packed": (0, 3, 6, 9, 18), "tl_dwconv3x3_s8_rows": (0, 3, 6, 9, 18),
    "tl_dwconv3x3_s8_single": (0, 3, 6, 9, 18),
    "tl_conv_nhwc_s8_gemm": (0, 3, 5, 8, 17), "tl_conv_nhwc_s8_direct": (0, 3, 5, 8, 17),
    "tl_fc_s8": (0, 3, 4), "tl_fc_s8_gemm": (0, 3, 4), "tl_pointwise_s8": (0, 3, 5), "tl_pointwise_s8_wide": (0, 3, 4),
    "tl_pointwise_s8_shallow": (0, 2, 4),
    "tl_conv_gemm_s8": (0, 3, 6, 9, 18), "tl_conv_gemm_f32": (0, 3, 6, 9, 18), "tl_dwconv_host_s8": (0, 3, 6, 9, 17),
    "tl_conv_few_s8": (0, 3, 6, 9, 18), "tl_dwconv_pairs_s8": (0, 3, 6, 9, 17),
    "tl_dense_gemm_s8": (0, 3, 5), "tl_dense_gemm_f32": (0, 3, 4), "tl_dwconv_host_f32": (0, 3, 5, 8, 16),
    **{f"tl_{kind}_pool_host_{suffix}": (0, 1, 3, 6, 12) for kind, suffix in (("avg", "f32"), ("max", "f32"),
                                                                            ("max", "s8"))},
    **{f"tl_{kind}_pool_nhwc_{suffix}": (0, 1, 3, 6, 12) for kind in ("avg", "max")
       for suffix in ("f32", "s8", "s16", "s8_dsp")},
}


@dataclass(frozen=True)
class Chain:
    """Nodes (ids, in evaluation order) computed ``rows`` output rows of the last one at a time."""

    nodes: tuple[int, ...]
    rows: int


def bandable(model, node: Node) -> bool:
    """Whether ``node`` can be a link of a banded chain: a batch-1 NHWC convolution."""
    if not isinstance(node.op, Conv) or node.op.data_format != "NHWC" or \
            node.op.is_hybrid([model.outlet_fact(i) for i in node.inputs]):
        return False
    shape = node.outputs[0].fact.concrete_shape()
    return shape is not None and len(shape) == 4 and int(shape[0]) == 1 and len(node.outputs) == 1


def chains_of(model) -> list[list[int]]:
    """Maximal runs of bandable nodes where each one's output feeds only the next one."""
    outputs = set(model.outputs)
    runs: list[list[int]] = []
    for node_id in model.eval_order(model.outputs):
        node = model.nodes[node_id]
        if not bandable(model, node):
            continue
        if runs:
            last = model.nodes[runs[-1][-1]]
            outlet = OutletId(last.id, 0)
            successors = last.outputs[0].successors
            if (node.inputs[0] == outlet and len(successors) == 1 and successors[0].node == node_id
                    and outlet not in outputs):
                runs[-1].append(node_id)
                continue
        runs.append([node_id])
    return [run for run in runs if len(run) > 1]


def _window(op, in_h: int, w_shape) -> tuple[int, int, int, int]:
    """(stride, dilation, kernel height, top padding) along the rows."""
    _, _, k_h, k_w = kernel_dims(w_shape, op.kernel_format)
    window = op.window.for_kernel((k_h, k_w))
    begins, _, _ = window.concrete_pads((in_h, window.extent(1)))
    return window.strides[0], window.dilations[0], int(k_h), begins[0]


def band_table(layers: list[tuple[int, int, int, int, int, int]], rows: int) -> np.ndarray:
    """Per band, per layer (first input row, input rows, first output row, output rows, top
    padding within the band) for ``layers`` of (in_h, out_h, stride, dilation, k_h, top)."""
    out_h = layers[-1][1]
    table = []
    for start in range(0, out_h, rows):
        low, high = start, min(start + rows, out_h)
        entries = []
        for in_h, _, stride, dilation, k_h, top in reversed(layers):
            first = max(low * stride - top, 0)
            end = min((high - 1) * stride - top + (k_h - 1) * dilation + 1, in_h)
            entries.append((first, end - first, low, high - low, top + first - low * stride))
            low, high = first, end
        table.append([value for entry in reversed(entries) for value in entry])
    return np.array(table, dtype=np.int64)


class BandEmit(Emit):
    """An emitter's view of one layer of a chain: its kernel call is recorded, not written."""

    def __init__(self, lowering, node: Node, code: NodeCode, inputs: list[CTensor]):
        super().__init__(lowering, node, code)
        self.inputs = inputs
        self.calls: list[tuple[str, tuple]] = []

    def call(self, function: str, *args) -> None:
        if not self.code.kernel:
            self.code.kernel = function
        self.calls.append((function, args))

    def line(self, text: str) -> None:
        raise Unsupported("a layer with statements besides its kernel call cannot run in bands")

    def overlap(self, output: int = 0, input: int = 0, lag: int = 0) -> None:
        pass

    def alias(self, output: int = 0, input: int = 0) -> None:
        raise Unsupported("an aliasing layer cannot run in bands")


def lower_chain(lowering, chain: Chain) -> NodeCode:
    """One node of code computing ``chain`` band by band (see the module's docstring)."""
    model = lowering.model
    nodes = [model.nodes[i] for i in chain.nodes]
    last = nodes[-1]
    first_input = lowering.tensor_of(nodes[0].inputs[0])
    lowering._step = len(lowering.program.nodes)
    outputs = lowering.node_outputs(last)
    names = " -> ".join(f"#{n.id}" for n in nodes)
    comment = comment_text(f'nodes {names} in bands of {chain.rows} rows of "{last.name}" '
                           f"({', '.join(n.op.name for n in nodes)})")
    code = NodeCode(last.id, last.name, "Bands(" + ", ".join(n.op.name for n in nodes) + ")", comment,
                    outputs=outputs, members=chain.nodes)
    code.inputs = [first_input]
    calls, layers, buffers = [], [], []
    current = first_input
    for index, node in enumerate(nodes):
        if index + 1 < len(nodes):
            fact = node.outputs[0].fact
            shape = tuple(int(d) for d in fact.concrete_shape())
            out = CTensor(lowering.node_var(node.name, "full"), fact.dtype, shape, ARENA, fact.qparams)
            lowering.tensors[OutletId(node.id, 0)] = out
        else:
            out = outputs[0]
        others = [lowering.tensor_of(o) for o in node.inputs[1:]]
        code.inputs.extend(others)
        layer_code = NodeCode(node.id, node.name, node.op.name, "", outputs=[out])
        recorder = BandEmit(lowering, node, layer_code, [current, *others])
        emitter = find_emitter(node.op)
        if emitter is None:
            raise Unsupported(f"the compiler has no C lowering for {node.op.name}")
        emitter(recorder)
        if len(recorder.calls) != 1 or recorder.calls[0][0] not in ROW_ARGS:
            raise Unsupported(f"node #{node.id}'s kernel cannot run in bands")
        code.constants_bytes += layer_code.constants_bytes
        code.scratch.extend(layer_code.scratch)
        calls.append(recorder.calls[0])
        in_h, out_h = int(current.shape[1]), int(out.shape[1])
        layers.append((in_h, out_h, *_window(node.op, in_h, model.outlet_fact(node.inputs[1]).shape)))
        buffers.append(out)
        current = out
    table = band_table(layers, chain.rows)
    # the band of layer i is read by layer i + 1 only: two buffers, used alternately, hold them all
    sizes = [0, 0]
    for index, tensor in enumerate(buffers[:-1]):
        row_bytes = tensor.nbytes // tensor.shape[1]
        sizes[index % 2] = max(sizes[index % 2], int(table[:, 5 * index + 3].max()) * row_bytes)
    regions = [Emit(lowering, last, code).scratch(f"band{k}", DatumType.I64, -(-size // 8))
               for k, size in enumerate(sizes) if size]
    scratch = [f"({tensor.ctype} *){regions[index % 2]}" for index, tensor in enumerate(buffers[:-1])]
    fields = 5 * len(nodes)
    emit = Emit(lowering, last, code)
    table_name = emit.constant("bands", table.reshape(-1), DatumType.I32 if np.abs(table).max() < 1 << 31 else None)
    code.kernel = "bands of " + "+".join(c[0] for c in calls)
    emit.line("{")
    emit.line("  int32_t band;")
    emit.line(f"  for (band = 0; band < {len(table)}; ++band) {{")
    emit.line(f"    const int32_t *rows = {table_name} + band * {fields};")
    for index, ((function, args), tensor) in enumerate(zip(calls, buffers)):
        def row(k: int, layer: int = index) -> str:
            return f"TL_READ_S32(rows + {5 * layer + k})"

        if index == 0:
            x = f"{emit.arg(first_input)} + {row(0)} * {first_input.count // first_input.shape[1]}"
        else:
            x = scratch[index - 1]
        if index + 1 == len(nodes):
            y = f"{emit.arg(tensor)} + {row(2)} * {tensor.count // tensor.shape[1]}"
        else:
            y = scratch[index]
        roles = ROW_ARGS[function]
        values = list(args)
        values[roles[0]], values[roles[1]] = x, y
        if len(roles) == 5:
            values[roles[2]], values[roles[3]], values[roles[4]] = row(1), row(3), row(4)
        else:
            values[roles[2]] = f"{row(3)} * {int(tensor.shape[2])}"
        rendered = ", ".join(emit.arg(v) for v in values)
        emit.line(f"    {function}({rendered});")
    emit.line("  }")
    emit.line("}")
    code.overlaps.append(Overlap(outputs[0], first_input, band_lag(table, len(nodes), first_input, outputs[0])))
    lowering.program.tensors.extend(outputs)
    return code


def band_lag(table: np.ndarray, layers: int, x: CTensor, y: CTensor) -> int:
    """How many bytes before the chain's input its output may start: band b writes its output
    rows after its first layer has read all its input rows, and later bands read from the first
    row of band b + 1 on."""
    in_row, out_row = x.nbytes // x.shape[1], y.nbytes // y.shape[1]
    last = 5 * (layers - 1)
    lag = 0
    for band in range(len(table)):
        written = int(table[band, last + 2] + table[band, last + 3]) * out_row
        needed = int(table[band + 1, 0]) * in_row if band + 1 < len(table) else x.nbytes
        lag = max(lag, written - needed)
    return lag
