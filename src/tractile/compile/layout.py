"""Channels last, chosen at compile time: ONNX's NCHW convolutions and pools become the NHWC ones
TFLite's models hold, so one family of C kernels (``tl_conv.h``, ``tl_pool.h``) serves every
format, with the NHWC kernels' in-place plans and bands.

:func:`channels_last` rewrites a copy of the model through the pass driver. Each NCHW (or 1-D
NCW) float Conv, MaxPool and AveragePool (also inside a streamed EdgeAveragePool) becomes its
NHWC form between an entrance and an exit (``passes.layout.nhwc``); the weights are transposed
on the host (OHWI, or HWIO for a depthwise kernel), and an average pool counting its padding
reads an input padded with zeros. Then ``passes.layout`` — the mechanism that also joins the
quantized ONNX islands — moves the exits down through what is indifferent to the layout and
cancels them against the next entrances: between two convolutions nothing is transposed.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..datum import DatumType
from ..graph import Node, OutletId
from ..ops.array import Pad
from ..ops.conv import Conv
from ..ops.pool import AveragePool, MaxPool
from ..ops.stream import EdgeAveragePool
from ..ops.window import Window
from ..passes.compose_layout import compose_layout
from ..passes.driver import run_passes
from ..passes.layout import axes_const, cancel_layout, enter, leave, sink_layout
from ..patch import ModelPatch


def channels_last(model):
    """``model`` with its float NCHW convolutions and pools in NHWC (a rewritten copy), or the
    model itself when it has none."""
    if not any(_windowed(model, node) is not None for node in model.nodes):
        return model
    model = run_passes(model, [("channels-last", _convert)])
    model = run_passes(model, [("cancel-layout", cancel_layout), ("sink-layout", sink_layout)])
    return run_passes(model, [("compose-layout", compose_layout)])


# the convolutions and pools ---------------------------------------------------------------------
def _windowed(model, node: Node):
    """The op ``node`` becomes in NHWC (its window made 2-D), or None when it stays."""
    op = node.op
    inner = op.pool if isinstance(op, EdgeAveragePool) else op
    if not isinstance(inner, (Conv, MaxPool, AveragePool)) or inner.data_format != "NCHW":
        return None
    x = model.outlet_fact(node.inputs[0])
    if x.dtype != DatumType.F32 or not x.has_rank or x.rank not in (3, 4) or x.qparams is not None:
        return None
    if isinstance(inner, MaxPool) and inner.with_indices:
        return None
    if isinstance(inner, Conv):
        w = model.outlet_fact(node.inputs[1])
        if w.konst is None or w.rank != x.rank:
            return None
        window = inner._window(w.shape[2:])
    else:
        window = inner.window
    flat = x.rank == 3
    if flat:
        window = Window((1, *window.kernel), (1, *window.strides), (1, *window.dilations),
                        None if window.pads is None else (0, window.pads[0], 0, window.pads[1]), window.auto_pad,
                        window.ceil_mode)
    if isinstance(inner, Conv):
        depthwise = inner.group == x.shape[1] and w.shape[1] == 1 and inner.group > 1
        return replace(inner, window=window, data_format="NHWC", kernel_format="HWIO" if depthwise else "OHWI")
    made = replace(inner, window=window, data_format="NHWC")
    if isinstance(op, EdgeAveragePool) and isinstance(made, AveragePool):
        return replace(op, pool=made, axis=_entered_axis(op.axis, flat))
    return made


def _entered_axis(axis: int, flat: bool) -> int:
    """Where axis ``axis`` of an NCHW (or NCW) tensor lands in its NHWC form."""
    return ((0, 3, 2) if flat else (0, 3, 1, 2))[axis]


def _convert(model, node: Node) -> ModelPatch | None:
    made = _windowed(model, node)
    if made is None:
        return None
    flat = model.outlet_fact(node.inputs[0]).rank == 3
    patch = ModelPatch(model, f"{node.name} in NHWC")
    x = enter(patch, node.name, patch.tap(node.inputs[0]), flat)
    others = []
    if isinstance(made, Conv):
        w = model.outlet_fact(node.inputs[1]).konst
        if flat:
            w = w[:, :, None, :]
        w = w.transpose(2, 3, 1, 0) if made.kernel_format == "HWIO" else w.transpose(0, 2, 3, 1)
        others.append(patch.add_const(f"{node.name}.{made.kernel_format.lower()}", np.ascontiguousarray(w)))
        others += [patch.tap(o) for o in node.inputs[2:]]
    else:
        made, x = _padding_counted(patch, node.name, made, x)
    y = patch.wire_node(node.name, made, [x, *others])[0]
    patch.shunt(OutletId(node.id, 0), leave(patch, node.name, y, flat))
    patch.obliterate(node.id)
    return patch


def _padding_counted(patch: ModelPatch, name: str, made, x: OutletId) -> tuple:
    """An average pool counting its padding as one over an input padded with zeros (what it
    counts) that counts only the taps inside: the NHWC kernels' way. Other pools as they are."""
    pool = made.pool if isinstance(made, EdgeAveragePool) else made
    if not isinstance(pool, AveragePool) or not pool.count_include_pad:
        return made, x
    spatial = tuple(patch.outlet_fact(x).shape[1:3])
    window = pool.window
    if window.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends, _ = window.concrete_pads(spatial)
    else:
        begins, ends = [list(side) for side in zip(*(window.explicit_pads(a) for a in range(2)))]
    pads = axes_const(0, *begins, 0, 0, *ends, 0)
    x = patch.wire_node(f"{name}.pad", Pad(), [x, patch.add_const(f"{name}.pads", pads)])[0]
    window = replace(window, pads=None, auto_pad="NOTSET")
    pool = replace(pool, window=window, count_include_pad=False)
    return (replace(made, pool=pool) if isinstance(made, EdgeAveragePool) else pool), x
