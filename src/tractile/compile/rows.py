"""Regions computed by rows with line buffers (MCUNetV2's patch-based inference by rows, with
the overlapping rows kept instead of recomputed).

A region is a set of nodes, contiguous in the evaluation order, whose tensors all have rows
(NHWC, batch 1): convolutions and poolings (output row ``r`` reads a window of input rows),
element-wise ops (row ``r`` reads row ``r`` of each input; residual additions join two paths
this way) and global average pools (every row, accumulated band by band). The region runs as
one node: a sequence of steps, each computing a few rows of one layer with its usual kernel.
Rows are pulled from the region's sinks (its outputs) depth first, so every layer computes
each of its rows once, just before a consumer needs it; a tensor used only inside the region
lives in a *line buffer* that holds the rows some consumer still needs (a residual branch's
rows are kept until the addition reads them), shifted down when it fills up. Tensors the
region reads from outside or leaves to later nodes are whole.

Everything here is host-side planning on row counts: :func:`schedule_region` simulates the
steps and sizes the buffers; :mod:`.rows_lower` writes the C. :func:`row_geometry` is the only
place that knows op classes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import Node, OutletId
from ..ops.activations import Activation
from ..ops.array import Concat
from ..ops.binary import Arithmetic
from ..ops.conv import Conv
from ..ops.conv_nhwc import kernel_dims
from ..ops.pool import AveragePool, MaxPool
from ..ops.pool_nhwc import tap_counts


@dataclass(frozen=True)
class Region:
    """Nodes (ids, in evaluation order) computed ``rows`` output rows per step, each line buffer
    ``slack`` rows longer than it must be (fewer shifts)."""

    nodes: tuple[int, ...]
    rows: int = 1
    slack: int = 0


@dataclass(frozen=True)
class RowGeometry:
    """How a layer's output rows read its streamed inputs' rows.

    ``window``: output row ``r`` reads rows ``r * stride - top + i * dilation`` for ``i <
    kernel`` (those inside the input); ``rows``: row ``r`` of every streamed input;
    ``reduce``: every row, folded into an accumulator, the output written at the end (its
    "rows" are the input rows consumed)."""

    kind: str
    streamed: tuple[int, ...] = (0,)
    stride: int = 1
    dilation: int = 1
    kernel: int = 1
    top: int = 0

    def reads(self, first: int, end: int, in_h: int) -> tuple[int, int]:
        """The input rows [low, high) that output rows [first, end) read."""
        if self.kind != "window":
            return first, end
        low = max(first * self.stride - self.top, 0)
        high = min((end - 1) * self.stride - self.top + (self.kernel - 1) * self.dilation + 1, in_h)
        return low, max(high, low)


def _rows_shape(fact) -> tuple[int, ...] | None:
    shape = fact.concrete_shape()
    if shape is None or len(shape) != 4 or int(shape[0]) != 1:
        return None
    return tuple(int(d) for d in shape)


def row_geometry(model, node: Node) -> RowGeometry | None:
    """How ``node`` reads rows, or None when it cannot run in a region (the op adapter: the
    only code here that knows op classes)."""
    if len(node.outputs) != 1 or not node.inputs:
        return None
    out = _rows_shape(node.outputs[0].fact)
    x = _rows_shape(model.outlet_fact(node.inputs[0]))
    if out is None or x is None:
        return None
    op = node.op
    if isinstance(op, Conv) and op.data_format == "NHWC":
        if op.is_hybrid([model.outlet_fact(i) for i in node.inputs]):
            return None
        _, _, k_h, k_w = kernel_dims(model.outlet_fact(node.inputs[1]).shape, op.kernel_format)
        window = op.window.for_kernel((int(k_h), int(k_w)))
        begins, _, _ = window.concrete_pads(x[1:3])
        return RowGeometry("window", (0,), window.strides[0], window.dilations[0], int(k_h), begins[0])
    if isinstance(op, (AveragePool, MaxPool)) and op.data_format == "NHWC":
        if isinstance(op, AveragePool) and out[1:3] == (1, 1) and \
                int(tap_counts(op, x[1:3])[0, 0, 0]) == x[1] * x[2]:
            return RowGeometry("reduce")
        begins, _, _ = op.window.concrete_pads(x[1:3])
        return RowGeometry("window", (0,), op.window.strides[0], 1, int(op.window.kernel[0]), begins[0])
    if isinstance(op, (Arithmetic, Activation)) or isinstance(op, Concat) and op.axis in (3, -1) and op.quant is None:
        streamed = []
        for slot, outlet in enumerate(node.inputs):
            fact = model.outlet_fact(outlet)
            if fact.konst is not None:
                if isinstance(op, Concat) or len(fact.shape) >= 3 and int(fact.shape[-3]) != 1:
                    return None
                continue
            shape = _rows_shape(fact)
            if shape is None or shape[:3] != out[:3] or shape != out and not isinstance(op, Concat):
                return None
            streamed.append(slot)
        return RowGeometry("rows", tuple(streamed)) if streamed else None
    return None


@dataclass(frozen=True)
class RowLayer:
    """One node of a region: the tensors (outlets) of its streamed inputs, its output, its geometry."""

    node: int
    inputs: tuple[OutletId, ...]
    output: OutletId
    geometry: RowGeometry


@dataclass(frozen=True)
class RowTensor:
    """A tensor a region touches: ``whole`` (read from outside, or left to later nodes) or a line buffer."""

    height: int
    row_bytes: int
    whole: bool


@dataclass(frozen=True)
class RowStep:
    """One step: layer ``layer`` computes its output rows [first, first + count) into buffer row
    ``at`` (after moving ``shift[1]`` rows from buffer row ``shift[0]`` to the buffer's start),
    reading rows [input first, + rows) of each streamed input from buffer row ``at``; ``pad`` is
    the window's top padding relative to the first row read."""

    layer: int
    first: int
    count: int
    at: int
    inputs: tuple[tuple[int, int, int], ...]  # (first row, rows, buffer row)
    pad: int
    shift: tuple[int, int] | None


@dataclass
class RowSchedule:
    """The steps of a region and the size of every line buffer (in rows)."""

    layers: list[RowLayer]
    tensors: dict[OutletId, RowTensor]
    steps: list[RowStep] = field(default_factory=list)
    capacity: dict[OutletId, int] = field(default_factory=dict)
    #: bytes by which the first whole output may start before the first whole input (None: no overlap)
    lag: int | None = None

    @property
    def buffer_bytes(self) -> int:
        return sum(rows * self.tensors[key].row_bytes for key, rows in self.capacity.items())

    def rows_computed(self) -> dict[int, int]:
        """Output rows each layer computes (each once: no recomputation)."""
        done: dict[int, int] = {}
        for step in self.steps:
            done[step.layer] = done.get(step.layer, 0) + step.count
        return done


def region_layers(model, nodes: tuple[int, ...]) -> tuple[list[RowLayer], dict[OutletId, RowTensor]]:
    """The layers and tensors of a region of ``model``; ValueError when a node cannot run by rows."""
    inside = set(nodes)
    outputs = set(model.outputs)
    layers, tensors = [], {}
    for node_id in nodes:
        node = model.nodes[node_id]
        geometry = row_geometry(model, node)
        if geometry is None:
            raise ValueError(f"node #{node_id} cannot run by rows")
        streamed = tuple(node.inputs[slot] for slot in geometry.streamed)
        for outlet in streamed:
            if outlet not in tensors:
                fact = model.outlet_fact(outlet)
                shape = _rows_shape(fact)
                assert shape is not None
                tensors[outlet] = RowTensor(shape[1], shape[2] * shape[3] * fact.dtype.np.itemsize,
                                            outlet.node not in inside)
        output = OutletId(node_id, 0)
        shape = _rows_shape(node.outputs[0].fact)
        assert shape is not None
        leaves = output in outputs or any(s.node not in inside for s in node.outputs[0].successors)
        height = model.outlet_fact(node.inputs[0]).shape[1] if geometry.kind == "reduce" else shape[1]
        tensors[output] = RowTensor(int(height), shape[2] * shape[3] * node.outputs[0].fact.dtype.np.itemsize,
                                    leaves or geometry.kind == "reduce")
        layers.append(RowLayer(node_id, streamed, output, geometry))
    return layers, tensors


def schedule_region(model, region: Region) -> RowSchedule:
    """Simulate ``region`` (see the module's docstring): its steps, its line buffers' sizes and
    how far its output may overlap its input. ValueError when it cannot run by rows."""
    layers, tensors = region_layers(model, region.nodes)
    schedule = RowSchedule(layers, tensors)
    producer = {layer.output: index for index, layer in enumerate(layers)}
    consumers: dict[OutletId, list[int]] = {}
    for index, layer in enumerate(layers):
        for outlet in layer.inputs:
            consumers.setdefault(outlet, []).append(index)
    sinks = [i for i, layer in enumerate(layers) if tensors[layer.output].whole]
    done = [0] * len(layers)
    order: list[tuple[int, int, int]] = []  # (layer, first, count) in execution order

    def pull(index: int, upto: int) -> None:
        layer = layers[index]
        height = tensors[layer.output].height
        while done[index] < upto:
            first, end = done[index], min(done[index] + region.rows, height)
            for outlet in layer.inputs:
                if outlet in producer:
                    pull(producer[outlet], layer.geometry.reads(first, end, tensors[outlet].height)[1])
            order.append((index, first, end - first))
            done[index] = end

    ticks = max(tensors[layers[s].output].height for s in sinks)
    for tick in range(ticks):
        for sink in sinks:
            height = tensors[layers[sink].output].height
            pull(sink, -(-height * (tick + 1) // ticks))
    _place(schedule, order, consumers, region.slack)
    return schedule


def _still_needed(schedule: RowSchedule, consumers, outlet: OutletId, done: list[int]) -> int:
    """The lowest row of ``outlet`` a consumer will still read (its height when none will)."""
    tensor = schedule.tensors[outlet]
    low = tensor.height
    for index in consumers.get(outlet, ()):
        layer = schedule.layers[index]
        out_h = schedule.tensors[layer.output].height
        if done[index] < out_h:
            low = min(low, layer.geometry.reads(done[index], done[index] + 1, tensor.height)[0])
    return low


def _place(schedule: RowSchedule, order: list[tuple[int, int, int]], consumers, slack: int) -> None:
    """Size the line buffers, then give every step its buffer rows and shifts."""
    layers, tensors = schedule.layers, schedule.tensors
    windows = {layer.output for layer in layers if not tensors[layer.output].whole}
    done = [0] * len(layers)
    need = dict.fromkeys(windows, 0)
    for index, first, count in order:
        output = layers[index].output
        if output in windows:
            need[output] = max(need[output], first + count - _still_needed(schedule, consumers, output, done))
        done[index] = first + count
    schedule.capacity = {key: min(rows + slack, tensors[key].height) for key, rows in need.items()}
    base = dict.fromkeys(windows, 0)
    done = [0] * len(layers)
    whole_in = [key for key, t in tensors.items() if t.whole and key not in {la.output for la in layers}]
    whole_out = [la.output for la in layers if tensors[la.output].whole and la.geometry.kind != "reduce"]
    lag = None
    for index, first, count in order:
        layer = layers[index]
        output, shift = layer.output, None
        if output in windows and first + count - base[output] > schedule.capacity[output]:
            low = min(_still_needed(schedule, consumers, output, done), first)
            shift = (low - base[output], first - low)
            base[output] = low
        in_h = [tensors[o].height for o in layer.inputs]
        inputs = []
        for outlet, height in zip(layer.inputs, in_h):
            low, high = layer.geometry.reads(first, first + count, height)
            inputs.append((low, high - low, low - base.get(outlet, 0)))
        pad = layer.geometry.top + inputs[0][0] - first * layer.geometry.stride if layer.geometry.kind == "window" \
            else 0
        if whole_in and whole_out and output == whole_out[0]:
            x = tensors[whole_in[0]]
            needed = _still_needed(schedule, consumers, whole_in[0], done)
            written = (first + count) * tensors[output].row_bytes - needed * x.row_bytes
            lag = written if lag is None else max(lag, written)
        schedule.steps.append(RowStep(index, first, count, first - base.get(output, 0), tuple(inputs), pad, shift))
        done[index] = first + count
    if whole_in and whole_out:
        schedule.lag = max(lag or 0, 0)
