"""ONNX classic machine-learning ops (domain ai.onnx.ml): ArrayFeatureExtractor, Binarizer, TreeEnsemble
(opset 5) and TreeEnsembleRegressor. LabelEncoder is translated with the text ops."""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....errors import AnalysisError
from ....ops.ml import AGGREGATES, MEMBER, MODE_NAMES, POST_TRANSFORMS, ArrayFeatureExtractor, Binarizer, TreeEnsemble
from ..registry import OnnxNode, onnx_op

DOMAIN = "ai.onnx.ml"

onnx_op("ArrayFeatureExtractor", since=1, domain=DOMAIN)(lambda node: ArrayFeatureExtractor())
onnx_op("Binarizer", since=1, domain=DOMAIN)(lambda node: Binarizer(node.float("threshold", 0.0)))


def _ints(node: OnnxNode, name: str, default=None) -> np.ndarray:
    values = node.ints(name, default)
    if values is None:
        raise node.error(f"missing required attribute {name!r}")
    return np.asarray(values, dtype=np.int64)


def _tensor(node: OnnxNode, name: str) -> np.ndarray:
    return np.asarray(node.tensor(name)).reshape(-1)


def _choice(node: OnnxNode, name: str, names: tuple[str, ...], default: int) -> str:
    code = node.int(name, default)
    if not 0 <= code < len(names):
        raise node.error(f"{name} {code} is not one of 0..{len(names) - 1} ({', '.join(names)})")
    return names[code]


def _build(node: OnnxNode, **arrays) -> TreeEnsemble:
    try:
        return TreeEnsemble(**arrays)
    except AnalysisError as error:
        raise node.error(error.message) from None


