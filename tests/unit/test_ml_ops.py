"""ai.onnx.ml ops: ArrayFeatureExtractor, Binarizer, TreeEnsemble (opset 5) and TreeEnsembleRegressor."""
from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.errors import ModelFormatError, RunError
from tractile.ops.ml import erf_inverse
from tractile.ops.unary import erf

from ..conftest import run_onnxruntime

RNG = np.random.default_rng(11)
ELEM = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16,
        np.int64: TensorProto.INT64,
        np.int32: TensorProto.INT32, object: TensorProto.STRING}


def ml_model(op_type: str, inputs: dict, ml_opset: int = 5, **attrs):
    """One ai.onnx.ml node; ``inputs`` maps names to (element type, shape) or to a constant array."""
    graph_inputs, initializers = [], []
    for name, spec in inputs.items():
        if isinstance(spec, np.ndarray):
            initializers.append(numpy_helper.from_array(spec, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, ELEM[spec[0]], spec[1]))
    node = helper.make_node(op_type, list(inputs), ["y"], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "ml", graph_inputs, [helper.make_empty_tensor_value_info("y")],
                              initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml",
                                                                                                     ml_opset)],
                             ir_version=10)


def check_against_onnxruntime(proto, feeds, rtol=1e-6, atol=1e-6):
    (ours,) = tractile.load(proto).plan().state(check_facts=True).run(feeds)
    (theirs,) = run_onnxruntime(proto, feeds)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    if ours.dtype.kind == "f":
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(ours, theirs)
    return ours


# ArrayFeatureExtractor, Binarizer ----------------------------------------------------------------
@pytest.mark.parametrize("shape, indices", [((3, 5), [4, 0, 2]), ((2, 3, 6), [[1, 5], [5, 0]]), ((7,), [6, 1])])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_array_feature_extractor_matches_onnxruntime(shape, indices, dtype):
    x = (RNG.standard_normal(shape) * 10).astype(dtype)
    index = np.asarray(indices, dtype=np.int64)
    proto = ml_model("ArrayFeatureExtractor", {"x": (dtype, list(shape)), "i": (np.int64, list(index.shape))},
                     ml_opset=1)
    out = check_against_onnxruntime(proto, [x, index])
    assert out.shape == ((1,) if len(shape) == 1 else shape[:-1]) + (index.size,)


def test_array_feature_extractor_on_strings_and_a_symbolic_batch():
    proto = ml_model("ArrayFeatureExtractor", {"x": (object, ["N", 3]), "i": np.array([2, 2, 0], np.int64)},
                     ml_opset=1)
    model = tractile.load(proto)
    assert str(model.output_fact(0)) == "N,3,string"
    x = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    (out,) = model.run([x])
    assert out.tolist() == [["c", "c", "a"], ["f", "f", "d"]]


def test_array_feature_extractor_index_out_of_range_is_a_run_error():
    proto = ml_model("ArrayFeatureExtractor", {"x": (np.float32, [2, 3]), "i": (np.int64, [1])}, ml_opset=1)
    with pytest.raises(RunError, match="index 3 is out of range for the last axis of size 3"):
        tractile.load(proto).run([np.zeros((2, 3), np.float32), np.array([3], np.int64)])


