"""Ops that rearrange or replicate data: Expand, Tile, DepthToSpace, SpaceToDepth, Trilu,
ReverseSequence, CenterCropPad.

``Expand`` and ``Tile`` allocate by data, so they call :func:`check_alloc` first, and
both also run on symbolic values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from ..patch import ModelPatch
from .axes import expect_integer, int_values, moved_qparams, resolve_axes, run_scalar, with_known_value
from .base import Op, check_alloc, expect_inputs
from .broadcast import broadcast_shapes


def _shape_input(fact: TypedFact, what: str) -> list | None:
    expect_integer(fact, what)
    if fact.rank != 1 or not isinstance(fact.shape[0], int):
        raise AnalysisError(f"{what} must be a 1-d tensor of known length, got {fact}")
    return int_values(fact)


@dataclass(frozen=True)
class Expand(Op):
    """Broadcast input 0 against the shape held by input 1 (both ways, as NumPy does)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, shape = inputs
        target = _shape_input(shape, "Expand's shape")
        if target is None:
            rank = max(x.rank, shape.shape[0])
            padded = [1] * (rank - x.rank) + list(x.shape)
            return [TypedFact(x.dtype, [d if d != 1 else fresh_symbol() for d in padded])]
        for dim in target:
            if isinstance(dim, int) and dim < 0:
                raise AnalysisError(f"Expand's shape {target} has a negative dimension")
        dims = broadcast_shapes(x.shape, tuple(target))
        fact = TypedFact(x.dtype, dims, qparams=moved_qparams(x, lambda a: a + len(dims) - x.rank))
        if x.sym_value is not None and all(isinstance(d, int) for d in dims):
            with_known_value(fact, np.broadcast_to(x.sym_value, [int(d) for d in dims]))
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x, shape = inputs
        target = [int(d) for d in shape.reshape(-1).tolist()]
        try:
            dims = np.broadcast_shapes(x.shape, tuple(target))
        except ValueError:
            raise RunError(f"Expand: cannot broadcast an input of shape {x.shape} to {tuple(target)}") from None
        check_alloc(dims, x.dtype, "Expand")
        return [np.array(np.broadcast_to(x, dims))]

    def declutter(self, model, node):
        return _shunt_if_same_shape(model, node, "no-op expand")


