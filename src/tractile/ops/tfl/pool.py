"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on NHWC tensors (padding taps are skipped)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from ..quantized.common import activation_range, is_quantized
from .common import TflOp, apply_float_activation, check_activation
from .conv import Window2D, pad_hw, taps

KINDS = ("average", "max", "l2")


@lru_cache(maxsize=256)
def tap_counts(height: int, width: int, window: Window2D, kernel_h: int, kernel_w: int) -> np.ndarray:
    """How many taps of each output position fall inside the input: (OH, OW, 1)."""
    rows, cols = window.geometry(height, width, kernel_h, kernel_w)
    ones = pad_hw(np.ones((1, height, width, 1), dtype=np.int64), rows, cols, 0)
    total = np.zeros((rows[0], cols[0]), dtype=np.int64)
    for _, _, view in taps(ones, window, kernel_h, kernel_w, rows[0], cols[0]):
        total += view[0, :, :, 0]
    return total[..., None]


@dataclass(frozen=True)
class Pool2D(TflOp):
    """Pooling of ``kind`` average, max or l2 over (filter_h, filter_w) windows."""

    kind: str = "average"
    window: Window2D = Window2D()
    filter_h: int = 1
    filter_w: int = 1
    activation: str = "NONE"

    @property
    def name(self) -> str:  # type: ignore[override]
        return {"average": "TflAveragePool2D", "max": "TflMaxPool2D", "l2": "TflL2Pool2D"}.get(self.kind, "TflPool2D")

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        check_activation(self.activation)
        self.window.check()
        if self.kind not in KINDS:
            raise AnalysisError(f"pooling kind must be one of {KINDS}, got {self.kind!r}")
        if self.filter_h < 1 or self.filter_w < 1:
            raise AnalysisError(f"filter must be at least 1x1, got {self.filter_h}x{self.filter_w}")
        x = inputs[0]
        if x.rank != 4:
            raise AnalysisError(f"pooling needs a 4-d NHWC input, got {x}")
        if not x.dtype.is_float and (self.kind == "l2" or not is_quantized(x.dtype)):
            raise AnalysisError(f"{self.name} does not support {x.dtype}")
        rows, cols = self.window.geometry(x.shape[1], x.shape[2], self.filter_h, self.filter_w)
        return [self.fact(0, x.dtype, (x.shape[0], rows[0], cols[0], x.shape[3]))]

    def eval(self, inputs):
        x = inputs[0]
        rows, cols = self.window.geometry(x.shape[1], x.shape[2], self.filter_h, self.filter_w)
        out_h, out_w = rows[0], cols[0]
        quantized = x.dtype.kind != "f"
        if self.kind == "max":
            low = np.iinfo(x.dtype).min if quantized else -np.inf
            xp = pad_hw(x, rows, cols, low)
            result = None
            for _, _, view in taps(xp, self.window, self.filter_h, self.filter_w, out_h, out_w):
                result = view.copy() if result is None else np.maximum(result, view, out=result)
            if quantized:
                dtype = DatumType.from_numpy(x.dtype)
                lo, hi = activation_range(self.activation, self.oq(0), dtype)
                return [np.clip(result, lo, hi).astype(x.dtype)]
            return [apply_float_activation(result, self.activation)]
        work = np.int64 if quantized else x.dtype
        xp = pad_hw(x, rows, cols, 0).astype(work, copy=False)
        if self.kind == "l2":
            xp = xp * xp
        total = np.zeros((x.shape[0], out_h, out_w, x.shape[3]), dtype=work)
        for _, _, view in taps(xp, self.window, self.filter_h, self.filter_w, out_h, out_w):
            total += view
        counts = tap_counts(x.shape[1], x.shape[2], self.window, self.filter_h, self.filter_w)
        if not quantized:
            average = total / counts.astype(x.dtype)
            if self.kind == "l2":
                average = np.sqrt(average)
            return [apply_float_activation(average.astype(x.dtype, copy=False), self.activation)]
        rounded = np.sign(total) * ((np.abs(total) + counts // 2) // counts)
        dtype = DatumType.from_numpy(x.dtype)
        lo, hi = activation_range(self.activation, self.oq(0), dtype)
        return [np.clip(rounded, lo, hi).astype(x.dtype)]