def test_binarizer_matches_onnxruntime():
    x = (RNG.standard_normal((4, 6)) * 3).astype(np.float32)
    proto = ml_model("Binarizer", {"x": (np.float32, [4, 6])}, ml_opset=1, threshold=0.5)
    out = check_against_onnxruntime(proto, [x])
    np.testing.assert_array_equal(out, (x > 0.5).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_binarizer_on_other_types(dtype):  # onnxruntime implements f32 only
    x = np.array([[-3, 0, 1], [2, 5, -1]], dtype=dtype)
    proto = ml_model("Binarizer", {"x": (dtype, [2, 3])}, ml_opset=1, threshold=1.0)
    (out,) = tractile.load(proto).run([x])
    assert out.dtype == dtype and out.tolist() == [[0, 0, 0], [1, 1, 0]]


def test_binarizer_maps_nan_to_zero():
    proto = ml_model("Binarizer", {"x": (np.float32, [3])}, ml_opset=1, threshold=-1.0)
    (out,) = tractile.load(proto).run([np.array([np.nan, -2.0, 0.0], np.float32)])
    assert out.tolist() == [0.0, 0.0, 1.0]


# tree ensembles -------------------------------------------------------------------------------------
def random_tree(rng, depth: int, features: int, targets: int, modes, per_leaf: int = 1):
    """A random tree: ("leaf", [(target, weight)...]) or ("node", feature, split, mode, true, false)."""
    if depth == 0 or (depth < 3 and rng.random() < 0.3):
        chosen = rng.choice(targets, size=per_leaf, replace=False)
        return ("leaf", [(int(t), float(np.float32(rng.standard_normal()))) for t in chosen])
    mode = modes[rng.integers(len(modes))]
    split = float(np.float32(rng.choice([-0.5, 0.0, 0.5, 1.0]) if mode in (4, 5) else rng.standard_normal()))
    return ("node", int(rng.integers(features)), split, mode,
            random_tree(rng, depth - 1, features, targets, modes, per_leaf),
            random_tree(rng, depth - 1, features, targets, modes, per_leaf))


def v5_attributes(trees, dtype=np.float32):
    """TreeEnsemble (ai.onnx.ml 5) attributes of ``random_tree`` trees (one target per leaf)."""
    nodes, leaves, roots = [], [], []

    def visit(tree):
        if tree[0] == "leaf":
            leaves.append(tree[1][0])
            return len(leaves) - 1, True
        index = len(nodes)
        nodes.append(None)
        true, false = visit(tree[4]), visit(tree[5])
        nodes[index] = (tree[1], tree[2], tree[3], true, false)
        return index, False

    for tree in trees:
        if tree[0] == "leaf":  # a one-leaf tree: a node whose branches both reach the leaf
            leaves.append(tree[1][0])
            nodes.append((0, 0.0, 0, (len(leaves) - 1, True), (len(leaves) - 1, True)))
            roots.append(len(nodes) - 1)
        else:
            roots.append(visit(tree)[0])
    elem = ELEM[dtype]
    return dict(
        tree_roots=roots, nodes_featureids=[n[0] for n in nodes],
        nodes_splits=helper.make_tensor("splits", elem, (len(nodes),), [n[1] for n in nodes]),
        nodes_modes=helper.make_tensor("modes", TensorProto.UINT8, (len(nodes),), [n[2] for n in nodes]),
        nodes_truenodeids=[n[3][0] for n in nodes], nodes_trueleafs=[int(n[3][1]) for n in nodes],
        nodes_falsenodeids=[n[4][0] for n in nodes], nodes_falseleafs=[int(n[4][1]) for n in nodes],
        leaf_targetids=[leaf[0] for leaf in leaves],
        leaf_weights=helper.make_tensor("weights", elem, (len(leaves),), [leaf[1] for leaf in leaves]))


def regressor_attributes(trees):
    """TreeEnsembleRegressor (ai.onnx.ml 1) attributes of ``random_tree`` trees (nodes numbered per tree)."""
    names = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
    columns = {key: [] for key in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_values",
                                   "nodes_modes", "nodes_truenodeids", "nodes_falsenodeids", "target_treeids",
                                   "target_nodeids", "target_ids", "target_weights")}
    for tree_id, tree in enumerate(trees):
        counter = iter(range(10_000))

        def visit(sub):
            number = next(counter)
            row = len(columns["nodes_treeids"])
            for key, item in (("nodes_treeids", tree_id), ("nodes_nodeids", number), ("nodes_featureids", 0),
                              ("nodes_values", 0.0), ("nodes_modes", "LEAF"), ("nodes_truenodeids", 0),
                              ("nodes_falsenodeids", 0)):
                columns[key].append(item)
            if sub[0] == "leaf":
                for target, weight in sub[1]:
                    for key, item in zip(("target_treeids", "target_nodeids", "target_ids", "target_weights"),
                                         (tree_id, number, target, weight)):
                        columns[key].append(item)
            else:
                columns["nodes_featureids"][row], columns["nodes_values"][row] = sub[1], sub[2]
                columns["nodes_modes"][row] = names[sub[3]]
                columns["nodes_truenodeids"][row] = visit(sub[4])
                columns["nodes_falsenodeids"][row] = visit(sub[5])
            return number

        visit(tree)
    return columns


