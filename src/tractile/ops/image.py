"""Resize (ONNX Resize and the deprecated Upsample): nearest, N-linear and cubic resampling.

Resampling is separable: each resized axis gets a small 1-d filter (for every output
position, ``taps`` source indices and their weights) applied with one gather and one
weighted sum, so the work is vectorised over every pixel. Nearest mode is a plain
gather and keeps the input's datum type exactly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..dim import TDim, fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from ..patch import ModelPatch
from .axes import moved_qparams, resolve_axes, widened
from .base import Op, check_alloc, expect_inputs

RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize", "tf_half_pixel_for_nn")
#: ``simple`` is the rounding of ONNX Resize-10 / Upsample: floor when upsampling, ceil when downsampling
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")
#: the coordinate modes of TFLite's resizes (``arithmetic="tflite"``)
TFLITE_COORDINATES = {"linear": ("align_corners", "half_pixel", "asymmetric"),
                      "nearest": ("align_corners", "tf_half_pixel_for_nn", "asymmetric")}


@dataclass(frozen=True)
class AxisPlan:
    """How one axis is resized: its output length, the scale the coordinates use, its crop box."""

    axis: int
    size: int
    scale: float
    roi: tuple[float, float] = (0.0, 1.0)


@dataclass(frozen=True)
class Resize(Op):
    """ONNX Resize: inputs X, roi, scales, sizes; absent ones are empty 1-d tensors.

    Exactly one of scales and sizes must be non-empty. ``axes`` (None: all) names the
    axes that roi, scales and sizes describe.

    ``arithmetic="tflite"``: TFLite's RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR on NHWC
    (axes 1 and 2, sizes given; coordinate modes align_corners, half_pixel (bilinear),
    tf_half_pixel_for_nn (nearest) or asymmetric), float32 coordinates and TFLite's integer
    rounding (:mod:`.image_tflite`). The output keeps the input's quantization.
    """

    mode: str = "nearest"
    coordinate_mode: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_coeff_a: float = -0.75
    exclude_outside: bool = False
    extrapolation_value: float = 0.0
    antialias: bool = False
    axes: tuple[int, ...] | None = None
    keep_aspect_ratio_policy: str = "stretch"
    arithmetic: str = "onnx"

    def check_attributes(self) -> None:
        """AnalysisError naming the first attribute outside its allowed values."""
        for name, value, allowed in (("mode", self.mode, RESIZE_MODES),
                                     ("coordinate_transformation_mode", self.coordinate_mode, COORDINATE_MODES),
                                     ("nearest_mode", self.nearest_mode, NEAREST_MODES),
                                     ("keep_aspect_ratio_policy", self.keep_aspect_ratio_policy, ASPECT_POLICIES)):
            if value not in allowed:
                raise AnalysisError(f"Resize {name} {value!r} is not one of {', '.join(allowed)}")
        if self.arithmetic not in ("onnx", "tflite"):
            raise AnalysisError(f"Resize arithmetic {self.arithmetic!r} is not onnx or tflite")
        if self.arithmetic == "tflite":
            modes = TFLITE_COORDINATES["linear" if self.mode == "linear" else "nearest"]
            if self.mode not in ("linear", "nearest") or self.coordinate_mode not in modes \
                    or tuple(self.axes or ()) != (1, 2):
                raise AnalysisError(f"TFLite's resize is linear or nearest over axes (1, 2) with coordinates "
                                    f"{', '.join(modes)}; got {self.mode}, {self.coordinate_mode}, axes {self.axes}")

    def _axes(self, rank: int, error=AnalysisError) -> list[int]:
        if self.axes is None:
            return list(range(rank))
        return resolve_axes(self.axes, rank, "Resize axis", error)

    # analysis ---------------------------------------------------------------------------------
    def output_facts(self, inputs):
        expect_inputs(inputs, 4, self)
        self.check_attributes()
        x, roi, scales, sizes = inputs
        if self.arithmetic == "tflite" and (x.rank != 4 or not sizes.shape[0]):
            raise AnalysisError(f"TFLite's resize needs a 4-d NHWC input and sizes, got {x}")
        axes = self._axes(x.rank)
        for what, fact in (("roi", roi), ("scales", scales), ("sizes", sizes)):
            if fact.rank != 1 or not isinstance(fact.shape[0], int):
                raise AnalysisError(f"Resize {what} must be a 1-d tensor of known length, got {fact}")
        if sizes.shape[0] and not sizes.dtype.is_integer:
            raise AnalysisError(f"Resize sizes must be integers, got {sizes}")
        if scales.shape[0] and not scales.dtype.is_float:
            raise AnalysisError(f"Resize scales must be floats, got {scales}")
        use_sizes = _pick_sizes(scales.shape[0], sizes.shape[0], len(axes), AnalysisError)
        dims = list(x.shape)
        if use_sizes:
            dims = self._dims_from_sizes(x.shape, axes, sizes.known_value(), dims)
        else:
            dims = _dims_from_scales(x.shape, axes, scales.konst, dims)
        return [TypedFact(x.dtype, dims, qparams=moved_qparams(x, lambda a: a if a not in axes else None))]

    def _dims_from_sizes(self, shape, axes, value, dims):
        if value is None:
            return [fresh_symbol() if a in axes else d for a, d in enumerate(dims)]
        items = [v if isinstance(v, TDim) else int(v) for v in value.ravel().tolist()]
        if self.keep_aspect_ratio_policy == "stretch":
            for axis, item in zip(axes, items):
                if isinstance(item, int) and item < 0:
                    raise AnalysisError(f"Resize sizes {items} hold a negative size")
                dims[axis] = item
            return dims
        if not all(isinstance(v, int) for v in items) or not all(isinstance(shape[a], int) for a in axes):
            return [fresh_symbol() if a in axes else d for a, d in enumerate(dims)]
        targets, _ = self._targets_from_sizes(shape, axes, items, AnalysisError)
        for axis, target in zip(axes, targets):
            dims[axis] = target
        return dims

    def _targets_from_sizes(self, shape, axes, targets: list[int], error) -> tuple[list[int], list[float]]:
        """Output lengths and coordinate scales for ``sizes`` under the aspect-ratio policy."""
        if any(t < 0 for t in targets):
            raise error(f"Resize sizes {targets} hold a negative size")
        factors = [t / shape[a] if shape[a] else 1.0 for t, a in zip(targets, axes)]
        if self.keep_aspect_ratio_policy != "stretch":
            pick = min if self.keep_aspect_ratio_policy == "not_larger" else max
            common = pick(factors)
            factors = [common] * len(axes)
            targets = [int(common * shape[a] + 0.5) for a in axes]
        return targets, factors

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)

    # evaluation ---------------------------------------------------------------------------------
    def plan(self, shape: list[int], roi, scales, sizes, error=RunError) -> list[AxisPlan]:
        """Per resized axis: output length, coordinate scale and crop box (ONNX rules)."""
        axes = self._axes(len(shape), error)
        count = len(axes)
        use_sizes = _pick_sizes(0 if scales is None else scales.size, 0 if sizes is None else sizes.size,
                                count, error)
        if use_sizes:
            targets, factors = self._targets_from_sizes(shape, axes, [int(v) for v in sizes.ravel()], error)
        else:
            factors = [float(v) for v in np.asarray(scales, dtype=np.float64).ravel()]
            if any(not 0 < f < math.inf for f in factors):
                raise error(f"Resize scales {factors} must all be positive and finite")
            targets = [int(math.floor(shape[a] * f)) for a, f in zip(axes, factors)]
        for axis, target in zip(axes, targets):
            if shape[axis] == 0 and target > 0:
                raise error(f"Resize cannot grow axis {axis} of length 0 to {target}")
        boxes = _roi_boxes(roi, axes, len(shape), error) if self.coordinate_mode == "tf_crop_and_resize" else None
        return [AxisPlan(a, t, f, boxes[i] if boxes else (0.0, 1.0))
                for i, (a, t, f) in enumerate(zip(axes, targets, factors))]

    def eval(self, inputs):
        x, roi, scales, sizes = inputs
        plans = self.plan(list(x.shape), roi, scales, sizes)
        out_shape = list(x.shape)
        for plan in plans:
            out_shape[plan.axis] = plan.size
        check_alloc(out_shape, x.dtype, "Resize output")
        if self.arithmetic == "tflite":
            from .image_tflite import tflite_resize

            half = self.coordinate_mode in ("half_pixel", "tf_half_pixel_for_nn")
            return [tflite_resize(x, out_shape[1], out_shape[2], self.mode == "linear",
                                  self.coordinate_mode == "align_corners", half)]
        if self.mode == "nearest":
            return [self._nearest(x, plans)]
        work = widened(x).astype(np.float64 if x.dtype == np.float64 else np.float32, copy=False)
        for plan in plans:
            if self._is_identity(plan, work.shape[plan.axis]):
                continue
            work = self._filter_axis(work, plan)
        return [cast_back(work, x.dtype)]

    def _is_identity(self, plan: AxisPlan, length: int) -> bool:
        return plan.size == length and plan.scale == 1.0 and plan.roi == (0.0, 1.0)

    def _nearest(self, x: np.ndarray, plans: list[AxisPlan]) -> np.ndarray:
        result = x
        for plan in plans:
            length = result.shape[plan.axis]
            if self._is_identity(plan, length):
                continue
            coords, outside = self._source_coordinates(plan, length)
            index = np.clip(_round_nearest(coords, self.nearest_mode, plan.scale), 0, max(length - 1, 0))
            result = np.take(result, index.astype(np.intp), axis=plan.axis)
            result = self._extrapolate(result, plan.axis, outside)
        return result

    def _filter_axis(self, work: np.ndarray, plan: AxisPlan) -> np.ndarray:
        length = work.shape[plan.axis]
        coords, outside = self._source_coordinates(plan, length)
        index, weights = self._taps(coords, plan.scale, length)
        gathered = np.take(work, index, axis=plan.axis)
        shape = (1,) * plan.axis + weights.shape + (1,) * (work.ndim - plan.axis - 1)
        result = np.sum(gathered * weights.astype(work.dtype).reshape(shape), axis=plan.axis + 1)
        return self._extrapolate(result, plan.axis, outside)

    def _extrapolate(self, result: np.ndarray, axis: int, outside: np.ndarray | None) -> np.ndarray:
        if outside is None or not outside.any():
            return result
        mask = outside.reshape((1,) * axis + outside.shape + (1,) * (result.ndim - axis - 1))
        fill = np.asarray(self.extrapolation_value).astype(result.dtype)
        return np.where(mask, fill, result)

    def _source_coordinates(self, plan: AxisPlan, length: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Where each output position samples the input, and (crop mode) which fall outside it."""
        out = np.arange(plan.size, dtype=np.float64)
        scale = plan.scale
        virtual = scale * length  # the output length before flooring (ONNX's own expected outputs use it)
        mode = self.coordinate_mode
        if mode == "align_corners":
            coords = np.zeros_like(out) if virtual == 1 else out * (length - 1) / (virtual - 1)
        elif mode == "asymmetric":
            coords = out / scale
        elif mode == "pytorch_half_pixel":
            coords = np.zeros_like(out) if plan.size <= 1 else (out + 0.5) / scale - 0.5
        elif mode == "half_pixel":
            coords = (out + 0.5) / scale - 0.5
        elif mode == "half_pixel_symmetric":
            offset = length / 2 * (1 - plan.size / virtual)
            coords = offset + (out + 0.5) / scale - 0.5
        elif mode == "tf_half_pixel_for_nn":
            coords = (out + 0.5) / scale
        else:  # tf_crop_and_resize
            start, end = plan.roi
            if virtual == 1:
                coords = np.full_like(out, (end - start) * (length - 1) / 2)
            else:
                coords = out * (end - start) * (length - 1) / (virtual - 1)
            coords = coords + start * (length - 1)
            return coords, (coords < 0) | (coords > length - 1)
        return coords, None

    def _taps(self, coords: np.ndarray, scale: float, length: int) -> tuple[np.ndarray, np.ndarray]:
        """Source indices (clamped to the edges) and weights, each (output length, taps)."""
        radius = 1.0 if self.mode == "linear" else 2.0
        stretch = min(scale, 1.0) if self.antialias else 1.0
        start = int(np.floor(-radius / stretch) + 1)
        offsets = np.arange(start, 1 - start + 1)
        base = np.floor(coords)
        ratio = coords - base
        on_sample = ratio == 0  # taps lean left: the ratio lies in (0, 1]
        base = np.where(on_sample, base - 1, base).astype(np.int64)
        ratio = np.where(on_sample, 1.0, ratio)
        distance = (offsets[None, :] - ratio[:, None]) * stretch
        weights = _linear_kernel(distance) if self.mode == "linear" else cubic_kernel(distance, self.cubic_coeff_a)
        index = base[:, None] + offsets[None, :]
        if self.exclude_outside:
            weights = np.where((index < 0) | (index >= length), 0.0, weights)
        if self.exclude_outside or self.antialias:
            total = weights.sum(axis=1, keepdims=True)
            weights = weights / np.where(total == 0, 1.0, total)
        return np.clip(index, 0, max(length - 1, 0)).astype(np.intp), weights

    def declutter(self, model, node):
        x = model.outlet_fact(node.inputs[0])
        if node.outputs[0].fact.shape != x.shape or self.coordinate_mode == "tf_crop_and_resize":
            return None
        scales = model.outlet_fact(node.inputs[2]).konst
        sizes = model.outlet_fact(node.inputs[3]).konst
        unit_scales = scales is not None and scales.size and bool(np.all(scales == 1))
        same_sizes = sizes is not None and sizes.size and self.keep_aspect_ratio_policy == "stretch"
        if unit_scales or same_sizes:
            return ModelPatch.shunt_one_op(model, node, f"identity resize {node.name}")
        return None

    def cost(self, inputs):
        taps = 1 if self.mode == "nearest" else 2 if self.mode == "linear" else 4
        out = self.output_facts(inputs)[0]
        return {"flops": 2 * taps * len(self._axes(inputs[0].rank)) * out.volume}