def _member_sets(node: OnnxNode, modes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The NaN-padded member sets and each node's row among them (-1: not a membership node)."""
    member_nodes = np.nonzero(modes == MEMBER)[0]
    rows = np.full(len(modes), -1, dtype=np.int64)
    if not member_nodes.size:
        return np.zeros((0, 1)), rows
    if not node.has("membership_values"):
        raise node.error("BRANCH_MEMBER nodes need the membership_values attribute")
    values = _tensor(node, "membership_values").astype(np.float64)
    ends = np.nonzero(np.isnan(values))[0]
    if len(ends) != len(member_nodes):
        raise node.error(f"membership_values holds {len(ends)} NaN-terminated sets for "
                         f"{len(member_nodes)} BRANCH_MEMBER nodes")
    sets = np.split(values, ends + 1)[:len(ends)]
    members = np.full((len(sets), max(len(s) for s in sets)), np.nan)
    for index, items in enumerate(sets):
        members[index, :len(items) - 1] = items[:-1]
    rows[member_nodes] = np.arange(len(member_nodes))
    return members, rows


@onnx_op("TreeEnsemble", since=5, domain=DOMAIN)
def tree_ensemble(node: OnnxNode):
    features = _ints(node, "nodes_featureids")
    modes = _tensor(node, "nodes_modes").astype(np.uint8)
    true_ids, false_ids = _ints(node, "nodes_truenodeids"), _ints(node, "nodes_falsenodeids")
    true_leafs, false_leafs = _ints(node, "nodes_trueleafs") != 0, _ints(node, "nodes_falseleafs") != 0
    if not len(true_ids) == len(false_ids) == len(true_leafs) == len(false_leafs) == len(features):
        raise node.error("the nodes_* attributes must all have one entry per node")
    missing = _ints(node, "nodes_missing_value_tracks_true", (0,) * len(features)) != 0
    targets = _ints(node, "leaf_targetids")
    members, member_rows = _member_sets(node, modes)
    n_targets = node.int("n_targets", int(targets.max(initial=-1)) + 1)
    if targets.size and (targets.min() < 0 or targets.max() >= n_targets):
        raise node.error(f"leaf_targetids must be in [0, {n_targets}) (n_targets)")
    return _build(node, features=features, splits=_tensor(node, "nodes_splits"), modes=modes,
                  true_next=np.where(true_leafs, ~true_ids, true_ids),
                  false_next=np.where(false_leafs, ~false_ids, false_ids),
                  missing_true=missing, members=members, member_rows=member_rows,
                  roots=_ints(node, "tree_roots"), leaf_targets=targets[:, None],
                  leaf_weights=_tensor(node, "leaf_weights")[:, None], targets=n_targets,
                  aggregate=_choice(node, "aggregate_function", AGGREGATES, 1),
                  post_transform=_choice(node, "post_transform", POST_TRANSFORMS, 0))


def _floats(node: OnnxNode, name: str) -> np.ndarray | None:
    """A float list attribute or its ``*_as_tensor`` (double) form; None when neither is given."""
    if node.has(f"{name}_as_tensor"):
        return _tensor(node, f"{name}_as_tensor").astype(np.float64)
    if node.has(name):
        return np.asarray(node.floats(name), dtype=np.float32)
    return None


@onnx_op("TreeEnsembleRegressor", since=1, domain=DOMAIN)
def tree_ensemble_regressor(node: OnnxNode):
    tree_ids, node_ids = _ints(node, "nodes_treeids"), _ints(node, "nodes_nodeids")
    mode_names = node.strings("nodes_modes")
    splits = _floats(node, "nodes_values")
    count = len(tree_ids)
    splits = np.zeros(count) if splits is None else splits
    features = _ints(node, "nodes_featureids")
    if not len(node_ids) == len(mode_names) == len(splits) == len(features) == count:
        raise node.error("the nodes_* attributes must all have one entry per node")
    unknown = sorted(set(mode_names) - set(MODE_NAMES[:MEMBER]) - {"LEAF"})
    if unknown:
        raise node.error(f"unsupported node modes {unknown} (expected LEAF or one of {MODE_NAMES[:MEMBER]})")
    is_leaf = np.asarray([mode == "LEAF" for mode in mode_names], dtype=bool)
    # interior nodes and leaves get their own numbering; a link is an interior index or ~leaf
    numbers = np.where(is_leaf, ~np.cumsum(is_leaf) + 1, np.cumsum(~is_leaf) - 1)
    where = {(int(t), int(n)): int(k) for k, (t, n) in enumerate(zip(tree_ids, node_ids))}
    if len(where) != count:
        raise node.error("nodes_treeids/nodes_nodeids pairs must be unique")

    interior = np.nonzero(~is_leaf)[0]

    def children(name: str) -> np.ndarray:
        """The position in the node list of each interior node's ``name`` child."""
        ids = _ints(node, name, (0,) * count)
        found = [where.get((int(tree_ids[k]), int(ids[k]))) for k in interior]
        if any(k is None for k in found):
            raise node.error(f"{name} refers to a node that is not in its tree")
        return np.asarray(found, dtype=np.int64)

    true_child, false_child = children("nodes_truenodeids"), children("nodes_falsenodeids")
    linked = set(true_child.tolist()) | set(false_child.tolist())
    roots, seen = [], set()
    for k, tree in enumerate(tree_ids.tolist()):
        if k not in linked and tree not in seen:
            seen.add(tree)
            roots.append(numbers[k])
    if len(seen) != len(set(tree_ids.tolist())):
        raise node.error("every tree needs a root (a node no other node of its tree links to)")

    leaf_count = int(is_leaf.sum())
    n_targets = node.int("n_targets", 1)
    target_leaf = [where.get((t, n)) for t, n in zip(node.ints("target_treeids", ()), node.ints("target_nodeids", ()))]
    if any(k is None or not is_leaf[k] for k in target_leaf):
        raise node.error("target_treeids/target_nodeids must name LEAF nodes")
    target_ids = _ints(node, "target_ids", ())
    if target_ids.size and (target_ids.min() < 0 or target_ids.max() >= n_targets):
        raise node.error(f"target_ids must be in [0, {n_targets}) (n_targets)")
    weights = _floats(node, "target_weights")
    weights = np.zeros(0) if weights is None else weights
    if not len(target_leaf) == len(target_ids) == len(weights):
        raise node.error("the target_* attributes must all have one entry per leaf contribution")
    leaf_of = np.asarray([~numbers[k] for k in target_leaf], dtype=np.int64)
    per_leaf = np.bincount(leaf_of, minlength=leaf_count)
    width = max(int(per_leaf.max(initial=0)), 1)
    leaf_targets = np.full((leaf_count, width), n_targets, dtype=np.int64)
    leaf_weights = np.zeros((leaf_count, width), dtype=weights.dtype)
    column = np.zeros(leaf_count, dtype=np.int64)
    for leaf, target, weight in zip(leaf_of.tolist(), target_ids.tolist(), weights.tolist()):
        leaf_targets[leaf, column[leaf]], leaf_weights[leaf, column[leaf]] = target, weight
        column[leaf] += 1
    base_values = _floats(node, "base_values")
    missing = _ints(node, "nodes_missing_value_tracks_true", (0,) * count) != 0
    if len(missing) != count:
        raise node.error("nodes_missing_value_tracks_true must have one entry per node")
    return _build(node, features=features[interior], splits=splits[interior],
                  modes=np.asarray([MODE_NAMES.index(mode_names[k]) for k in interior], dtype=np.uint8),
                  true_next=numbers[true_child], false_next=numbers[false_child], missing_true=missing[interior],
                  members=np.zeros((0, 1)), member_rows=np.full(len(interior), -1, dtype=np.int64),
                  roots=np.asarray(roots, dtype=np.int64), leaf_targets=leaf_targets, leaf_weights=leaf_weights,
                  targets=n_targets, aggregate=node.string("aggregate_function", "SUM"),
                  post_transform=node.string("post_transform", "NONE"),
                  base_values=tuple(base_values.tolist()) if base_values is not None else None,
                  output_type=DatumType.F32)