def samples(rng, count: int, features: int, dtype=np.float32):
    x = rng.standard_normal((count, features))
    x[rng.random(x.shape) < 0.2] = rng.choice([-0.5, 0.0, 0.5, 1.0], size=1)[0]  # hits for EQ / NEQ splits
    return x.astype(dtype)


def spec_post_transform(scores: np.ndarray, code: int) -> np.ndarray:
    """The ai.onnx.ml post transforms as specified (onnxruntime swaps SOFTMAX and LOGISTIC for TreeEnsemble
    and skips LOGISTIC for one target, so its raw scores are transformed here)."""
    scores = scores.astype(np.float64)
    if code == 1:
        exp = np.exp(scores - scores.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)
    if code == 2:
        return 1 / (1 + np.exp(-scores))
    if code == 3:
        exp = np.where(scores != 0, np.exp(scores - scores.max(axis=1, keepdims=True)), 0)
        return exp / exp.sum(axis=1, keepdims=True)
    return scores


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
@pytest.mark.parametrize("transform", [0, 1, 2, 3])
def test_tree_ensemble_forest_matches_onnxruntime(aggregate, transform):
    rng = np.random.default_rng(100 + 4 * aggregate + transform)
    trees = [random_tree(rng, 5, features=6, targets=3, modes=[0, 1, 2, 3, 4, 5]) for _ in range(12)]
    trees.append(("leaf", [(1, 0.75)]))
    attrs = dict(n_targets=3, aggregate_function=aggregate, **v5_attributes(trees))
    proto = ml_model("TreeEnsemble", {"x": (np.float32, ["N", 6])}, post_transform=transform, **attrs)
    raw = ml_model("TreeEnsemble", {"x": (np.float32, ["N", 6])}, post_transform=0, **attrs)
    model = tractile.load(proto)
    assert str(model.output_fact(0)) == "N,3,f32"
    for count in (1, 9, 40):
        x = samples(rng, count, 6)
        (ours,) = model.run([x])
        (theirs,) = run_onnxruntime(raw, [x])
        np.testing.assert_allclose(ours, spec_post_transform(theirs, transform), rtol=1e-5, atol=1e-6)


def test_tree_ensemble_in_f64_with_missing_values():
    rng = np.random.default_rng(7)
    trees = [random_tree(rng, 4, features=4, targets=2, modes=[0, 2, 3]) for _ in range(5)]
    attrs = v5_attributes(trees, np.float64)
    attrs["nodes_missing_value_tracks_true"] = [int(v) for v in rng.integers(0, 2, len(attrs["nodes_featureids"]))]
    proto = ml_model("TreeEnsemble", {"x": (np.float64, [None, 4])}, n_targets=2, **attrs)
    x = samples(rng, 30, 4, np.float64)
    x[rng.random(x.shape) < 0.25] = np.nan
    check_against_onnxruntime(proto, [x], rtol=1e-12)


def test_tree_ensemble_set_membership_by_hand():
    # one tree: x in {1, 2} -> leaf 0; else x in {5} -> leaf 1; else leaf 2 (NaN follows true at node 1)
    attrs = dict(
        tree_roots=[0], nodes_featureids=[0, 0],
        nodes_splits=helper.make_tensor("s", TensorProto.FLOAT, (2,), [0.0, 0.0]),
        nodes_modes=helper.make_tensor("m", TensorProto.UINT8, (2,), [6, 6]),
        nodes_truenodeids=[0, 1], nodes_trueleafs=[1, 1], nodes_falsenodeids=[1, 2], nodes_falseleafs=[0, 1],
        nodes_missing_value_tracks_true=[0, 1],
        membership_values=helper.make_tensor("v", TensorProto.FLOAT, (5,), [1, 2, np.nan, 5, np.nan]),
        leaf_targetids=[0, 1, 2], leaf_weights=helper.make_tensor("w", TensorProto.FLOAT, (3,), [10, 20, 30]))
    proto = ml_model("TreeEnsemble", {"x": (np.float32, [None, 1])}, n_targets=3, **attrs)
    x = np.array([[1], [2], [5], [3], [np.nan]], np.float32)
    (out,) = tractile.load(proto).run([x])
    expected = np.zeros((5, 3), np.float32)
    expected[[0, 1, 2, 3, 4], [0, 0, 1, 2, 1]] = [10, 10, 20, 30, 20]
    np.testing.assert_array_equal(out, expected)


