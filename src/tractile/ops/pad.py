"""Pad: constant, reflect, edge, wrap and symmetric padding (negative pads crop)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from ..patch import ModelPatch
from .axes import expect_integer, int_values, moved_qparams, resolve_axes
from .base import Op, check_alloc, expect_inputs

_PAD_MODES = ("constant", "reflect", "edge", "wrap", "symmetric")


@dataclass(frozen=True)
class Pad(Op):
    """ONNX Pad: inputs data, pads (begins then ends), optional constant value and axes.

    Negative pads crop. An empty constant value input means the default (zero). Mode
    ``symmetric`` (TensorFlow's MirrorPad SYMMETRIC) repeats the edge, ``reflect`` does not.
    """

    mode: str = "constant"

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 4), self)
        if self.mode not in _PAD_MODES:
            raise AnalysisError(f"Pad mode {self.mode!r} is not one of {', '.join(_PAD_MODES)}")
        data = inputs[0]
        expect_integer(inputs[1], "Pad's pads")
        if inputs[1].rank != 1:
            raise AnalysisError(f"Pad's pads must be 1-d, got {inputs[1]}")
        axes = list(range(data.rank))
        if len(inputs) > 3:
            expect_integer(inputs[3], "Pad's axes")
            axes = int_values(inputs[3])
        pads = int_values(inputs[1])
        if axes is None:
            return [TypedFact(data.dtype, [fresh_symbol() for _ in data.shape], qparams=moved_qparams(data))]
        axes = resolve_axes(axes, data.rank, "Pad axis")
        count = inputs[1].shape[0]
        if isinstance(count, int) and count != 2 * len(axes):
            raise AnalysisError(f"Pad has {count} pads for {len(axes)} axes: it needs {2 * len(axes)}")
        shape = list(data.shape)
        for index, axis in enumerate(axes):
            if pads is None:
                shape[axis] = fresh_symbol()
                continue
            shape[axis] = shape[axis] + pads[index] + pads[index + len(axes)]
            if isinstance(shape[axis], int) and shape[axis] < 0:
                raise AnalysisError(f"Pad pads {pads} crop axis {axis} of {data} below zero")
        return [TypedFact(data.dtype, shape, qparams=moved_qparams(data, lambda a: a if shape[a] == data.shape[a]
                                                                   else None))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)

    def eval(self, inputs):
        data = inputs[0]
        pads = [int(p) for p in inputs[1].ravel()]
        axes = resolve_axes(inputs[3].ravel().tolist(), data.ndim, "Pad axis", RunError) if len(inputs) > 3 \
            else list(range(data.ndim))
        if len(pads) != 2 * len(axes):
            raise RunError(f"Pad has {len(pads)} pads for {len(axes)} axes: it needs {2 * len(axes)}")
        widths = [[0, 0] for _ in range(data.ndim)]
        for index, axis in enumerate(axes):
            widths[axis] = [pads[index], pads[index + len(axes)]]
        for axis, (begin, end) in enumerate(widths):
            if data.shape[axis] + begin + end < 0:
                raise RunError(f"Pad pads {pads} crop axis {axis} of an input of shape {data.shape} below zero")
        crop = tuple(slice(max(-b, 0), data.shape[a] - max(-e, 0)) for a, (b, e) in enumerate(widths))
        data = data[crop]
        widths = [(max(b, 0), max(e, 0)) for b, e in widths]
        check_alloc([s + b + e for s, (b, e) in zip(data.shape, widths)], data.dtype, "Pad")
        if self.mode == "constant":
            value = inputs[2].reshape(-1)[0] if len(inputs) > 2 and inputs[2].size else 0
            return [np.pad(data, widths, mode="constant", constant_values=value)]
        for axis, (begin, end) in enumerate(widths):
            if (begin or end) and data.shape[axis] == 0:
                raise RunError(f"Pad mode {self.mode} cannot pad axis {axis}: it is empty")
        return [np.pad(data, widths, mode=self.mode)]

    def declutter(self, model, node):
        pads = model.outlet_fact(node.inputs[1]).konst
        if pads is not None and not pads.any():
            return ModelPatch.shunt_one_op(model, node, f"no-op pad {node.name}")
        return None
