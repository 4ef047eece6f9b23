"""Sliding-window geometry shared by convolutions and pooling (NC + spatial layout)."""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..dim import Dim
from ..errors import AnalysisError

AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


@dataclass(frozen=True)
class Window:
    """Kernel extent, strides, dilations and padding over the spatial axes."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...] | None  # begin pads then end pads, as ONNX; None: all zero
    auto_pad: str = "NOTSET"
    ceil_mode: bool = False

    @staticmethod
    def make(kernel=(), strides=None, dilations=None, pads=None, auto_pad="NOTSET", ceil_mode=False) -> Window:
        """Validate and normalise ONNX-style attributes. With an empty ``kernel`` (read later
        from the weights) the checks that need the rank wait for :meth:`for_kernel`."""
        auto_pad = (auto_pad or "NOTSET").upper()
        if isinstance(auto_pad, bytes):
            auto_pad = auto_pad.decode()
        if auto_pad not in AUTO_PADS:
            raise AnalysisError(f"auto_pad must be one of {', '.join(AUTO_PADS)}, got {auto_pad!r}")
        window = Window(tuple(int(k) for k in kernel), tuple(map(int, strides or ())),
                        tuple(map(int, dilations or ())),
                        None if pads is None or not any(pads) else tuple(map(int, pads)), auto_pad, bool(ceil_mode))
        return window.for_kernel(window.kernel) if window.kernel else window

    def for_kernel(self, kernel) -> Window:
        """This window completed for a kernel of the given spatial shape (defaults filled in)."""
        return _complete(self, tuple(int(k) for k in kernel))

    def __str__(self) -> str:
        parts = []
        if self.kernel:
            parts.append("k=" + "x".join(map(str, self.kernel)))
        if self.strides and any(s != 1 for s in self.strides):
            parts.append("s=" + "x".join(map(str, self.strides)))
        if self.dilations and any(d != 1 for d in self.dilations):
            parts.append("d=" + "x".join(map(str, self.dilations)))
        if self.auto_pad != "NOTSET":
            parts.append(self.auto_pad.lower())
        elif self.pads:
            parts.append("pads=" + ",".join(map(str, self.pads)))
        if self.ceil_mode:
            parts.append("ceil")
        return " ".join(parts) or "default"

    @property
    def rank(self) -> int:
        return len(self.kernel)

    def extent(self, axis: int) -> int:
        return (self.kernel[axis] - 1) * self.dilations[axis] + 1

    def output_dims(self, spatial: tuple[Dim, ...]) -> tuple[Dim, ...]:
        """Output spatial dims (symbolic when the input's are)."""
        out = []
        for axis, size in enumerate(spatial):
            stride, extent = self.strides[axis], self.extent(axis)
            if self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                out.append((size + stride - 1) // stride)
                continue
            begin, end = self.explicit_pads(axis)
            span = size + begin + end - extent
            if isinstance(span, int) and span < 0:
                raise AnalysisError(f"spatial axis {axis}: input of {size} (padded {size + begin + end}) is "
                                    f"smaller than the window extent {extent}")
            dim = (span + stride - 1) // stride + 1 if self.ceil_mode else span // stride + 1
            if self.ceil_mode and isinstance(dim, int) and isinstance(size, int) and (dim - 1) * stride >= size + begin:
                dim -= 1
            out.append(dim)
        return tuple(out)

    def explicit_pads(self, axis: int) -> tuple[int, int]:
        if self.pads is None or self.auto_pad == "VALID":
            return 0, 0
        return self.pads[axis], self.pads[axis + self.rank]

    def concrete_pads(self, spatial: tuple[int, ...]) -> tuple[list[int], list[int], tuple[int, ...]]:
        """Begin pads, end pads (incl. the extra that ceil mode needs) and output dims for a real input."""
        out = self.output_dims(spatial)
        begins, ends = [], []
        for axis, size in enumerate(spatial):
            stride, extent = self.strides[axis], self.extent(axis)
            if self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                total = max((out[axis] - 1) * stride + extent - size, 0)
                small, large = total // 2, total - total // 2
                begin, end = (small, large) if self.auto_pad == "SAME_UPPER" else (large, small)
            else:
                begin, end = self.explicit_pads(axis)
            needed = (out[axis] - 1) * stride + extent - (size + begin)
            begins.append(begin)
            ends.append(max(end, needed))
        return begins, ends, out


def pad_spatial(x: np.ndarray, begins, ends, value) -> np.ndarray:
    """Pad (or crop, for negative pads) the spatial axes of an N,C,... tensor."""
    if not any(begins) and not any(ends):
        return x
    lead = x.ndim - len(begins)
    shape = list(x.shape[:lead]) + [s + b + e for s, b, e in zip(x.shape[lead:], begins, ends)]
    out = np.zeros(shape, dtype=x.dtype) if value == 0 else np.full(shape, value, dtype=x.dtype)
    target = [slice(None)] * lead
    source = [slice(None)] * lead
    for size, begin, end in zip(x.shape[lead:], begins, ends):
        target.append(slice(max(begin, 0), max(begin, 0) + size + min(begin, 0) + min(end, 0)))
        source.append(slice(max(-begin, 0), size - max(-end, 0)))
    out[tuple(target)] = x[tuple(source)]
    return out


def window_view(xp: np.ndarray, window: Window, out: tuple[int, ...]) -> np.ndarray:
    """A strided view ``(N, C, *kernel, *out)`` of the padded input (no copy)."""
    lead = xp.ndim - window.rank
    spatial_strides = xp.strides[lead:]
    shape = xp.shape[:lead] + window.kernel + tuple(out)
    strides = (xp.strides[:lead]
               + tuple(s * d for s, d in zip(spatial_strides, window.dilations))
               + tuple(s * st for s, st in zip(spatial_strides, window.strides)))
    return strided_view(xp, shape, strides)


def strided_view(base: np.ndarray, shape: tuple, strides: tuple) -> np.ndarray:
    """A read-only view of ``base`` with the given shape and strides (no copy).

    For a C-contiguous base this builds the view directly, which costs a fraction of
    NumPy's ``as_strided`` (that matters for small, frequent calls such as streaming).
    """
    if base.flags.c_contiguous and base.dtype.kind != "O":
        view = np.ndarray(shape, base.dtype, buffer=base, strides=strides)
        view.flags.writeable = False
        return view
    return as_strided(base, shape=shape, strides=strides, writeable=False)


def taps(xp: np.ndarray, window: Window, out: tuple[int, ...]):
    """Yield ``(tap index, view of shape (N, C, *out))`` for every kernel position."""
    lead = xp.ndim - window.rank
    for tap in itertools.product(*(range(k) for k in window.kernel)):
        index = [slice(None)] * lead
        for axis, offset in enumerate(tap):
            start = offset * window.dilations[axis]
            stop = start + (out[axis] - 1) * window.strides[axis] + 1
            index.append(slice(start, stop, window.strides[axis]))
        yield tap, xp[tuple(index)]


@functools.lru_cache(maxsize=1024)
def _complete(window: Window, kernel: tuple[int, ...]) -> Window:
    rank = len(kernel)
    if window.kernel and window.kernel != kernel:
        raise AnalysisError(f"kernel_shape {window.kernel} does not match the weights' {kernel}")
    strides = window.strides or (1,) * rank
    dilations = window.dilations or (1,) * rank
    if window.pads is not None and len(window.pads) != 2 * rank:
        raise AnalysisError(f"pads has {len(window.pads)} entries, expected {2 * rank} for a {rank}-d window")
    if len(strides) != rank or len(dilations) != rank:
        raise AnalysisError(f"strides {strides} / dilations {dilations} do not match kernel {kernel}")
    if any(s <= 0 for s in strides) or any(d <= 0 for d in dilations) or any(k <= 0 for k in kernel):
        raise AnalysisError(f"kernel {kernel}, strides {strides}, dilations {dilations} must be positive")
    return Window(kernel, strides, dilations, window.pads, window.auto_pad, window.ceil_mode)
