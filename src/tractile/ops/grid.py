"""Sampling at given positions: GridSample (N-d; nearest, linear, cubic; zeros, border, reflection) and AffineGrid.

A grid holds normalised positions in ``[-1, 1]`` (last axis: x first, i.e. the
innermost spatial axis). Every sampling is vectorised over all output positions:
each kernel tap is one fancy-indexing gather, weighted and summed.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import int_values, widened
from .base import Op, check_alloc, expect_inputs
from .image import cast_back, cubic_kernel

GRID_MODES = ("nearest", "linear", "cubic")
PADDING_MODES = ("zeros", "border", "reflection")
#: the cubic coefficient GridSample uses (as PyTorch)
GRID_CUBIC_A = -0.75


@dataclass(frozen=True)
class GridSample(Op):
    """Sample X (N, C, *spatial) at the positions of grid (N, *out, rank); output (N, C, *out)."""

    mode: str = "linear"
    padding_mode: str = "zeros"
    align_corners: bool = False

    def check_attributes(self) -> None:
        """AnalysisError naming an attribute outside its allowed values."""
        if self.mode not in GRID_MODES:
            raise AnalysisError(f"GridSample mode {self.mode!r} is not one of {', '.join(GRID_MODES)}")
        if self.padding_mode not in PADDING_MODES:
            raise AnalysisError(f"GridSample padding_mode {self.padding_mode!r} is not one of "
                                f"{', '.join(PADDING_MODES)}")

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        self.check_attributes()
        x, grid = inputs
        if x.rank < 3:
            raise AnalysisError(f"GridSample input must be (N, C, spatial...), got {x}")
        if grid.rank != x.rank:
            raise AnalysisError(f"GridSample grid must have rank {x.rank} like the input {x}, got {grid}")
        if isinstance(grid.shape[-1], int) and grid.shape[-1] != x.rank - 2:
            raise AnalysisError(f"GridSample grid's last axis must hold {x.rank - 2} coordinates, got {grid}")
        if isinstance(x.shape[0], int) and isinstance(grid.shape[0], int) and x.shape[0] != grid.shape[0]:
            raise AnalysisError(f"GridSample batch of the input {x} and of the grid {grid} differ")
        if not grid.dtype.is_float:
            raise AnalysisError(f"GridSample grid must be float, got {grid}")
        if not (x.dtype.is_float or x.dtype.is_integer):
            raise AnalysisError(f"GridSample input must be numeric, got {x}")
        return [TypedFact(x.dtype, (x.shape[0], x.shape[1], *grid.shape[1:-1]))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals_all(inputs[0].rank, inputs[1].rank, outputs[0].rank)
        s.equals(outputs[0].shape[0], inputs[0].shape[0])
        s.equals(outputs[0].shape[1], inputs[0].shape[1])

    def eval(self, inputs):
        x, grid = inputs
        spatial = x.shape[2:]
        if grid.shape[0] != x.shape[0] or grid.shape[-1] != len(spatial):
            raise RunError(f"GridSample grid of shape {grid.shape} does not fit input of shape {x.shape}")
        work = np.float64 if np.float64 in (x.dtype, grid.dtype) else np.float32
        out_shape = (x.shape[0], x.shape[1], *grid.shape[1:-1])
        check_alloc(out_shape, work, "GridSample output")
        if 0 in spatial:
            if 0 in out_shape:
                return [np.zeros(out_shape, dtype=x.dtype)]
            raise RunError(f"GridSample cannot sample an input of shape {x.shape} with an empty spatial axis")
        axes_taps = []
        for axis, size in enumerate(spatial):
            coords = widened(grid[..., len(spatial) - 1 - axis]).astype(work)
            axes_taps.append(self._axis_taps(coords, size))
        channels_last = np.moveaxis(x, 1, -1)
        return [gather_taps(channels_last, axes_taps, x.dtype, work)]

    def _axis_taps(self, coords: np.ndarray, size: int) -> list:
        """Normalised positions along one spatial axis → its kernel taps (see :func:`pixel_taps`)."""
        if self.align_corners:
            return pixel_taps((coords + 1) / 2 * (size - 1), size, self.mode, self.padding_mode, 0.0, size - 1.0)
        return pixel_taps(((coords + 1) * size - 1) / 2, size, self.mode, self.padding_mode, -0.5, size - 0.5)


def pixel_taps(coords: np.ndarray, size: int, mode: str, padding_mode: str, low: float, high: float) -> list:
    """Kernel taps reading pixel positions ``coords`` along an axis of ``size`` pixels.

    Returns ``(index, valid, weight)`` per tap (``valid``/``weight`` None: all valid /
    weight 1). Positions outside ``[low, high]`` are padded by ``padding_mode``.
    """
    if mode == "nearest":
        coords = np.rint(coords)
    # cubic keeps the position and pads each tap on its own, as PyTorch does
    if mode != "cubic":
        outside = (coords < low) | (coords > high)
        if padding_mode == "border":
            coords = np.where(outside, np.clip(coords, 0, size - 1), coords)
        elif padding_mode == "reflection":
            coords = np.where(outside, reflect(coords, low, high).astype(coords.dtype), coords)
    if mode == "nearest":
        return [_fetch(np.trunc(coords).astype(np.int64), size, padding_mode, low, high) + (None,)]
    base = np.floor(coords)
    fraction = coords - base
    base = base.astype(np.int64)
    if mode == "linear":
        offsets, weights = (0, 1), (1 - fraction, fraction)
    else:
        offsets = (-1, 0, 1, 2)
        weights = tuple(cubic_kernel(offset - fraction, GRID_CUBIC_A).astype(fraction.dtype) for offset in offsets)
    return [_fetch(base + offset, size, padding_mode, low, high) + (weight,)
            for offset, weight in zip(offsets, weights)]


def _fetch(index: np.ndarray, size: int, padding_mode: str, low: float, high: float):
    """Where tap ``index`` reads under the padding mode, and (zeros) whether it reads at all."""
    if padding_mode == "zeros":
        valid = (index >= 0) & (index < size)
        return np.clip(index, 0, size - 1), valid
    if padding_mode == "reflection":
        index = np.trunc(reflect(index.astype(np.float64), low, high)).astype(np.int64)
    return np.clip(index, 0, size - 1), None


def reflect(coords: np.ndarray, low: float, high: float) -> np.ndarray:
    """Fold positions outside ``[low, high]`` back inside by mirroring at the borders."""
    coords = np.asarray(coords, dtype=np.float64)
    span = high - low
    if span <= 0:
        return np.full_like(coords, low)
    below = coords < low
    distance = np.where(below, low - coords, coords - high)
    flips = np.floor(distance / span)
    rest = distance - flips * span
    even = flips % 2 == 0
    from_low, from_high = low + rest, high - rest
    folded = np.where(below, np.where(even, from_low, from_high), np.where(even, from_high, from_low))
    return np.where(below | (coords > high), folded, coords)


def gather_taps(channels_last: np.ndarray, axes_taps: list, dtype: np.dtype, work) -> np.ndarray:
    """Sum over every combination of per-axis taps of weight × value; returns (N, C, *out).

    ``channels_last`` is (N, *spatial, C); each tap is ``(index, valid, weight)`` with
    arrays shaped (N, *out) (``valid``/``weight`` None mean all / 1).
    """
    batch = channels_last.shape[0]
    out_shape = axes_taps[0][0][0].shape
    batch_index = np.arange(batch).reshape((batch,) + (1,) * (len(out_shape) - 1))
    exact = all(weight is None for taps in axes_taps for _, _, weight in taps)
    source = channels_last if exact else widened(channels_last).astype(work, copy=False)
    total = None
    for combo in itertools.product(*axes_taps):
        values = source[(batch_index,) + tuple(index for index, _, _ in combo)]
        factor = None
        for _, valid, weight in combo:
            for part in (valid, weight):
                if part is not None:
                    factor = part if factor is None else factor * part
        if factor is not None:
            values = values * factor[..., None].astype(values.dtype, copy=False)
        total = values if total is None else total + values
    result = np.ascontiguousarray(np.moveaxis(total, -1, 1))
    return result.astype(dtype, copy=False) if exact else cast_back(result, dtype)


@dataclass(frozen=True)
class AffineGrid(Op):
    """Sampling grid (N, *size[2:], rank) of the affine maps theta (N, rank, rank + 1) over a ``size`` image."""

    align_corners: bool = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        theta, size = inputs
        if theta.rank != 3 or theta.shape[1:] not in ((2, 3), (3, 4)):
            raise AnalysisError(f"AffineGrid theta must be (N, 2, 3) or (N, 3, 4), got {theta}")
        if not theta.dtype.is_float:
            raise AnalysisError(f"AffineGrid theta must be float, got {theta}")
        rank = theta.shape[1]
        if size.rank != 1 or size.shape[0] != rank + 2 or not size.dtype.is_integer:
            raise AnalysisError(f"AffineGrid size must be {rank + 2} integers (N, C, spatial...) for "
                                f"theta {theta}, got {size}")
        values = int_values(size)
        spatial = values[2:] if values is not None else [fresh_symbol() for _ in range(rank)]
        for dim in spatial:
            if isinstance(dim, int) and dim <= 0:
                raise AnalysisError(f"AffineGrid size {values} must be positive")
        return [TypedFact(theta.dtype, (theta.shape[0], *spatial, rank))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(outputs[0].shape[0], inputs[0].shape[0])

    def eval(self, inputs):
        theta, size = inputs
        rank = theta.shape[1]
        spatial = [int(v) for v in size.ravel()[2:]]
        if len(spatial) != rank or any(d <= 0 for d in spatial):
            raise RunError(f"AffineGrid size {size.tolist()} must be {rank + 2} positive dims for theta "
                           f"of shape {theta.shape}")
        check_alloc((theta.shape[0], *spatial, rank), theta.dtype, "AffineGrid output")
        lines = [self._line(d) for d in spatial]
        mesh = np.meshgrid(*lines, indexing="ij")
        homogeneous = np.stack([*reversed(mesh), np.ones(spatial)], axis=-1)  # x (innermost axis) first
        grid = np.einsum("...k,njk->n...j", homogeneous, widened(theta).astype(np.float64))
        return [grid.astype(theta.dtype)]

    def _line(self, length: int) -> np.ndarray:
        if self.align_corners:
            return np.linspace(-1.0, 1.0, length) if length > 1 else np.full(1, -1.0)
        return (2 * np.arange(length) + 1) / length - 1

