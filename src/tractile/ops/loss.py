"""Classification losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX semantics)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, expect_inputs

REDUCTIONS = ("none", "sum", "mean")


def check_reduction(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise AnalysisError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    return reduction


def _loss_facts(op: Op, inputs: list[TypedFact]) -> TypedFact:
    """The loss fact for scores (N, C, d...), labels (N, d...) and optional weights (C,)."""
    check_reduction(op.reduction)
    scores, labels = inputs[0], inputs[1]
    if not scores.dtype.is_float:
        raise AnalysisError(f"{op.name} needs floating-point scores, got {scores}")
    if scores.rank < 2:
        raise AnalysisError(f"{op.name} needs scores of shape (N, C, d...), got {scores}")
    if not labels.dtype.is_integer or labels.shape != (scores.shape[0], *scores.shape[2:]):
        raise AnalysisError(f"labels should be integers of shape "
                            f"({','.join(map(str, (scores.shape[0], *scores.shape[2:])))}), got {labels}")
    if len(inputs) == 3 and (inputs[2].shape != (scores.shape[1],) or inputs[2].dtype != scores.dtype):
        raise AnalysisError(f"weights should be a ({scores.shape[1]},) {scores.dtype} vector, got {inputs[2]}")
    return TypedFact(scores.dtype, labels.shape if op.reduction == "none" else ())


def negative_log_likelihood(log_prob: np.ndarray, labels: np.ndarray, weights: np.ndarray | None,
                            reduction: str, ignore_index: int | None, out_dtype) -> np.ndarray:
    """``-log_prob[n, label, d...] * weight[label]`` reduced as asked (ignored labels weigh 0)."""
    n, classes = log_prob.shape[:2]
    flat = log_prob.reshape(n, classes, -1)
    targets = labels.reshape(n, -1).astype(np.int64)
    ignored = targets == ignore_index if ignore_index is not None else np.zeros(targets.shape, dtype=bool)
    safe = np.where(ignored, 0, targets)
    if safe.size and (safe.min() < 0 or safe.max() >= classes):
        bad = safe[(safe < 0) | (safe >= classes)][0]
        raise RunError(f"label {bad} is out of range for {classes} classes (and is not ignore_index)")
    picked = -np.take_along_axis(flat, safe[:, None, :], axis=1)[:, 0, :]
    weight = weights[safe].astype(flat.dtype) if weights is not None else np.ones_like(picked)
    weight = np.where(ignored, 0, weight)
    loss = picked * weight
    if reduction == "none":
        return loss.reshape(labels.shape).astype(out_dtype)
    total = np.sum(loss)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            total = total / np.sum(weight)
    return np.asarray(total).astype(out_dtype)


def _work(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.itemsize >= 4 and x.dtype.kind == "f" else x.astype(np.float32)


@dataclass(frozen=True)
class NllLoss(Op):
    """NegativeLogLikelihoodLoss: inputs log-probabilities (N, C, d...), labels, optional weights."""

    reduction: str = "mean"
    ignore_index: int | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        return [_loss_facts(self, inputs)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        log_prob = _work(inputs[0])
        weights = inputs[2] if len(inputs) == 3 else None
        return [negative_log_likelihood(log_prob, inputs[1], weights, self.reduction, self.ignore_index,
                                        inputs[0].dtype)]


@dataclass(frozen=True)
class SoftmaxCrossEntropy(Op):
    """SoftmaxCrossEntropyLoss: NLL of the log-softmax over axis 1 of the scores; with
    ``with_log_prob`` the log-probabilities are a second output."""

    reduction: str = "mean"
    ignore_index: int | None = None
    with_log_prob: bool = False

    @property
    def nboutputs(self) -> int:
        return 2 if self.with_log_prob else 1

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        loss = _loss_facts(self, inputs)
        return [loss, TypedFact(inputs[0].dtype, inputs[0].shape)] if self.with_log_prob else [loss]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        if self.with_log_prob:
            s.equals_shape(inputs[0], outputs[1])

    def eval(self, inputs):
        scores = _work(inputs[0])
        shifted = scores - np.max(scores, axis=1, keepdims=True)
        log_prob = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
        weights = inputs[2] if len(inputs) == 3 else None
        loss = negative_log_likelihood(log_prob, inputs[1], weights, self.reduction, self.ignore_index,
                                       inputs[0].dtype)
        return [loss, log_prob.astype(inputs[0].dtype)] if self.with_log_prob else [loss]
