"""Exact dead-channel elimination on quantized models (docs/COMPILE.md, "Dead channels").

An output channel of a convolution (general or depthwise) whose weights are all zero is a
constant (its bias requantized, clamped, activated; a dense layer's is left alone, since its
requantization changes with the flavour a target picks). Such a channel is dropped from a *region*: the
wires one channel index runs through, from the layers that make it (weight rows, the *rows*
role) through per-channel layers (depthwise convolutions, pooling, element-wise activations and
requantizations, squeeze and flattening reshapes: *channelwise*) to the pointwise convolutions
and dense layers that sum over it (*absorb*). An absorber takes a constant channel as a bias
term, ``sum((c - zp_in) * w)`` added to its int32 bias, which is its own integer arithmetic
regrouped, so the result is bit for bit the same. A channel is dropped when it is constant on
every wire an absorber reads; whether it is, is found by evaluating the region's own layers on
inputs holding the constants (the interpreter's arithmetic, so a depthwise layer whose padding
makes a constant channel vary at the borders keeps that channel). Channels reaching a model
output, a Concat, an element-wise binary op or anything else not listed stay.
"""
from __future__ import annotations

import numpy as np

from ..errors import TractileError
from ..fact import QParams
from ..graph import OutletId
from ..ops.activations import Activation
from ..ops.conv import Conv
from ..ops.conv_nhwc import is_depthwise
from ..ops.io import Const
from ..ops.matmul import MatMul
from ..ops.pool import AveragePool, MaxPool
from ..ops.quant import Quantize
from ..ops.shape import Flatten, Reshape, Squeeze
from ..patch import ModelPatch
from .driver import run_passes

ROWS, CHANNELWISE, ABSORB = "rows", "channelwise", "absorb"


def _konst(model, outlet):
    return model.outlet_fact(outlet).konst


def _per_tensor_int8(fact) -> bool:
    """A computed int8 or uint8 tensor of concrete shape, quantized per tensor."""
    return (fact.dtype.np in (np.int8, np.uint8) and fact.qparams is not None and fact.qparams.axis is None
            and fact.konst is None and fact.has_rank and all(isinstance(d, int) for d in fact.shape))


def _weights_symmetric(model, outlet) -> bool:
    qparams = model.outlet_fact(outlet).qparams
    return qparams is not None and not any(qparams.zero_point)


def _quantized_layer(model, node, op_type) -> bool:
    """A quantized ``op_type`` with constant weights (zero point 0) and int32 bias."""
    op = node.op
    if type(op) is not op_type or op.quant is None or len(node.inputs) != 3 or op.quant.axis is not None:
        return False
    w, b = _konst(model, node.inputs[1]), _konst(model, node.inputs[2])
    return (w is not None and b is not None and b.dtype == np.int32 and _weights_symmetric(model, node.inputs[1])
            and _per_tensor_int8(model.outlet_fact(node.inputs[0])))


def _conv(model, node) -> str | None:
    """"general" (group 1, OHWI), "depthwise" (HWIO, multiplier 1) or None."""
    if not _quantized_layer(model, node, Conv) or node.op.data_format != "NHWC":
        return None
    w = _konst(model, node.inputs[1])
    channels = model.outlet_fact(node.inputs[0]).shape[3]
    if node.op.kernel_format == "OHWI" and node.op.group == 1:
        return "general"
    if node.op.kernel_format == "HWIO" and is_depthwise(node.op, channels, w.shape) and w.shape[3] == channels:
        return "depthwise"
    return None


def _dense(model, node) -> bool:
    """A quantized dense layer: 2-D activations times constant (units, depth) weights."""
    return (_quantized_layer(model, node, MatMul) and node.op.transpose_b and not node.op.transpose_a
            and node.op.has_bias and model.outlet_fact(node.inputs[0]).rank == 2
            and _konst(model, node.inputs[1]).ndim == 2)


def _pointwise(model, node) -> bool:
    if _conv(model, node) != "general" or _konst(model, node.inputs[1]).shape[1:3] != (1, 1):
        return False
    spatial = tuple(int(d) for d in model.outlet_fact(node.inputs[0]).shape[1:3])
    begins, ends, _ = node.op.window.for_kernel((1, 1)).concrete_pads(spatial)
    return not any(begins) and not any(ends)