@dataclass(frozen=True)
class Tile(Op):
    """Repeat input 0 along each axis the number of times held by input 1."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, repeats_fact = inputs
        repeats = _shape_input(repeats_fact, "Tile's repeats")
        if repeats_fact.shape[0] != x.rank:
            raise AnalysisError(f"Tile's repeats {repeats_fact} must have one entry per axis of {x}")
        if repeats is None:
            return [TypedFact(x.dtype, [0 if d == 0 else fresh_symbol() for d in x.shape])]
        if any(isinstance(r, int) and r < 0 for r in repeats):
            raise AnalysisError(f"Tile's repeats {repeats} must not be negative")
        fact = TypedFact(x.dtype, [d * r for d, r in zip(x.shape, repeats)],
                         qparams=moved_qparams(x, lambda a: a if repeats[a] == 1 else None))
        if x.sym_value is not None and all(isinstance(r, int) for r in repeats):
            with_known_value(fact, np.tile(x.sym_value, repeats))
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)
        s.equals(inputs[1].shape[0], inputs[0].rank,
                 why="Tile's repeats must have one entry per axis of the input ({} entries, rank {})")

    def eval(self, inputs):
        x, repeats = inputs
        repeats = [int(r) for r in repeats.reshape(-1).tolist()]
        if len(repeats) != x.ndim or any(r < 0 for r in repeats):
            raise RunError(f"Tile: repeats {repeats} must be {x.ndim} non-negative counts")
        check_alloc([d * r for d, r in zip(x.shape, repeats)], x.dtype, "Tile")
        return [np.tile(x, repeats)]

    def declutter(self, model, node):
        return _shunt_if_same_shape(model, node, "no-op tile")


def _shunt_if_same_shape(model, node, label: str) -> ModelPatch | None:
    """Remove a node that only replicates data when its output has its input's shape (for constant
    parameters only: run-time ones must still be checked)."""
    if model.outlet_fact(node.inputs[1]).konst is not None and \
            model.outlet_fact(node.inputs[0]).shape == node.outputs[0].fact.shape:
        return ModelPatch.shunt_one_op(model, node, f"{label} {node.name}")
    return None


def _divided(dim, by: int, what: str):
    if isinstance(dim, int):
        if dim % by:
            raise AnalysisError(f"{what}: {dim} is not a multiple of {by}")
        return dim // by
    exact = dim.div_exact(by)
    if exact is None:
        raise AnalysisError(f"{what}: {dim} is not a multiple of {by}")
    return exact


_LAYOUTS = ("NCHW", "NHWC")


def _nchw_dims(x: TypedFact, data_format: str) -> tuple:
    n, a, b, c = x.shape
    return (n, c, a, b) if data_format == "NHWC" else (n, a, b, c)


def _in_layout(dims, data_format: str) -> list:
    n, c, h, w = dims
    return [n, h, w, c] if data_format == "NHWC" else [n, c, h, w]


@dataclass(frozen=True)
class DepthToSpace(Op):
    """Move channel blocks into ``blocksize`` x ``blocksize`` spatial tiles (NCHW, or NHWC
    with ``data_format``).

    ``mode`` DCR reads channels as (block row, block column, channel), CRD as (channel, block row, block column).
    """

    blocksize: int
    mode: str = "DCR"
    data_format: str = "NCHW"

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        _check_block_op(self.blocksize, self.mode, x, "DepthToSpace", self.data_format)
        n, c, h, w = _nchw_dims(x, self.data_format)
        b = self.blocksize
        dims = _in_layout([n, _divided(c, b * b, "DepthToSpace channels"), h * b, w * b], self.data_format)
        return [TypedFact(x.dtype, dims, qparams=moved_qparams(x))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, 4, why=f"{self.name} needs a 4-d {self.data_format} input (rank {{}} given)")
        s.equals(outputs[0].rank, 4)

    def eval(self, inputs):
        x = _to_nchw(inputs[0], self.data_format)
        n, c, h, w = x.shape
        b = self.blocksize
        if self.mode == "DCR":
            tiles = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            tiles = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return [_from_nchw(tiles.reshape(n, c // (b * b), h * b, w * b), self.data_format)]


@dataclass(frozen=True)
class SpaceToDepth(Op):
    """Move ``blocksize`` x ``blocksize`` spatial tiles into channels (inverse of DepthToSpace)."""

    blocksize: int
    mode: str = "DCR"
    data_format: str = "NCHW"

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        _check_block_op(self.blocksize, self.mode, x, "SpaceToDepth", self.data_format)
        n, c, h, w = _nchw_dims(x, self.data_format)
        b = self.blocksize
        dims = _in_layout([n, c * b * b, _divided(h, b, "SpaceToDepth height"), _divided(w, b, "SpaceToDepth width")],
                          self.data_format)
        return [TypedFact(x.dtype, dims, qparams=moved_qparams(x))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, 4, why=f"{self.name} needs a 4-d {self.data_format} input (rank {{}} given)")
        s.equals(outputs[0].rank, 4)

    def eval(self, inputs):
        x = _to_nchw(inputs[0], self.data_format)
        n, c, h, w = x.shape
        b = self.blocksize
        tiles = x.reshape(n, c, h // b, b, w // b, b)
        order = (0, 3, 5, 1, 2, 4) if self.mode == "DCR" else (0, 1, 3, 5, 2, 4)
        return [_from_nchw(tiles.transpose(order).reshape(n, c * b * b, h // b, w // b), self.data_format)]


def _to_nchw(x: np.ndarray, data_format: str) -> np.ndarray:
    return x.transpose(0, 3, 1, 2) if data_format == "NHWC" else x


def _from_nchw(x: np.ndarray, data_format: str) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if data_format == "NHWC" else x


def _check_block_op(blocksize: int, mode: str, x: TypedFact, what: str, data_format: str = "NCHW") -> None:
    if blocksize < 1:
        raise AnalysisError(f"{what} blocksize must be positive, got {blocksize}")
    if mode not in ("DCR", "CRD"):
        raise AnalysisError(f"{what} mode must be DCR or CRD, got {mode!r}")
    if data_format not in _LAYOUTS:
        raise AnalysisError(f"{what} data_format must be NCHW or NHWC, got {data_format!r}")
    if x.rank != 4:
        raise AnalysisError(f"{what} needs a 4-d {data_format} input, got {x}")


@dataclass(frozen=True)
class Trilu(Op):
    """Keep the upper (or lower) triangle of the last two axes from diagonal ``k`` (optional input 1)."""

    upper: bool = True

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 2), self)
        x = inputs[0]
        if x.rank < 2:
            raise AnalysisError(f"Trilu needs an input of rank 2 or more, got {x}")
        if len(inputs) == 2:
            expect_integer(inputs[1], "Trilu's k")
        return [TypedFact(x.dtype, x.shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        x = inputs[0]
        k = int(run_scalar(inputs[1], "Trilu's k")) if len(inputs) == 2 else 0
        rows, cols = x.shape[-2:]
        offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
        keep = offset >= k if self.upper else offset <= k
        return [np.where(keep, x, np.zeros((), dtype=x.dtype))]


@dataclass(frozen=True)
class ReverseSequence(Op):
    """Reverse the first ``sequence_lens[b]`` steps along ``time_axis`` of each batch entry ``b``."""

    batch_axis: int = 1
    time_axis: int = 0

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, lengths = inputs
        if x.rank < 2:
            raise AnalysisError(f"ReverseSequence needs an input of rank 2 or more, got {x}")
        batch_axis, time_axis = resolve_axes([self.batch_axis, self.time_axis], x.rank, "ReverseSequence axis")
        if lengths.rank != 1 or not lengths.dtype.is_integer:
            raise AnalysisError(f"ReverseSequence sequence_lens must be a 1-d integer tensor, got {lengths}")
        a, b = lengths.shape[0], x.shape[batch_axis]
        if isinstance(a, int) and isinstance(b, int) and a != b:
            raise AnalysisError(f"ReverseSequence has {a} sequence lengths for a batch of {b}")
        return [TypedFact(x.dtype, x.shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        x, lengths = inputs
        batch_axis, time_axis = resolve_axes([self.batch_axis, self.time_axis], x.ndim, "ReverseSequence axis",
                                             RunError)
        steps = x.shape[time_axis]
        lengths = lengths.astype(np.int64).reshape(-1)
        if lengths.shape[0] != x.shape[batch_axis] or ((lengths < 0) | (lengths > steps)).any():
            raise RunError(f"ReverseSequence sequence_lens {lengths.tolist()} must hold one length in "
                           f"[0, {steps}] per batch entry ({x.shape[batch_axis]})")
        time = np.arange(steps)[None, :]
        source = np.where(time < lengths[:, None], lengths[:, None] - 1 - time, time)
        shape = [1] * x.ndim
        shape[batch_axis], shape[time_axis] = source.shape
        if batch_axis > time_axis:
            source = source.T
        return [np.take_along_axis(x, source.reshape(shape), axis=time_axis)]


@dataclass(frozen=True)
class CenterCropPad(Op):
    """Crop or zero-pad ``axes`` (all if None) around their centre to the sizes held by input 1."""

    axes: tuple[int, ...] | None = None

    def _axes(self, rank: int, error=AnalysisError) -> list[int]:
        return list(range(rank)) if self.axes is None else resolve_axes(self.axes, rank, "CenterCropPad axis",
                                                                        error)

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, shape = inputs
        axes = self._axes(x.rank)
        if shape.rank != 1 or shape.shape[0] != len(axes):
            raise AnalysisError(f"CenterCropPad shape {shape} must hold one size per axis {axes}")
        target = _shape_input(shape, "CenterCropPad shape") or [fresh_symbol() for _ in axes]
        dims = list(x.shape)
        for axis, size in zip(axes, target):
            if isinstance(size, int) and size < 0:
                raise AnalysisError(f"CenterCropPad shape {target} has a negative size")
            dims[axis] = size
        return [TypedFact(x.dtype, dims)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)

    def eval(self, inputs):
        x, shape = inputs
        axes = self._axes(x.ndim, RunError)
        target = [int(d) for d in shape.reshape(-1).tolist()]
        if len(target) != len(axes) or any(d < 0 for d in target):
            raise RunError(f"CenterCropPad shape {target} must hold one non-negative size per axis {axes}")
        window = [slice(None)] * x.ndim
        widths = [(0, 0)] * x.ndim
        for axis, size in zip(axes, target):
            have = x.shape[axis]
            if have > size:
                start = (have - size) // 2
                window[axis] = slice(start, start + size)
            else:
                widths[axis] = ((size - have) // 2, size - have - (size - have) // 2)
        cropped = x[tuple(window)]
        check_alloc([d + b + e for d, (b, e) in zip(cropped.shape, widths)], x.dtype, "CenterCropPad")
        return [np.pad(cropped, widths)]

