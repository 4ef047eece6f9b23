"""Transposed convolution (ONNX ConvTranspose): one matmul per group, then col2im per kernel tap;
over N,H,W,C tensors (TFLite's TRANSPOSE_CONV, float or quantized) in conv_transpose_nhwc."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..dim import Dim, fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import QParams, TypedFact
from .activations import Activation
from .base import Op, check_alloc, expect_inputs
from .conv_nhwc import DATA_FORMATS
from .conv_transpose_nhwc import tflite_padding, transpose_conv_nhwc
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .quantized.conv import conv_quant
from .window import Window, pad_spatial


@dataclass(frozen=True)
class ConvTranspose(Op):
    """Inputs X (N, C, ...), W (C, M/group, ...), optional bias B (M).

    Each input position spreads ``W`` over the output with ``window.strides`` and
    ``window.dilations``; the full result is then cropped by the pads (explicit,
    SAME_* or implied by ``output_shape``) and extended by ``output_padding``.

    ``data_format`` "NHWC" takes X as (N,H,W,C) and gives (N,OH,OW,M), W as ``kernel_format``
    says ("IOHW", ONNX's, or "OHWI", TFLite's; group 1). ``quant``: the output's quantization;
    set, X and W are quantized (their facts' qparams) and TFLite's integer recipe applies (a
    fused activation then being a Clip in the output's integers). ``shape_input``: the output
    shape (4 values, in the data format) is the last input, read at run time, and the pads are
    TFLite's: ``max(full - out, 0) // 2`` at the beginning, after checking that the sizes are
    what ``window.auto_pad`` (SAME_UPPER or VALID) gives.
    """

    weight_inputs = (1, 2)

    window: Window
    group: int = 1
    output_padding: tuple[int, ...] = ()
    output_shape: tuple[int, ...] | None = None
    data_format: str = "NCHW"
    kernel_format: str = "IOHW"
    quant: QParams | None = None
    activation: Activation | None = None
    shape_input: bool = False

    # NHWC --------------------------------------------------------------------------------------
    def _nhwc_dims(self, w_shape) -> tuple:
        """(input channels, output channels, kernel height, kernel width) of an NHWC kernel."""
        if self.kernel_format == "OHWI":
            return w_shape[3], w_shape[0], w_shape[1], w_shape[2]
        return w_shape[0], w_shape[1], w_shape[2], w_shape[3]

    def _recipe(self, inputs):
        bias = inputs[2] if len(inputs) - self.shape_input > 2 else None
        return cached_recipe(self, inputs, lambda: conv_quant("ConvTranspose", inputs[0], inputs[1], bias,
                                                              self.quant, self.activation, transposed=True))

    def prepared(self, inputs):
        return self if self.quant is None else with_recipe(self, self._recipe(inputs))

    def _tflite_geometry(self, spatial, kernel, out) -> tuple[list, list]:
        padding = "SAME" if self.window.auto_pad.startswith("SAME") else "VALID"
        strides = self.window.for_kernel(kernel).strides
        return [tflite_padding(o, i, k, s, padding) for o, i, k, s in zip(out, spatial, kernel, strides)], list(out)

    def _nhwc_facts(self, inputs):
        x, w = inputs[0], inputs[1]
        if self.kernel_format not in ("IOHW", "OHWI") or x.rank != 4 or w.rank != 4 or self.group != 1:
            raise AnalysisError(f"an NHWC ConvTranspose needs 4-d input and kernel (IOHW or OHWI), group 1; got "
                                f"{x}, {w} ({self.kernel_format}), group {self.group}")
        depth, filters, k_h, k_w = self._nhwc_dims(w.shape)
        if x.shape[3] != depth:
            raise AnalysisError(f"input has {x.shape[3]} channels, the kernel expects {depth}")
        if len(inputs) - self.shape_input == 3 and inputs[2].volume != filters:
            raise AnalysisError(f"bias should hold {filters} values, got {inputs[2]}")
        if self.quant is None and (not x.dtype.is_float or w.dtype != x.dtype):
            raise AnalysisError(f"ConvTranspose needs float input and kernel of one type, got {x} and {w}")
        if self.quant is not None:
            self._recipe(inputs)
        if self.shape_input:
            shape = inputs[-1]
            if shape.rank != 1 or shape.shape[0] != 4:
                raise AnalysisError(f"the output shape input should hold 4 values, got {shape}")
            known = shape.known_value()
            if known is None:
                return TypedFact(x.dtype, (x.shape[0], fresh_symbol(), fresh_symbol(), filters), qparams=self.quant)
            given = tuple(int(v) for v in np.asarray(known).reshape(-1))
            if given[0] != x.shape[0] or given[3] != filters:
                raise AnalysisError(f"the output shape {list(given)} does not fit input {x} and kernel {w}")
            self._tflite_geometry(x.shape[1:3], (k_h, k_w), given[1:3])
            return TypedFact(x.dtype, given, qparams=self.quant)
        _, sizes = self._geometry(x.shape[1:3], (k_h, k_w))
        return TypedFact(x.dtype, (x.shape[0], *sizes, filters), qparams=self.quant)

    def _nhwc_eval(self, inputs):
        x, w = inputs[0], inputs[1]
        _, filters, k_h, k_w = self._nhwc_dims(w.shape)
        bias = inputs[2] if len(inputs) - self.shape_input == 3 else None
        if self.shape_input:
            shape = tuple(int(v) for v in np.asarray(inputs[-1]).reshape(-1))
            if len(shape) != 4 or shape[0] != x.shape[0] or shape[3] != filters:
                raise RunError(f"ConvTranspose: the output shape {list(shape)} does not fit the input "
                               f"{list(x.shape)} and weights {list(w.shape)} (batch {x.shape[0]}, {filters} channels)")
            try:
                begins, sizes = self._tflite_geometry(x.shape[1:3], (k_h, k_w), shape[1:3])
            except AnalysisError as error:
                raise RunError(str(error)) from None
        else:
            begins, sizes = self._geometry(x.shape[1:3], (k_h, k_w))
        check_alloc((x.shape[0], *sizes, filters), x.dtype, "ConvTranspose output")
        recipe = recipe_of(self) if self.quant is not None else None
        return [transpose_conv_nhwc(self, x, w, bias, begins, sizes, recipe)]

    # NCHW --------------------------------------------------------------------------------------
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
        expect_inputs(inputs, (2 + self.shape_input, 3 + self.shape_input), self)
        if self.data_format not in DATA_FORMATS:
            raise AnalysisError(f"data_format must be one of {', '.join(DATA_FORMATS)}, got {self.data_format!r}")
        if self.data_format == "NHWC":
            return [self._nhwc_facts(inputs)]
        if self.kernel_format != "IOHW" or self.quant is not None or self.shape_input or self.activation:
            raise AnalysisError("an NCHW ConvTranspose takes IOHW kernels, no quantization, activation or shape input")
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
        if self.data_format == "NHWC":
            s.equals(x.datum_type, y.datum_type)
            s.equals_all(x.rank, w.rank, y.rank, 4)
            return
        s.equals_all(x.datum_type, w.datum_type, y.datum_type)
        s.equals_all(x.rank, w.rank, y.rank)
        s.equals(y.shape[0], x.shape[0])
        s.equals(x.shape[1], w.shape[0], why="the input has {} channels, the kernel expects {}")
        s.equals(y.shape[1], self.group * w.shape[1])

    def eval(self, inputs):
        if self.data_format == "NHWC":
            return self._nhwc_eval(inputs)
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
        if self.data_format == "NHWC":
            _, filters, k_h, k_w = self._nhwc_dims(w.shape)
            return {"flops": 2 * x.volume * filters * k_h * k_w}
        flops = 2 * x.volume
        for dim in w.shape[1:]:
            flops = flops * dim
        return {"flops": flops}