def weight_rows(model, node) -> np.ndarray | None:
    """The weights as (output channel, everything else) of a layer that makes channels by rows
    (a general convolution or dense layer) or a depthwise convolution; None for other nodes."""
    kind = _conv(model, node)
    w = _konst(model, node.inputs[1]) if kind or _dense(model, node) else None
    if w is None:
        return None
    return w.reshape(-1, w.shape[-1]).T if kind == "depthwise" else w.reshape(w.shape[0], -1)


def _zero_rows(model, node) -> np.ndarray:
    """Which output channels of a layer of the region have all-zero weights."""
    rows = weight_rows(model, node)
    if rows is None:
        raise AssertionError(f"{node.name} has no weights")  # the region admits only layers with weights
    return np.logical_not(rows.any(axis=1))


def _channelwise(model, node, channels: int) -> bool:
    """Does ``node`` compute each channel of its input 0 (``channels``, the last axis) alone?"""
    op, x = node.op, model.outlet_fact(node.inputs[0])
    if x.rank == 0 or x.shape[-1] != channels or not _per_tensor_int8(x) or len(node.outputs) != 1:
        return False
    if any(model.outlet_fact(o).konst is None for o in node.inputs[1:]):
        return False  # evaluated on the constants alone: every other input must be a constant
    if not _per_tensor_int8(node.outputs[0].fact):
        return False
    if _conv(model, node) == "depthwise":
        return True
    if isinstance(op, Activation) or type(op) is Quantize:  # element-wise, one input
        return len(node.inputs) == 1
    if type(op) in (AveragePool, MaxPool):
        return op.data_format == "NHWC" and not getattr(op, "with_indices", False)
    y = node.outputs[0].fact
    if type(op) is Squeeze:
        return len(node.inputs) == 2 and y.rank > 0 and y.shape[-1] == channels
    if type(op) in (Reshape, Flatten):
        trailing = 1
        for dim in reversed(x.shape):  # the last output axis must be whole trailing input axes
            trailing *= dim
            if trailing == y.shape[-1]:
                return True
        return False
    return False


def _absorbs(model, node, slot: int) -> bool:
    return slot == 0 and (_pointwise(model, node) or _dense(model, node))


class Region:
    """The wires one channel index runs through (each of period ``channels`` along its last
    axis) and the role of every node touching them."""

    def __init__(self, channels: int):
        self.channels = channels
        self.wires: list[OutletId] = []
        self.roles: dict[int, str] = {}


def find_region(model, start: OutletId) -> Region | None:
    """The region of ``start``'s channels, or None when one of its wires is a model input or
    output or meets a node that is none of rows, channelwise, absorb (or two of them)."""
    channels = int(model.outlet_fact(start).shape[-1])
    region = Region(channels)
    seen, queue = {start}, [start]

    def assign(node_id: int, role: str) -> bool:
        return region.roles.setdefault(node_id, role) == role

    def follow(wire: OutletId) -> None:
        if wire not in seen:
            seen.add(wire)
            queue.append(wire)

    while queue:
        wire = queue.pop()
        region.wires.append(wire)
        if wire in model.outputs or wire in model.inputs or wire.slot != 0 \
                or not _per_tensor_int8(model.outlet_fact(wire)):
            return None
        producer = model.nodes[wire.node]
        if len(producer.inputs) and _channelwise(model, producer, channels):
            if not assign(producer.id, CHANNELWISE):
                return None
            follow(producer.inputs[0])
        elif _conv(model, producer) != "general" or not assign(producer.id, ROWS):
            return None  # a dense layer's constants would depend on its flavour, which targets change
        for inlet in model.outlet_successors(wire):
            consumer = model.nodes[inlet.node]
            if _absorbs(model, consumer, inlet.slot):
                if not assign(consumer.id, ABSORB):
                    return None
            elif inlet.slot == 0 and _channelwise(model, consumer, channels):
                follow(OutletId(consumer.id, 0))
            else:
                return None
    return region


def _evaluate(model, node, inputs: dict[int, np.ndarray]) -> np.ndarray:
    facts = [model.outlet_fact(o) for o in node.inputs]
    values = [inputs[slot] if slot in inputs else facts[slot].konst for slot in range(len(facts))]
    return node.op.prepared(facts).eval(values)[0]


