"""Column ↔ image ops: Col2Im (sum of sliding blocks back into an image) and DeformConv."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..dim import fresh_symbol, volume
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import int_values, widened
from .base import Op, check_alloc, expect_inputs
from .grid import gather_taps, pixel_taps
from .window import Window


def _per_axis(values: tuple[int, ...] | None, rank: int, default: int, what: str, error) -> tuple[int, ...]:
    if values is None:
        return (default,) * rank
    if len(values) != rank:
        raise error(f"{what} {list(values)} should have {rank} entries")
    return tuple(values)


@dataclass(frozen=True)
class Col2Im(Op):
    """ONNX Col2Im: input (N, C·∏block, L), image_shape, block_shape → (N, C, *image_shape).

    Each of the L columns is a block of the image (blocks in row-major order, sliding
    with ``strides`` and ``dilations`` over the image padded by ``pads``); overlapping
    blocks add up.
    """

    dilations: tuple[int, ...] | None = None
    pads: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None

    def geometry(self, image: list[int], block: list[int], error=RunError) -> tuple[list[int], list[int]]:
        """Begin pads and the number of blocks along each axis."""
        rank = len(image)
        if len(block) != rank:
            raise error(f"Col2Im block_shape {block} and image_shape {image} differ in length")
        dilations = _per_axis(self.dilations, rank, 1, "Col2Im dilations", error)
        strides = _per_axis(self.strides, rank, 1, "Col2Im strides", error)
        pads = _per_axis(self.pads, 2 * rank, 0, "Col2Im pads", error)
        if min(dilations + strides) < 1 or min(block) < 1 or min(pads) < 0 or min(image) < 0:
            raise error(f"Col2Im needs positive block {block}, strides {list(strides)}, dilations {list(dilations)} "
                        f"and non-negative image {image} and pads {list(pads)}")
        counts = []
        for axis in range(rank):
            span = image[axis] + pads[axis] + pads[axis + rank] - (dilations[axis] * (block[axis] - 1) + 1)
            if span < 0:
                raise error(f"Col2Im block {block} (dilated) does not fit the padded image on axis {axis}")
            counts.append(span // strides[axis] + 1)
        return list(pads[:rank]), counts

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        data, image, block = inputs
        if data.rank != 3:
            raise AnalysisError(f"Col2Im input must be (N, C * block volume, L), got {data}")
        for what, fact in (("image_shape", image), ("block_shape", block)):
            if fact.rank != 1 or not isinstance(fact.shape[0], int) or not fact.dtype.is_integer:
                raise AnalysisError(f"Col2Im {what} must be a 1-d integer tensor of known length, got {fact}")
        rank = image.shape[0]
        image_dims, block_dims = int_values(image), int_values(block)
        channels = fresh_symbol()
        if block_dims is not None and all(isinstance(b, int) for b in block_dims):
            size = volume(block_dims)
            if isinstance(data.shape[1], int) and (size <= 0 or data.shape[1] % size):
                raise AnalysisError(f"Col2Im input has {data.shape[1]} rows, not a multiple of the block volume "
                                    f"{size} (block_shape {block_dims})")
            channels = data.shape[1] // size if size > 0 else channels
            if image_dims is not None and all(isinstance(d, int) for d in image_dims):
                _, counts = self.geometry(image_dims, block_dims, AnalysisError)
                if isinstance(data.shape[2], int) and data.shape[2] != volume(counts):
                    raise AnalysisError(f"Col2Im input has {data.shape[2]} columns but image {image_dims} holds "
                                        f"{volume(counts)} blocks {block_dims}")
        spatial = image_dims if image_dims is not None else [fresh_symbol() for _ in range(rank)]
        return [TypedFact(data.dtype, (data.shape[0], channels, *spatial))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(outputs[0].shape[0], inputs[0].shape[0])

    def eval(self, inputs):
        data, image, block = inputs
        image = [int(v) for v in image.ravel()]
        block = [int(v) for v in block.ravel()]
        begins, counts = self.geometry(image, block)
        n, rows, columns = data.shape
        size = int(np.prod(block))
        if rows % size or columns != int(np.prod(counts)):
            raise RunError(f"Col2Im input of shape {data.shape} does not hold {int(np.prod(counts))} blocks "
                           f"{block} of whole channels")
        channels = rows // size
        rank = len(image)
        strides = _per_axis(self.strides, rank, 1, "", RunError)
        dilations = _per_axis(self.dilations, rank, 1, "", RunError)
        padded = [i + p + q for i, p, q in zip(image, begins, _per_axis(self.pads, 2 * rank, 0, "", RunError)[rank:])]
        check_alloc((n, channels, *padded), data.dtype, "Col2Im output")
        work = widened(data)
        blocks = work.reshape(n, channels, *block, *counts)
        canvas = np.zeros((n, channels, *padded), dtype=work.dtype)
        for tap in itertools.product(*(range(k) for k in block)):
            target = [slice(None), slice(None)]
            for axis, offset in enumerate(tap):
                start = offset * dilations[axis]
                target.append(slice(start, start + strides[axis] * (counts[axis] - 1) + 1, strides[axis]))
            canvas[tuple(target)] += blocks[(slice(None), slice(None)) + tap]
        crop = (slice(None), slice(None)) + tuple(slice(b, b + i) for b, i in zip(begins, image))
        return [np.ascontiguousarray(canvas[crop]).astype(data.dtype, copy=False)]


@dataclass(frozen=True)
class DeformConv(Op):
    """ONNX DeformConv: X (N, C, *spatial), W (oC, C/group, *kernel), offset (N, og·K·rank, *out),
    optional B (oC; an empty tensor stands for none) and mask (N, og·K, *out).

    Each kernel tap of each output position reads X bilinearly (zero outside) at its
    regular position plus its learnt offset, scaled by the mask; the samples then meet
    the weights in one matmul per group.
    """

    window: Window
    group: int = 1
    offset_group: int = 1

    def output_facts(self, inputs):
        expect_inputs(inputs, (3, 5), self)
        x, w, offset = inputs[:3]
        if x.rank < 3 or w.rank != x.rank or offset.rank != x.rank:
            raise AnalysisError(f"DeformConv needs input, weights and offset of one rank >= 3, got {x}, {w}, {offset}")
        if not x.dtype.is_float or w.dtype != x.dtype or offset.dtype != x.dtype:
            raise AnalysisError(f"DeformConv needs float input, weights and offset of one type, got {x}, {w}, {offset}")
        if not all(isinstance(k, int) for k in w.shape[2:]):
            raise AnalysisError(f"DeformConv kernel spatial dims must be known, got {w}")
        window = self.window.for_kernel(w.shape[2:])
        if self.group < 1 or self.offset_group < 1:
            raise AnalysisError(f"DeformConv group {self.group} and offset_group {self.offset_group} must be >= 1")
        for what, total, parts in (("input channels", x.shape[1], self.group), ("output channels", w.shape[0],
                                   self.group), ("input channels", x.shape[1], self.offset_group)):
            if isinstance(total, int) and total % parts:
                raise AnalysisError(f"DeformConv: {total} {what} cannot be split in {parts} groups")
        if isinstance(x.shape[1], int) and x.shape[1] != w.shape[1] * self.group:
            raise AnalysisError(f"DeformConv input has {x.shape[1]} channels, the weights expect "
                                f"{w.shape[1] * self.group}")
        spatial = window.output_dims(x.shape[2:])
        taps = int(np.prod(window.kernel))
        expected = (x.shape[0], self.offset_group * taps * window.rank, *spatial)
        if offset.shape != expected:
            raise AnalysisError(f"DeformConv offset should be ({', '.join(map(str, expected))}), got {offset}")
        if len(inputs) > 3 and inputs[3].shape not in ((0,), (w.shape[0],)):
            raise AnalysisError(f"DeformConv bias should have shape ({w.shape[0]},), got {inputs[3]}")
        if len(inputs) > 4 and inputs[4].shape != (x.shape[0], self.offset_group * taps, *spatial):
            raise AnalysisError(f"DeformConv mask should be ({x.shape[0]}, {self.offset_group * taps}, "
                                f"{', '.join(map(str, spatial))}), got {inputs[4]}")
        return [TypedFact(x.dtype, (x.shape[0], w.shape[0], *spatial))]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, outputs[0].datum_type)
        s.equals_all(inputs[0].rank, inputs[1].rank, outputs[0].rank)
        s.equals(outputs[0].shape[0], inputs[0].shape[0])
        s.equals(outputs[0].shape[1], inputs[1].shape[0])

    def eval(self, inputs):
        x, w, offset = inputs[:3]
        bias = inputs[3] if len(inputs) > 3 and inputs[3].size else None
        mask = inputs[4] if len(inputs) > 4 else None
        window = self.window.for_kernel(w.shape[2:])
        begins, _, out = window.concrete_pads(x.shape[2:])
        n, channels, *spatial = x.shape
        rank, taps = window.rank, int(np.prod(window.kernel))
        work = np.float64 if x.dtype == np.float64 else np.float32
        check_alloc((n, channels, taps, *out), work, "DeformConv columns")
        offset = widened(offset).astype(work).reshape(n, self.offset_group, taps, rank, *out)
        if mask is not None:
            mask = widened(mask).astype(work).reshape(n, self.offset_group, 1, taps, *out)
        regular = self._regular_positions(window, begins, out)
        per_group = channels // self.offset_group
        columns = np.empty((n, channels, taps, *out), dtype=work)
        pixels = np.moveaxis(widened(x).astype(work, copy=False), 1, -1)
        for g in range(self.offset_group):
            axes_taps = [pixel_taps(regular[axis] + offset[:, g, :, axis], size, "linear", "zeros", 0.0, size - 1.0)
                         for axis, size in enumerate(spatial)]
            sampled = gather_taps(pixels[..., g * per_group:(g + 1) * per_group], axes_taps, np.dtype(work), work)
            if mask is not None:
                sampled *= mask[:, g]
            columns[:, g * per_group:(g + 1) * per_group] = sampled
        out_channels, length = w.shape[0], int(np.prod(out))
        kernel = widened(w).astype(work).reshape(self.group, out_channels // self.group, -1)
        columns = columns.reshape(n, self.group, -1, length)
        y = np.matmul(kernel[None], columns).reshape(n, out_channels, *out)
        if bias is not None:
            y += widened(bias).astype(work).reshape((-1,) + (1,) * rank)
        return [y.astype(x.dtype, copy=False)]

    @staticmethod
    def _regular_positions(window: Window, begins, out) -> list[np.ndarray]:
        """Per spatial axis, the undeformed input position of every (tap, output position): (K, *out)."""
        grids = np.meshgrid(*(np.arange(k) for k in window.kernel), indexing="ij")
        outs = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
        positions = []
        for axis in range(window.rank):
            tap = (grids[axis] * window.dilations[axis]).reshape((-1,) + (1,) * window.rank)
            start = outs[axis] * window.strides[axis] - begins[axis]
            positions.append((tap + start[None]).astype(np.float64))
        return positions

    def cost(self, inputs):
        out = self.output_facts(inputs)[0]
        return {"flops": 2 * out.volume * volume(inputs[1].shape[1:])}
