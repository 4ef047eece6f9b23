"""Normalisation ops (LayerNorm, RMSNorm, GroupNorm, InstanceNorm, MVN, LpNorm, BatchNorm training)."""
import numpy as np
import pytest

import tractile
from tractile.errors import AnalysisError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run_tractile(proto, inputs):
    return tractile.load(proto).run(list(inputs))


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_norm_all_outputs_match_onnxruntime(axis):
    x, w, b = rand(2, 3, 4), None, None
    norm_shape = x.shape[axis % 3:]
    w, b = rand(*norm_shape), rand(*norm_shape)
    proto = model([node("LayerNormalization", ["x", "w", "b"], ["y", "mean", "inv"], axis=axis, epsilon=1e-3)],
                  [value("x", "f32", x.shape), value("w", "f32", w.shape), value("b", "f32", b.shape)],
                  [value("y"), value("mean"), value("inv")])
    ours = run_tractile(proto, [x, w, b])
    for got, want in zip(ours, run_onnxruntime(proto, [x, w, b])):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_layer_norm_f16_keeps_f32_statistics():
    x = rand(3, 8).astype(np.float16)
    w = np.ones(8, np.float16)
    proto = model([node("LayerNormalization", ["x", "w"], ["y", "mean"])],
                  [value("x", "f16", [3, 8]), value("w", "f16", [8])], [value("y", "f16"), value("mean", None)])
    y, mean = run_tractile(proto, [x, w])
    work = x.astype(np.float32)
    expected = (work - work.mean(1, keepdims=True)) / np.sqrt(work.var(1, keepdims=True) + 1e-5)
    assert y.dtype == np.float16 and mean.dtype == np.float32 and mean.shape == (3, 1)
    np.testing.assert_allclose(y.astype(np.float32), expected, atol=2e-3)
    np.testing.assert_allclose(mean[:, 0], work.mean(1), rtol=1e-6)


def test_rms_norm_formula():
    x, w = rand(2, 5, 6), rand(5, 6)
    proto = model([node("RMSNormalization", ["x", "w"], ["y"], axis=1)],
                  [value("x", "f32", x.shape), value("w", "f32", w.shape)], [value("y")], opset=23)
    (y,) = run_tractile(proto, [x, w])
    expected = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=(1, 2), keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(y, expected, rtol=1e-5)


@pytest.mark.parametrize("opset", [18, 21])
def test_group_norm_parameters_per_group_then_per_channel(opset):
    x = rand(2, 6, 3, 2)
    params = 3 if opset == 18 else 6
    scale, bias = rand(params), rand(params)
    proto = model([node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-2)],
                  [value("x", "f32", x.shape), value("s", "f32", [params]), value("b", "f32", [params])],
                  [value("y")], opset=opset)
    (y,) = run_tractile(proto, [x, scale, bias])
    grouped = x.reshape(2, 3, -1).astype(np.float64)
    normal = ((grouped - grouped.mean(2, keepdims=True)) / np.sqrt(grouped.var(2, keepdims=True) + 1e-2))
    per_channel = np.repeat(scale, 2) if opset == 18 else scale
    shift = np.repeat(bias, 2) if opset == 18 else bias
    expected = normal.reshape(x.shape) * per_channel[:, None, None] + shift[:, None, None]
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def test_instance_norm_matches_onnxruntime():
    x, s, b = rand(2, 3, 4, 5), rand(3), rand(3)
    proto = model([node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4)],
                  [value("x", "f32", x.shape), value("s", "f32", [3]), value("b", "f32", [3])], [value("y")])
    np.testing.assert_allclose(run_tractile(proto, [x, s, b])[0], run_onnxruntime(proto, [x, s, b])[0],
                               rtol=1e-4, atol=1e-5)


def test_mvn_and_lp_norm():
    x = rand(3, 2, 4, 1)
    proto = model([node("MeanVarianceNormalization", ["x"], ["m"]), node("LpNormalization", ["x"], ["l"], p=1,
                                                                          axis=2)],
                  [value("x", "f32", x.shape)], [value("m"), value("l")], opset=13)
    m, lp = run_tractile(proto, [x])
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(m, (x - mean) / (x.std(axis=(0, 2, 3), keepdims=True) + 1e-9), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(lp, x / np.abs(x).sum(axis=2, keepdims=True), rtol=1e-6)


def test_lp_norm_of_zeros_is_zero():
    proto = model([node("LpNormalization", ["x"], ["y"])], [value("x", "f32", [2, 3])], [value("y")])
    x = np.array([[0, 0, 0], [3, 4, 0]], np.float32)
    np.testing.assert_allclose(run_tractile(proto, [x])[0], [[0, 0, 0], [0.6, 0.8, 0]], rtol=1e-6)


def test_batchnorm_training_outputs_running_statistics():
    x, s, b = rand(4, 3, 5), rand(3), rand(3)
    mean, var = rand(3), np.abs(rand(3))
    proto = model([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                        momentum=0.8)],
                  [value("x", "f32", x.shape)] + [value(n, "f32", [3]) for n in "sbmv"],
                  [value("y"), value("rm"), value("rv")], opset=15)
    y, rm, rv = run_tractile(proto, [x, s, b, mean, var])
    batch_mean, batch_var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    np.testing.assert_allclose(rm, 0.8 * mean + 0.2 * batch_mean, rtol=1e-5)
    np.testing.assert_allclose(rv, 0.8 * var + 0.2 * batch_var, rtol=1e-5)
    expected = (x - batch_mean[:, None]) / np.sqrt(batch_var[:, None] + 1e-5) * s[:, None] + b[:, None]
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def test_layer_norm_rejects_scale_of_wrong_shape():
    proto = model([node("LayerNormalization", ["x", "w"], ["y"])],
                  [value("x", "f32", [2, 4]), value("w", "f32", [3])], [value("y")])
    with pytest.raises(AnalysisError, match="Scale"):
        tractile.load(proto)


def test_group_norm_rejects_indivisible_channels():
    proto = model([node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4)],
                  [value("x", "f32", [1, 6, 2]), value("s", "f32", [6]), value("b", "f32", [6])], [value("y")],
                  opset=21)
    with pytest.raises(AnalysisError, match="cannot be split in 4 groups"):
        tractile.load(proto)


def test_layer_norm_statistics_nobody_reads_are_not_computed():
    proto = model([node("LayerNormalization", ["x", "w"], ["y", "mean", "inv"]), node("Relu", ["y"], ["z"])],
                  [value("x", "f32", [2, 4]), value("w", "f32", [4])], [value("z")])
    typed = tractile.load(proto)
    (norm,) = [n.op for n in typed.nodes if n.op.name == "LayerNorm"]
    assert norm.outputs == 1
    x, w = rand(2, 4), rand(4)
    expected = np.maximum((x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w, 0)
    np.testing.assert_allclose(typed.run([x, w])[0], expected, rtol=1e-5, atol=1e-6)