def _pick_sizes(scales_count: int, sizes_count: int, axes_count: int, error) -> bool:
    """True when sizes drive the resize, False for scales; ``error`` if neither or both."""
    if scales_count and sizes_count:
        raise error("Resize takes scales or sizes, not both")
    if not scales_count and not sizes_count:
        raise error("Resize needs scales or sizes")
    count = sizes_count or scales_count
    if count != axes_count:
        what = "sizes" if sizes_count else "scales"
        raise error(f"Resize {what} has {count} entries for {axes_count} resized axes")
    return bool(sizes_count)


def _dims_from_scales(shape, axes, scales, dims):
    if scales is None:
        return [fresh_symbol() if a in axes else d for a, d in enumerate(dims)]
    factors = [float(v) for v in np.asarray(scales, dtype=np.float64).ravel()]
    if any(not 0 < f < math.inf for f in factors):
        raise AnalysisError(f"Resize scales {factors} must all be positive and finite")
    for axis, factor in zip(axes, factors):
        dims[axis] = _scaled_dim(shape[axis], factor)
    return dims


def _scaled_dim(dim, factor: float):
    """``floor(dim * factor)``: exact for ints, symbolic for small rational factors, else fresh."""
    if isinstance(dim, int):
        return int(math.floor(dim * factor))
    ratio = Fraction(factor)
    if ratio.denominator > 64:
        return fresh_symbol()
    return (dim * ratio.numerator) // ratio.denominator if ratio.denominator > 1 else dim * ratio.numerator


