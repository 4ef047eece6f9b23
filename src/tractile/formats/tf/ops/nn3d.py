"""TensorFlow 3-d convolution and pooling: Conv3D, MaxPool3D, AvgPool3D (NDHWC or NCDHW,
SAME or VALID), onto tractile's channels-first Conv and pools between two Transposes."""
from __future__ import annotations

from ....graph import OutletId
from ....ops.array import Transpose
from ....ops.conv import Conv
from ....ops.pool import AveragePool, MaxPool
from ....ops.window import Window
from ..registry import TfNode, Translated, tf_op

TO_CHANNELS_FIRST = (0, 4, 1, 2, 3)
TO_CHANNELS_LAST = (0, 2, 3, 4, 1)


def _layout(node: TfNode) -> str:
    layout = node.string("data_format", "NDHWC")
    if layout not in ("NDHWC", "NCDHW"):
        raise node.error(f"data_format {layout!r} is not supported (NDHWC or NCDHW)")
    return layout


def _spatial(node: TfNode, name: str, layout: str) -> tuple[int, int, int]:
    values = node.ints(name, (1,) * 5)
    if len(values) != 5:
        raise node.error(f"attribute {name!r} should have 5 entries, got {list(values)}")
    outer = (values[0], values[4]) if layout == "NDHWC" else (values[0], values[1])
    if any(v != 1 for v in outer):
        raise node.error(f"{name} {list(values)}: only the spatial axes may have values other than 1")
    inner = values[1:4] if layout == "NDHWC" else values[2:5]
    return (inner[0], inner[1], inner[2])


def in_layout(node: TfNode, outlet: OutletId, channels_first: bool, perm) -> OutletId:
    return outlet if channels_first else node.wire("to_channels_first", Transpose(perm), [outlet])[0]


def back_to_layout(outlets: list[OutletId], channels_first: bool, perm):
    return outlets if channels_first else Translated(Transpose(perm), outlets)


def _window(node: TfNode, layout: str, kernel=()) -> Window:
    mode = node.string("padding")
    if mode not in ("SAME", "VALID"):
        raise node.error(f"padding {mode!r} is not supported (SAME or VALID)")
    return Window.make(kernel, _spatial(node, "strides", layout), _spatial(node, "dilations", layout), None,
                       "SAME_UPPER" if mode == "SAME" else "VALID")


@tf_op("Conv3D")
def conv3d(node: TfNode):
    layout = _layout(node)
    weights = node.wire("weights", Transpose((4, 3, 0, 1, 2)), [1])
    x = in_layout(node, node.input(0), layout == "NCDHW", TO_CHANNELS_FIRST)
    y = node.wire("conv", Conv(_window(node, layout)), [x] + weights)
    return back_to_layout(y, layout == "NCDHW", TO_CHANNELS_LAST)


@tf_op("MaxPool3D", "AvgPool3D")
def pool3d(node: TfNode):
    layout = _layout(node)
    window = _window(node, layout, _spatial(node, "ksize", layout))
    op = MaxPool(window) if node.op_type == "MaxPool3D" else AveragePool(window, False)
    y = node.wire("pool", op, [in_layout(node, node.input(0), layout == "NCDHW", TO_CHANNELS_FIRST)])
    return back_to_layout(y, layout == "NCDHW", TO_CHANNELS_LAST)
