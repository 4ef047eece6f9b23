"""Region ops: RoiAlign (average or max pooling of bilinear samples) and NonMaxSuppression."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import run_scalar, widened
from .base import Op, check_alloc, expect_inputs

ROI_MODES = ("avg", "max")


@dataclass(frozen=True)
class RoiAlign(Op):
    """ONNX RoiAlign: X (N, C, H, W), rois (R, 4) as x1, y1, x2, y2, batch_indices (R,) → (R, C, oh, ow).

    ``half_pixel`` shifts the scaled boxes by half a pixel (ONNX's default since opset 16);
    without it (``output_half_pixel``, the opset-10 behaviour) boxes are at least 1 pixel.
    Max mode keeps, per sample, the largest of the four weighted corner values, as ONNX
    defines it.
    """

    mode: str = "avg"
    output_height: int = 1
    output_width: int = 1
    sampling_ratio: int = 0
    spatial_scale: float = 1.0
    half_pixel: bool = True

    def check_attributes(self) -> None:
        """AnalysisError naming an attribute outside its allowed values."""
        if self.mode not in ROI_MODES:
            raise AnalysisError(f"RoiAlign mode {self.mode!r} is not one of avg, max")
        if self.output_height < 1 or self.output_width < 1:
            raise AnalysisError(f"RoiAlign output size {self.output_height}x{self.output_width} must be positive")
        if self.sampling_ratio < 0:
            raise AnalysisError(f"RoiAlign sampling_ratio {self.sampling_ratio} must be >= 0")

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        self.check_attributes()
        x, rois, batch = inputs
        if x.rank != 4 or not x.dtype.is_float:
            raise AnalysisError(f"RoiAlign input must be a float (N, C, H, W) tensor, got {x}")
        if rois.rank != 2 or rois.shape[1] != 4 or rois.dtype != x.dtype:
            raise AnalysisError(f"RoiAlign rois must be (R, 4) of the input's type, got {rois}")
        if batch.rank != 1 or not batch.dtype.is_integer:
            raise AnalysisError(f"RoiAlign batch_indices must be a 1-d integer tensor, got {batch}")
        if isinstance(rois.shape[0], int) and isinstance(batch.shape[0], int) and rois.shape[0] != batch.shape[0]:
            raise AnalysisError(f"RoiAlign has {rois.shape[0]} rois but {batch.shape[0]} batch indices")
        return [TypedFact(x.dtype, (rois.shape[0], x.shape[1], self.output_height, self.output_width))]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, outputs[0].datum_type)
        s.equals(outputs[0].rank, 4)
        s.equals_all(inputs[1].shape[0], inputs[2].shape[0], outputs[0].shape[0])
        s.equals(outputs[0].shape[1], inputs[0].shape[1])

    def eval(self, inputs):
        x, rois, batch = inputs
        n, channels, height, width = x.shape
        count = rois.shape[0]
        if batch.shape != (count,) or rois.shape != (count, 4):
            raise RunError(f"RoiAlign: rois of shape {rois.shape} and batch_indices of shape {batch.shape} differ")
        batch = batch.astype(np.int64)
        if count and (batch.min() < 0 or batch.max() >= n):
            raise RunError(f"RoiAlign: batch index out of range for a batch of {n}: {batch.tolist()}")
        if count and not height * width:
            raise RunError(f"RoiAlign cannot pool rois from an empty feature map of shape {x.shape}")
        oh, ow = self.output_height, self.output_width
        check_alloc((count, channels, oh, ow), x.dtype, "RoiAlign output")
        work = np.float64 if x.dtype == np.float64 else np.float32
        pixels = np.moveaxis(widened(x).astype(work, copy=False), 1, -1)  # N, H, W, C
        boxes = rois.astype(np.float64) * self.spatial_scale - (0.5 if self.half_pixel else 0.0)
        start_w, start_h = boxes[:, 0], boxes[:, 1]
        roi_w, roi_h = boxes[:, 2] - start_w, boxes[:, 3] - start_h
        if not self.half_pixel:
            roi_w, roi_h = np.maximum(roi_w, 1.0), np.maximum(roi_h, 1.0)
        bin_h, bin_w = roi_h / oh, roi_w / ow
        if self.sampling_ratio > 0:
            grid_h = grid_w = np.full(count, self.sampling_ratio, dtype=np.int64)
        else:
            grid_h, grid_w = (np.ceil(np.where(np.isfinite(size) & (size > 0), size, 0)).astype(np.int64)
                              for size in (bin_h, bin_w))
        samples = np.maximum(grid_h * grid_w, 1)
        result = np.zeros((count, oh, ow, channels), dtype=work)
        if self.mode == "max":
            result.fill(-np.inf)
        roi_batch = batch[:, None, None]
        for iy in range(int(grid_h.max(initial=0))):
            rows = _sample_axis(start_h, bin_h, grid_h, iy, oh, height)
            for ix in range(int(grid_w.max(initial=0))):
                cols = _sample_axis(start_w, bin_w, grid_w, ix, ow, width)
                active = ((iy < grid_h) & (ix < grid_w))[:, None, None, None]
                corners = []
                for low_y, weight_y in ((rows[0], rows[2]), (rows[1], rows[3])):
                    for low_x, weight_x in ((cols[0], cols[2]), (cols[1], cols[3])):
                        weight = (weight_y[:, :, None] * weight_x[:, None, :])[..., None].astype(work)
                        values = pixels[roi_batch, low_y[:, :, None], low_x[:, None, :]]
                        corners.append(weight * values)
                if self.mode == "avg":
                    result += np.where(active, corners[0] + corners[1] + corners[2] + corners[3], 0)
                else:
                    best = np.maximum(np.maximum(corners[0], corners[1]), np.maximum(corners[2], corners[3]))
                    result = np.where(active, np.maximum(result, best), result)
        if self.mode == "avg":
            result /= samples[:, None, None, None].astype(work)
        else:
            result = np.where(np.isneginf(result), 0, result)
        return [np.ascontiguousarray(np.moveaxis(result, -1, 1)).astype(x.dtype, copy=False)]


def _sample_axis(start, bin_size, grid, step: int, bins: int, length: int):
    """For sample ``step`` of every bin along one axis: (low index, high index, low weight, high weight).

    Each is (R, bins); samples beyond the map (more than one pixel out) get zero weights.
    """
    position = (start[:, None] + np.arange(bins)[None, :] * bin_size[:, None]
                + (step + 0.5) * bin_size[:, None] / np.maximum(grid, 1)[:, None])
    inside = (position >= -1.0) & (position <= length)
    position = np.maximum(position, 0.0)
    low = np.floor(position).astype(np.int64)
    at_edge = low >= length - 1
    low = np.where(at_edge, length - 1, low)
    high = np.where(at_edge, length - 1, low + 1)
    position = np.where(at_edge, low, position)
    fraction = position - low
    low, high = np.clip(low, 0, length - 1), np.clip(high, 0, length - 1)  # NaN positions read a weight of 0
    return low, high, np.where(inside, 1 - fraction, 0.0), np.where(inside, fraction, 0.0)


@dataclass(frozen=True)
class NonMaxSuppression(Op):
    """ONNX NonMaxSuppression: boxes (B, N, 4), scores (B, C, N), then optional max boxes per class,
    IoU threshold and score threshold → selected (K, 3) rows of (batch, class, box), K known at run time.

    Boxes are corners (y1, x1, y2, x2, either diagonal) or, with ``center_point_box``,
    (x center, y center, width, height). A box is dropped when its IoU with a kept box is
    above the threshold; a score must be above the score threshold to count.
    """

    center_point_box: bool = False

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 5), self)
        boxes, scores = inputs[0], inputs[1]
        if boxes.rank != 3 or boxes.shape[2] != 4 or not boxes.dtype.is_float:
            raise AnalysisError(f"NonMaxSuppression boxes must be float (batch, boxes, 4), got {boxes}")
        if scores.rank != 3 or not scores.dtype.is_float:
            raise AnalysisError(f"NonMaxSuppression scores must be float (batch, classes, boxes), got {scores}")
        for axis, other in ((0, 0), (1, 2)):
            a, b = boxes.shape[axis], scores.shape[other]
            if isinstance(a, int) and isinstance(b, int) and a != b:
                raise AnalysisError(f"NonMaxSuppression boxes {boxes} and scores {scores} disagree on the "
                                    f"{'batch' if axis == 0 else 'box count'}")
        for index, what in ((2, "max_output_boxes_per_class"), (3, "iou_threshold"), (4, "score_threshold")):
            if len(inputs) > index and inputs[index].rank > 1:
                raise AnalysisError(f"NonMaxSuppression {what} must be a scalar, got {inputs[index]}")
        return [TypedFact(DatumType.I64, (fresh_symbol(), 3))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, DatumType.I64)
        s.equals(outputs[0].rank, 2)
        s.equals(outputs[0].shape[1], 3)

    def eval(self, inputs):
        boxes, scores = inputs[0], inputs[1]
        if boxes.shape[0] != scores.shape[0] or boxes.shape[1] != scores.shape[2] or boxes.shape[2:] != (4,):
            raise RunError(f"NonMaxSuppression: boxes {boxes.shape} and scores {scores.shape} do not fit")
        limit = int(run_scalar(inputs[2], "max_output_boxes_per_class")) if len(inputs) > 2 and inputs[2].size else 0
        work = widened(boxes).dtype
        iou_threshold = _threshold(inputs, 3, work)
        score_threshold = _threshold(inputs, 4, scores.dtype) if len(inputs) > 4 else None
        corners = self._corners(widened(boxes))
        selected = []
        for batch in range(scores.shape[0]):
            for klass in range(scores.shape[1]):
                for box in _greedy(corners[batch], scores[batch, klass], limit, iou_threshold, score_threshold):
                    selected.append((batch, klass, box))
        return [np.asarray(selected, dtype=np.int64).reshape(-1, 3)]

    def _corners(self, boxes: np.ndarray) -> np.ndarray:
        """(..., 4) as x min, y min, x max, y max, in the boxes' own arithmetic."""
        if self.center_point_box:
            half_w, half_h = boxes[..., 2] / 2, boxes[..., 3] / 2
            return np.stack([boxes[..., 0] - half_w, boxes[..., 1] - half_h,
                             boxes[..., 0] + half_w, boxes[..., 1] + half_h], axis=-1)
        ys, xs = boxes[..., 0::2], boxes[..., 1::2]
        return np.stack([xs.min(-1), ys.min(-1), xs.max(-1), ys.max(-1)], axis=-1)


def _threshold(inputs, index: int, dtype):
    if len(inputs) <= index or not inputs[index].size:
        return np.asarray(0, dtype=dtype)
    return np.asarray(run_scalar(inputs[index], "NonMaxSuppression threshold"), dtype=dtype)


def _greedy(corners: np.ndarray, scores: np.ndarray, limit: int, iou_threshold, score_threshold) -> list[int]:
    """Indices kept for one batch and class: best score first (ties: lower index), greedy suppression."""
    candidates = np.arange(scores.shape[0])
    if score_threshold is not None:
        candidates = candidates[scores > score_threshold]
    remaining = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    areas = (corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1])
    kept = []
    while remaining.size and len(kept) < limit:
        top, rest = remaining[0], remaining[1:]
        kept.append(int(top))
        low = np.maximum(corners[rest, :2], corners[top, :2])
        high = np.minimum(corners[rest, 2:], corners[top, 2:])
        overlap = np.all(high > low, axis=1)
        inter = (high[:, 0] - low[:, 0]) * (high[:, 1] - low[:, 1])
        union = areas[rest] + areas[top] - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / union
        suppressed = overlap & (inter > 0) & (areas[rest] > 0) & (areas[top] > 0) & (union > 0) & (iou > iou_threshold)
        remaining = rest[~suppressed]
    return kept