def region_constants(model, region: Region) -> dict[OutletId, tuple[np.ndarray, np.ndarray]]:
    """Per wire, (known, value): which channels are one constant everywhere, and that constant."""
    order = {node_id: step for step, node_id in enumerate(model.eval_order())}
    found: dict[OutletId, tuple[np.ndarray, np.ndarray]] = {}
    channels = region.channels
    for wire in sorted(region.wires, key=lambda w: order[w.node]):
        node = model.nodes[wire.node]
        x = model.outlet_fact(node.inputs[0])
        shape = tuple(int(d) for d in x.shape)
        if region.roles[node.id] == ROWS:
            constant = _zero_rows(model, node)
            y = _evaluate(model, node, {0: np.zeros(shape, x.dtype.np)})
        else:
            known, value = found[node.inputs[0]]
            filled = np.where(known, value, x.qparams.zero_point[0]).astype(x.dtype.np)
            y = _evaluate(model, node, {0: np.broadcast_to(filled, shape).copy()})
            constant = known.copy()
            if _conv(model, node) == "depthwise":
                constant |= _zero_rows(model, node)
        columns = y.reshape(-1, channels)
        constant &= (columns == columns[:1]).all(axis=0)
        found[wire] = (constant, columns[0].astype(np.int64))
    return found


def eliminate_dead_channels(model, node) -> ModelPatch | None:
    """Node pass: at a layer with an all-zero output channel, drop from its region every channel
    that is constant wherever it is summed over (see the module's docstring)."""
    rows = weight_rows(model, node)
    if rows is None or rows.any(axis=1).all() or not _per_tensor_int8(node.outputs[0].fact) \
            or node.outputs[0].fact.shape[-1] < 2:
        return None
    region = find_region(model, OutletId(node.id, 0))
    if region is None:
        return None
    try:
        constants = region_constants(model, region)
    except TractileError:
        return None  # a layer cannot be evaluated alone: its channels stay
    removable = np.ones(region.channels, bool)
    for node_id, role in region.roles.items():
        if role == ABSORB:
            removable &= constants[model.nodes[node_id].inputs[0]][0]
    if removable.all():
        removable[np.argmax(removable)] = False  # no zero-sized tensor: one channel stays
    if not removable.any():
        return None
    from .dead_channels_rewrite import rewrite_region

    return rewrite_region(model, region, constants, removable)


def drop_dead_channels(model):
    """``model`` with every removable dead channel folded away (a copy, through the pass driver);
    its ``properties["dead_channels_removed"]`` adds the output channels of convolution and depthwise
    layers removed."""
    if "dead_channels_removed" in model.properties:
        return model  # done already (prepare runs again on a model it prepared)
    if not any(_has_zero_row(model, node) for node in model.nodes):
        return model
    before = _layer_channels(model)
    result = run_passes(model, [("dead-channels", eliminate_dead_channels)])
    removed = before - _layer_channels(result)
    result.properties["dead_channels_removed"] = model.properties.get("dead_channels_removed", 0) + removed
    return result


def _has_zero_row(model, node) -> bool:
    rows = None if isinstance(node.op, Const) else weight_rows(model, node)
    return rows is not None and not rows.any(axis=1).all()


def keep_dead_channels(model):
    """Mark ``model`` so that :func:`drop_dead_channels` (and so the compiler) leaves its channels
    as they are; returns it."""
    model.properties.setdefault("dead_channels_removed", 0)
    return model


def _layer_channels(model) -> int:
    rows = (weight_rows(model, node) for node in model.nodes if not isinstance(node.op, Const))
    return sum(r.shape[0] for r in rows if r is not None)


def sliced_qparams(qparams: QParams | None, axis: int, keep: np.ndarray) -> QParams | None:
    """Per-axis quantization along ``axis`` keeping the ``keep`` entries; others unchanged."""
    if qparams is None or qparams.axis != axis:
        return qparams
    index = np.flatnonzero(keep)
    return QParams(tuple(qparams.scale[i] for i in index), tuple(qparams.zero_point[i] for i in index), axis)
