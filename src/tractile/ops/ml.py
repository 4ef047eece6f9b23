"""Classic machine-learning ops (ONNX domain ai.onnx.ml): ArrayFeatureExtractor, Binarizer, TreeEnsemble.

LabelEncoder, which also belongs to that domain, lives with the text features (``text_features.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, check_alloc, expect_inputs
from .unary import UnaryOp, erf


@dataclass(frozen=True)
class ArrayFeatureExtractor(Op):
    """Pick the items ``indices`` (any shape, read flat) on the last axis of ``x``:
    ``[..., C] -> [..., len(indices)]``; a vector ``x`` gives one row ``[1, len(indices)]``."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, indices = inputs
        if not x.is_tensor or x.rank < 1:
            raise AnalysisError(f"ArrayFeatureExtractor needs a tensor of rank 1 or more, got {x}")
        if indices.dtype != DatumType.I64:
            raise AnalysisError(f"ArrayFeatureExtractor indices must be i64, got {indices}")
        leading = x.shape[:-1] if x.rank > 1 else (1,)
        return [TypedFact(x.dtype, (*leading, indices.volume))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x, indices = inputs
        flat = indices.reshape(-1).astype(np.int64)
        width = x.shape[-1]
        if flat.size and (flat.min() < 0 or flat.max() >= width):
            bad = flat[(flat < 0) | (flat >= width)][0]
            raise RunError(f"ArrayFeatureExtractor index {bad} is out of range for the last axis of size {width}")
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        return [np.take(rows, flat, axis=-1)]


@dataclass(frozen=True)
class Binarizer(UnaryOp):
    """1 where ``x > threshold``, else 0 (NaN gives 0), in ``x``'s type."""

    elementwise: ClassVar[bool] = True

    threshold: float = 0.0
    accepts: ClassVar[str] = "number"

    def compute(self, x):
        return (x > self.threshold).astype(x.dtype)


#: comparison codes of ``TreeEnsemble.modes``, as in ONNX TreeEnsemble's nodes_modes
LEQ, LT, GTE, GT, EQ, NEQ, MEMBER = range(7)
MODE_NAMES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER")
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


@dataclass(frozen=True, eq=False)
class TreeEnsemble(Op):
    """Sum (or average, min, max) of decision-tree leaf values per target, then a post transform.

    Input ``[N, F]`` (a vector is one sample), output ``[N, targets]``. The trees are flat
    arrays over interior nodes: ``features``, ``splits``, ``modes`` (codes ``LEQ``...``MEMBER``),
    ``true_next`` / ``false_next`` (a node index, or ``~leaf`` for a leaf), ``missing_true``
    (NaN follows the true branch) and, for ``MEMBER`` nodes, the row ``member_rows`` of
    ``members`` (a set per row, NaN-padded). ``roots`` holds each tree's root (``~leaf`` for a
    tree that is one leaf). Leaf ``l`` adds ``leaf_weights[l, k]`` to target ``leaf_targets[l, k]``
    for each ``k`` (padding entries have target ``targets`` and are dropped). ``base_values``
    are added after aggregation. Every sample walks all its trees together, one level per step.
    """

    features: np.ndarray = field(repr=False)
    splits: np.ndarray = field(repr=False)
    modes: np.ndarray = field(repr=False)
    true_next: np.ndarray = field(repr=False)
    false_next: np.ndarray = field(repr=False)
    missing_true: np.ndarray = field(repr=False)
    members: np.ndarray = field(repr=False)
    member_rows: np.ndarray = field(repr=False)
    roots: np.ndarray = field(repr=False)
    leaf_targets: np.ndarray = field(repr=False)
    leaf_weights: np.ndarray = field(repr=False)
    targets: int = 1
    aggregate: str = "SUM"
    post_transform: str = "NONE"
    base_values: tuple[float, ...] | None = None
    #: None: the input's float type
    output_type: DatumType | None = None

    def __post_init__(self):
        self._check()

    def _check(self) -> None:
        nodes, leaves = len(self.features), len(self.leaf_targets)
        per_node = (self.splits, self.modes, self.true_next, self.false_next, self.missing_true, self.member_rows)
        if any(len(array) != nodes for array in per_node):
            raise AnalysisError("TreeEnsemble node attributes must all have one entry per node")
        if self.leaf_weights.shape != self.leaf_targets.shape or self.leaf_targets.ndim != 2:
            raise AnalysisError("TreeEnsemble leaf targets and weights must have the same length")
        if self.aggregate not in AGGREGATES:
            raise AnalysisError(f"TreeEnsemble aggregate function {self.aggregate!r} is not one of {AGGREGATES}")
        if self.post_transform not in POST_TRANSFORMS:
            raise AnalysisError(f"TreeEnsemble post transform {self.post_transform!r} is not one of "
                                f"{POST_TRANSFORMS}")
        if self.targets < 1 or (self.base_values is not None and len(self.base_values) != self.targets):
            raise AnalysisError(f"TreeEnsemble needs targets >= 1 and one base value per target, got "
                                f"{self.targets} targets and base values {self.base_values}")
        for name, links in (("true", self.true_next), ("false", self.false_next), ("root", self.roots)):
            if links.size and (links.max() >= nodes or (~links[links < 0]).max(initial=-1) >= leaves):
                raise AnalysisError(f"TreeEnsemble has a {name} link to a node or leaf that does not exist "
                                    f"({nodes} nodes, {leaves} leaves)")
        if self.features.size and self.features.min() < 0:
            raise AnalysisError("TreeEnsemble feature ids must not be negative")
        if self.modes.size and self.modes.max() > MEMBER:
            raise AnalysisError(f"TreeEnsemble node mode {int(self.modes.max())} is not one of {MODE_NAMES}")
        if self.leaf_targets.size and (self.leaf_targets.min() < 0 or self.leaf_targets.max() > self.targets):
            raise AnalysisError(f"TreeEnsemble leaf target ids must be in [0, {self.targets})")
        if (self.member_rows[self.modes == MEMBER] < 0).any() or self.member_rows.max(initial=-1) >= len(self.members):
            raise AnalysisError("TreeEnsemble set-membership nodes need one set of members each")

    def attributes(self):
        return {"trees": len(self.roots), "nodes": len(self.features), "leaves": len(self.leaf_targets),
                "targets": self.targets, "aggregate": self.aggregate, "post_transform": self.post_transform}

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if not x.is_tensor or x.rank not in (1, 2) or not (x.dtype.is_float or x.dtype.is_integer):
            raise AnalysisError(f"TreeEnsemble takes numbers [N, F] (or one sample [F]), got {x}")
        if self.output_type is None and not x.dtype.is_float:
            raise AnalysisError(f"TreeEnsemble needs a floating-point input, got {x}")
        features = x.shape[-1]
        if isinstance(features, int) and self.features.size and self.features.max() >= features:
            raise AnalysisError(f"TreeEnsemble reads feature {int(self.features.max())}, the input has {features}")
        rows = x.shape[0] if x.rank == 2 else 1
        return [TypedFact(self.output_type or x.dtype, (rows, self.targets))]

    def eval(self, inputs):
        x = inputs[0]
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        if self.features.size and self.features.max() >= rows.shape[1]:
            raise RunError(f"TreeEnsemble reads feature {int(self.features.max())}, the input has {rows.shape[1]}")
        leaves = self.leaves(rows.astype(np.float64))
        scores = self._aggregate(leaves)
        if self.base_values is not None:
            scores += np.asarray(self.base_values, dtype=np.float64)
        out_type = self.output_type.np if self.output_type is not None else x.dtype
        return [post_transform(scores, self.post_transform).astype(out_type)]

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The leaf each sample of ``x`` ([N, F], f64) reaches in each tree: [N, trees]."""
        check_alloc((x.shape[0], len(self.roots)), np.int64, "TreeEnsemble")
        position = np.repeat(self.roots[None, :], x.shape[0], axis=0)
        splits = self.splits.astype(np.float64)
        for _ in range(len(self.features) + 1):
            samples, trees = np.nonzero(position >= 0)
            if not samples.size:
                return ~position
            nodes = position[samples, trees]
            values = x[samples, self.features[nodes]]
            go_true = self._decide(nodes, values, splits[nodes])
            position[samples, trees] = np.where(go_true, self.true_next[nodes], self.false_next[nodes])
        raise RunError("TreeEnsemble trees contain a cycle: a path visits more nodes than there are")

    def _decide(self, nodes: np.ndarray, values: np.ndarray, splits: np.ndarray) -> np.ndarray:
        modes = self.modes[nodes]
        present = np.unique(modes)
        conditions, choices = [], []
        with np.errstate(invalid="ignore"):
            for mode in present.tolist():
                conditions.append(modes == mode if len(present) > 1 else True)
                if mode == MEMBER:
                    sets = self.members[self.member_rows[nodes]]
                    choices.append((values[:, None] == sets).any(axis=1))
                else:
                    choices.append(_COMPARE[mode](values, splits))
        go_true = np.select(conditions, choices, False) if len(present) > 1 else choices[0]
        return go_true | (np.isnan(values) & self.missing_true[nodes])

    def _aggregate(self, leaves: np.ndarray) -> np.ndarray:
        samples, trees = leaves.shape
        width = self.targets + 1
        check_alloc((samples, trees, self.leaf_targets.shape[1]), np.float64, "TreeEnsemble")
        slots = (np.arange(samples)[:, None, None] * width + self.leaf_targets[leaves]).reshape(-1)
        weights = self.leaf_weights[leaves].reshape(-1).astype(np.float64)
        if self.aggregate in ("SUM", "AVERAGE"):
            scores = np.bincount(slots, weights, minlength=samples * width)
            if self.aggregate == "AVERAGE":
                scores /= max(trees, 1)
        else:
            scores = np.full(samples * width, np.inf if self.aggregate == "MIN" else -np.inf)
            (np.minimum if self.aggregate == "MIN" else np.maximum).at(scores, slots, weights)
            scores[np.bincount(slots, minlength=samples * width) == 0] = 0.0
        return scores.reshape(samples, width)[:, :self.targets]

    def cost(self, inputs):
        rows = inputs[0].shape[0] if inputs[0].rank == 2 else 1
        return {"flops": rows * len(self.features)}


_COMPARE = {
    LEQ: np.less_equal, LT: np.less, GTE: np.greater_equal, GT: np.greater, EQ: np.equal, NEQ: np.not_equal,
}


def post_transform(scores: np.ndarray, transform: str) -> np.ndarray:
    """Apply an ai.onnx.ml post transform to ``scores`` [N, targets] (f64)."""
    with np.errstate(all="ignore"):
        if transform == "LOGISTIC":
            return 1.0 / (1.0 + np.exp(-scores))
        if transform == "SOFTMAX":
            exp = np.exp(scores - scores.max(axis=1, keepdims=True))
            return exp / exp.sum(axis=1, keepdims=True)
        if transform == "SOFTMAX_ZERO":
            nonzero = np.abs(scores) > 1e-7
            exp = np.where(nonzero, np.exp(scores - scores.max(axis=1, keepdims=True)), 0.0)
            return exp / exp.sum(axis=1, keepdims=True)
        if transform == "PROBIT":
            return math.sqrt(2.0) * erf_inverse(2.0 * scores - 1.0)
    return scores


def erf_inverse(y: np.ndarray) -> np.ndarray:
    """The inverse error function on (-1, 1) (+-inf at +-1, NaN outside): Winitzki's closed form
    refined by Newton steps on :func:`~tractile.ops.unary.erf`."""
    a = 0.147
    with np.errstate(all="ignore"):
        log_term = np.log((1.0 - y) * (1.0 + y))
        first = 2.0 / (math.pi * a) + 0.5 * log_term
        x = np.sign(y) * np.sqrt(np.sqrt(first * first - log_term / a) - first)
        finite = np.isfinite(x)
        for _ in range(3):
            step = (erf(x) - y) / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
            x = np.where(finite, x - step, x)
    return np.where(np.abs(y) == 1.0, np.copysign(np.inf, y), x)