def _roi_boxes(roi, axes, rank, error) -> list[tuple[float, float]]:
    values = [] if roi is None else [float(v) for v in np.asarray(roi, dtype=np.float64).ravel()]
    if len(values) == 2 * len(axes):
        return [(values[i], values[i + len(axes)]) for i in range(len(axes))]
    if len(values) == 2 * rank:
        return [(values[a], values[a + rank]) for a in axes]
    raise error(f"Resize roi has {len(values)} entries, expected {2 * len(axes)} (starts then ends)")


def _round_nearest(coords: np.ndarray, mode: str, scale: float) -> np.ndarray:
    base = np.floor(coords)
    fraction = coords - base
    if mode == "round_prefer_floor":
        return np.where(fraction <= 0.5, base, base + 1)
    if mode == "round_prefer_ceil":
        return np.where(fraction < 0.5, base, base + 1)
    if mode == "floor" or (mode == "simple" and scale >= 1):
        return base
    return np.ceil(coords)


def _linear_kernel(distance: np.ndarray) -> np.ndarray:
    return np.clip(1 - np.abs(distance), 0, 1)


def cubic_kernel(distance: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with coefficient ``a``."""
    t = np.abs(distance)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def cast_back(work: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float results in ``dtype``: integers are rounded to nearest and saturated."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(work), info.min, info.max).astype(dtype)
    return work.astype(dtype, copy=False)