def test_tree_ensemble_probit_is_the_normal_quantile():
    attrs = v5_attributes([("leaf", [(0, 0.975)]), ("leaf", [(1, 0.5)]), ("leaf", [(2, 0.1)])])
    proto = ml_model("TreeEnsemble", {"x": (np.float32, [1, 1])}, n_targets=3, post_transform=4, **attrs)
    (out,) = tractile.load(proto).run([np.zeros((1, 1), np.float32)])
    np.testing.assert_allclose(out[0], [1.959964, 0.0, -1.2815516], rtol=1e-6, atol=1e-7)


def test_erf_inverse_inverts_erf():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 1001), [0.0, 1e-12, -1e-9]])
    np.testing.assert_allclose(erf(erf_inverse(y)), y, rtol=1e-13, atol=1e-15)
    assert erf_inverse(np.array([1.0, -1.0])).tolist() == [math.inf, -math.inf]
    assert np.isnan(erf_inverse(np.array([1.5]))).all()


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
def test_tree_ensemble_regressor_matches_onnxruntime(aggregate):
    rng = np.random.default_rng(3)
    trees = [random_tree(rng, 4, features=5, targets=3, modes=[0, 1, 2, 3, 4, 5], per_leaf=2) for _ in range(8)]
    proto = ml_model("TreeEnsembleRegressor", {"x": (np.float32, ["N", 5])}, ml_opset=3, n_targets=3,
                     aggregate_function=aggregate, base_values=[0.5, -1.0, 2.0], **regressor_attributes(trees))
    model = tractile.load(proto)
    assert str(model.output_fact(0)) == "N,3,f32"
    for count in (2, 17):
        x = samples(rng, count, 5)
        (ours,) = model.run([x])
        (theirs,) = run_onnxruntime(proto, [x])
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_tree_ensemble_regressor_on_double_input_with_logistic():
    rng = np.random.default_rng(4)
    trees = [random_tree(rng, 3, features=3, targets=1, modes=[0, 3]) for _ in range(4)]
    attrs = dict(n_targets=1, **regressor_attributes(trees))
    x = samples(rng, 10, 3, np.float64)
    proto = ml_model("TreeEnsembleRegressor", {"x": (np.float64, [None, 3])}, ml_opset=3, post_transform="LOGISTIC",
                     **attrs)
    (ours,) = tractile.load(proto).run([x])
    raw = ml_model("TreeEnsembleRegressor", {"x": (np.float64, [None, 3])}, ml_opset=3, **attrs)
    (theirs,) = run_onnxruntime(raw, [x])
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, spec_post_transform(theirs, 2), rtol=1e-6)


def test_tree_link_to_a_missing_node_is_a_format_error():
    attrs = v5_attributes([("node", 0, 0.5, 0, ("leaf", [(0, 1.0)]), ("leaf", [(0, 2.0)]))])
    attrs["nodes_truenodeids"] = [7]
    attrs["nodes_trueleafs"] = [0]
    proto = ml_model("TreeEnsemble", {"x": (np.float32, [None, 1])}, n_targets=1, **attrs)
    with pytest.raises(ModelFormatError, match="TreeEnsemble.*true link to a node or leaf that does not exist"):
        tractile.load(proto)


def test_tree_reading_a_feature_beyond_the_input_is_an_analysis_error():
    attrs = v5_attributes([("node", 4, 0.5, 0, ("leaf", [(0, 1.0)]), ("leaf", [(0, 2.0)]))])
    proto = ml_model("TreeEnsemble", {"x": (np.float32, [None, 3])}, n_targets=1, **attrs)
    with pytest.raises(tractile.AnalysisError, match="reads feature 4, the input has 3"):
        tractile.load(proto)


def test_leaf_target_beyond_n_targets_is_a_format_error():
    attrs = v5_attributes([("node", 0, 0.5, 0, ("leaf", [(0, 1.0)]), ("leaf", [(2, 2.0)]))])
    proto = ml_model("TreeEnsemble", {"x": (np.float32, [None, 1])}, n_targets=2, **attrs)
    with pytest.raises(ModelFormatError, match=r"leaf_targetids must be in \[0, 2\)"):
        tractile.load(proto)
