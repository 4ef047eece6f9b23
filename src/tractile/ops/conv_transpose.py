"""Transposed convolution (ONNX ConvTranspose): one matmul per group, then col2im per kernel tap."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..dim import Dim
from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, check_alloc, expect_inputs
from .window import Window, pad_spatial


@dataclass(frozen=True)
class ConvTranspose(Op):
    """Inputs X (N, C, ...), W (C, M/group, ...), optional bias B (M).

    Each input position spreads ``W`` over the output with ``window.strides`` and
    ``window.dilations``; the full result is then cropped by the pads (explicit,
    SAME_* or implied by ``output_shape``) and extended by ``output_padding``.
    """

    weight_inputs = (1, 2)

    window: Window
    group: int = 1
    output_padding: tuple[int, ...] = ()
    output_shape: tuple[int, ...] | None = None

    def _geometry(self, spatial, kernel) -> tuple[list, list]:
        """Begin crops and output sizes per spatial axis (dims may be symbolic)."""
        window = self.window.for_kernel(kernel)
        rank = window.rank
        extra = self.output_padding or (0,) * rank
        if len(extra) != rank or self.output_shape is not None and len(self.output_shape) != rank:
            raise AnalysisError(f"output_padding {self.output_padding} / output_shape {self.output_shape} do not "
                                f"match a {rank}-d kernel")
        begins, sizes = [], []
        for axis, size in enumerate(spatial):
            stride = window.strides[axis]
            full = stride * (size - 1) + extra[axis] + window.extent(axis)
            if window.auto_pad in ("SAME_UPPER", "SAME_LOWER") or self.output_shape is not None \
                    and window.pads is None:
                out = self.output_shape[axis] if self.output_shape is not None else size * stride
                total = full - out
                begin = total // 2 if window.auto_pad == "SAME_UPPER" else total - total // 2
            else:
                begin, end = window.explicit_pads(axis)
                out = self.output_shape[axis] if self.output_shape is not None else full - begin - end
            if isinstance(out, int) and out <= 0:
                raise AnalysisError(f"spatial axis {axis}: the output would have {out} elements")
            begins.append(begin)
            sizes.append(out)
        return begins, sizes

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        x, w = inputs[0], inputs[1]
        if x.rank < 3 or w.rank != x.rank:
            raise AnalysisError(f"ConvTranspose needs input and kernel of the same rank >= 3, got {x} and {w}")
        if x.dtype != w.dtype or not x.dtype.is_float:
            raise AnalysisError(f"ConvTranspose needs float input and kernel of one type, got {x} and {w}")
        if x.shape[1] != w.shape[0]:
            raise AnalysisError(f"input has {x.shape[1]} channels, the kernel expects {w.shape[0]}")
        if isinstance(w.shape[0], int) and w.shape[0] % self.group:
            raise AnalysisError(f"{w.shape[0]} input channels cannot be split in {self.group} groups")
        if not all(isinstance(k, int) for k in w.shape[2:]):
            raise AnalysisError(f"kernel spatial dims must be known, got {w}")
        channels: Dim = w.shape[1] * self.group
        if len(inputs) == 3 and inputs[2].shape != (channels,):
            raise AnalysisError(f"bias should have shape ({channels},), got {inputs[2]}")
        _, sizes = self._geometry(x.shape[2:], w.shape[2:])
        return [TypedFact(x.dtype, (x.shape[0], channels, *sizes))]

    def rules(self, s, inputs, outputs):
        x, w, y = inputs[0], inputs[1], outputs[0]
        s.equals_all(x.datum_type, w.datum_type, y.datum_type)
        s.equals_all(x.rank, w.rank, y.rank)
        s.equals(y.shape[0], x.shape[0])
        s.equals(x.shape[1], w.shape[0], why="the input has {} channels, the kernel expects {}")
        s.equals(y.shape[1], self.group * w.shape[1])

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        window = self.window.for_kernel(w.shape[2:])
        begins, sizes = self._geometry(x.shape[2:], w.shape[2:])
        work = np.float32 if x.dtype.itemsize < 4 else x.dtype
        n, channels = x.shape[:2]
        spatial = x.shape[2:]
        per_in, per_out = channels // self.group, w.shape[1]
        extra = self.output_padding or (0,) * window.rank
        full = [s * (i - 1) + e + window.extent(a)
                for a, (s, i, e) in enumerate(zip(window.strides, spatial, extra))]
        check_alloc((n, per_out * self.group, *full), work, "ConvTranspose output")
        canvas = np.zeros((n, per_out * self.group, *full), dtype=work)
        flat_x = x.reshape(n, channels, -1).astype(work, copy=False)
        for g in range(self.group):
            kernel = w[g * per_in:(g + 1) * per_in].reshape(per_in, -1).astype(work, copy=False)
            cols = np.matmul(kernel.T, flat_x[:, g * per_in:(g + 1) * per_in])
            cols = cols.reshape(n, per_out, *window.kernel, *spatial)
            target = canvas[:, g * per_out:(g + 1) * per_out]
            for tap in itertools.product(*(range(k) for k in window.kernel)):
                index = [slice(None), slice(None)]
                for axis, offset in enumerate(tap):
                    start = offset * window.dilations[axis]
                    stride = window.strides[axis]
                    index.append(slice(start, start + stride * (spatial[axis] - 1) + 1, stride))
                target[tuple(index)] += cols[(slice(None), slice(None)) + tap]
        ends = [b + s - f for b, s, f in zip(begins, sizes, full)]
        y = pad_spatial(canvas, [-b for b in begins], ends, 0)
        if len(inputs) == 3:
            y = y + inputs[2].astype(work).reshape((-1,) + (1,) * window.rank)
        return [y.astype(x.dtype, copy=False)]

    def cost(self, inputs):
        x, w = inputs[0], inputs[1]
        flops = 2 * x.volume
        for dim in w.shape[1:]:
            flops = flops * dim
        return {"flops": flops}
