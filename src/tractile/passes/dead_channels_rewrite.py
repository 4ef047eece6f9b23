"""The patch of dead-channel elimination: every node of a region rebuilt without the removed
channels (passes/dead_channels.py finds the region and which channels go)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import TractileError
from ..graph import OutletId
from ..ops.io import Const
from ..ops.shape import Reshape
from ..patch import ModelPatch
from .dead_channels import ABSORB, ROWS, Region, _conv, sliced_qparams

_INT32 = np.iinfo(np.int32)


class _Overflow(Exception):
    """A folded bias leaves int32: the region is left as it is."""


def _const(patch, model, node, slot: int, value: np.ndarray, axis: int, keep: np.ndarray | None):
    fact = model.outlet_fact(node.inputs[slot])
    qparams = fact.qparams if keep is None else sliced_qparams(fact.qparams, axis, keep)
    name = model.nodes[node.inputs[slot].node].name
    return patch.add_const(name, np.ascontiguousarray(value), qparams)


def _folded_bias(model, node, weights: np.ndarray, columns: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The bias plus ``sum((value - zp) * w)`` over the removed input ``columns`` of
    ``weights`` (units, depth), in int64 then checked to fit int32."""
    zero_point = model.outlet_fact(node.inputs[0]).qparams.zero_point[0]
    bias = model.outlet_fact(node.inputs[2]).konst.astype(np.int64)
    folded = bias + weights[:, columns].astype(np.int64) @ (values - zero_point)
    if folded.min(initial=0) < _INT32.min or folded.max(initial=0) > _INT32.max:
        raise _Overflow
    return folded.astype(np.int32)


def _rebuilt(patch, model, node, role: str, inputs: list, keep: np.ndarray, constants, period: int):
    """The new node's op and inputs (patch wires), its removed channels or columns gone."""
    op = dataclasses.replace(node.op)  # a fresh op: no recipe cached for the old facts
    if role == ROWS:  # output channels are the weights' first axis
        w = model.outlet_fact(node.inputs[1]).konst
        bias = model.outlet_fact(node.inputs[2]).konst
        inputs[1] = _const(patch, model, node, 1, w[keep], 0, keep)
        inputs[2] = _const(patch, model, node, 2, bias[keep], 0, keep)
        return op, inputs
    if role == ABSORB:  # input channels (or columns of flattened channels) are the weights' last axis
        w = model.outlet_fact(node.inputs[1]).konst
        depth = w.shape[-1]
        known, value = constants[node.inputs[0]]
        kept_columns = np.tile(keep, depth // period)
        removed = np.flatnonzero(~kept_columns)
        matrix = w.reshape(-1, depth)
        bias = _folded_bias(model, node, matrix, removed, value[removed % period])
        inputs[1] = _const(patch, model, node, 1, w[..., kept_columns], -1, None)
        inputs[2] = _const(patch, model, node, 2, bias, 0, None)
        return op, inputs
    if _conv(model, node) == "depthwise":  # HWIO: channels on the last axis
        w = model.outlet_fact(node.inputs[1]).konst
        bias = model.outlet_fact(node.inputs[2]).konst
        inputs[1] = _const(patch, model, node, 1, w[..., keep], 3, keep)
        inputs[2] = _const(patch, model, node, 2, bias[keep], 0, keep)
        return dataclasses.replace(op, group=int(keep.sum())), inputs
    if isinstance(op, Reshape):
        shape = [int(d) for d in node.outputs[0].fact.shape]
        shape[-1] = shape[-1] // period * int(keep.sum())
        inputs[1] = patch.wire_node(f"{node.name}.shape", Const(np.array(shape, np.int64)), [])[0]
    return op, inputs


def rewrite_region(model, region: Region, constants, keep_out: np.ndarray) -> ModelPatch | None:
    """A patch rebuilding ``region`` with the channels of ``keep_out`` (True: removed) gone;
    None when a folded bias would overflow int32."""
    keep = ~keep_out
    order = {node_id: step for step, node_id in enumerate(model.eval_order())}
    in_region = set(region.wires)
    removed = int(keep_out.sum())
    patch = ModelPatch(model, f"drop {removed} constant channel(s) of {len(region.wires)} wire(s)")
    new: dict[OutletId, OutletId] = {}
    try:
        for node_id in sorted(region.roles, key=order.__getitem__):
            node, role = model.nodes[node_id], region.roles[node_id]
            inputs = [new[o] if o in in_region else patch.tap(o) for o in node.inputs]
            op, inputs = _rebuilt(patch, model, node, role, inputs, keep, constants, region.channels)
            outlet = patch.wire_node(node.name, op, inputs)[0]
            if role == ABSORB:
                patch.shunt(OutletId(node_id, 0), outlet)
            else:
                new[OutletId(node_id, 0)] = outlet
            patch.obliterate(node_id)
    except _Overflow:
        return None
    except TractileError:
        return None  # a layer refused the narrower shapes: the region stays
    return patch
