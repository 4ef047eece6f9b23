"""Image ops: Resize / Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression, Col2Im, DeformConv."""
import numpy as np
import pytest

import tractile
from tractile.dim import TDim
from tractile.errors import AnalysisError, ModelFormatError, RunError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run_tractile(proto, inputs):
    """Run with the inputs' shapes as facts, checking every value against its fact."""
    typed = tractile.load(proto, inputs=list(inputs))
    return typed.plan().state(check_facts=True).run(list(inputs))


def resize_model(attrs, x_shape, scales=None, sizes=None, roi=None, opset=19, dtype="f32"):
    inits = {}
    names = ["x", "", "", ""]
    for slot, name, array in ((1, "roi", roi), (2, "scales", scales), (3, "sizes", sizes)):
        if array is not None:
            names[slot] = name
            inits[name] = array
    while names[-1] == "":
        names.pop()
    return model([node("Resize", names, ["y"], **attrs)], [value("x", dtype, x_shape)], [value("y", dtype)], inits,
                 opset=opset)


# Resize -------------------------------------------------------------------------------------------
RESIZE_CASES = [
    ({"mode": "nearest"}, [1, 1, 2.5, 1.5]),
    ({"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "align_corners"}, [1, 1, 2, 2.5]),
    ({"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 0.75, 2]),
    ({"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, [1, 1, 0.5, 3]),
    ({"mode": "linear"}, [1, 1, 2, 0.6]),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [1, 1, 3, 0.5]),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, [1, 1, 0.5, 1.5]),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 1.3, 0.7]),
    ({"mode": "cubic"}, [1, 1, 1.8, 0.75]),
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, [1, 1, 2, 3]),
    ({"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, [1, 1, 0.5, 2]),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.4, 0.6]),
    ({"mode": "cubic", "antialias": 1}, [1, 1, 0.3, 0.5]),
]


@pytest.mark.parametrize("attrs,scales", RESIZE_CASES)
def test_resize_with_scales_matches_onnxruntime(attrs, scales):
    x = rand(2, 3, 7, 6)
    proto = resize_model(attrs, x.shape, scales=np.asarray(scales, np.float32))
    (got,) = run_tractile(proto, [x])
    (want,) = run_onnxruntime(proto, [x])
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_sizes_with_axes_and_aspect_policy_matches_onnxruntime():
    x = rand(1, 2, 6, 9)
    attrs = {"mode": "linear", "axes": [3, 2], "keep_aspect_ratio_policy": "not_larger"}
    proto = resize_model(attrs, x.shape, sizes=np.asarray([4, 5], np.int64))
    (got,) = run_tractile(proto, [x])
    (want,) = run_onnxruntime(proto, [x])
    assert got.shape == want.shape == (1, 2, 3, 4)  # scale min(4/9, 5/6) keeps the aspect ratio
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_resize_tf_crop_and_resize_fills_outside_with_extrapolation_value():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": -1.0}
    roi = np.asarray([0, 0, 0.5, -0.5, 1, 1, 1.2, 0.5], np.float32)
    proto = resize_model(attrs, x.shape, roi=roi, sizes=np.asarray([1, 1, 3, 3], np.int64))
    (got,) = run_tractile(proto, [x])
    # rows sample y = 1.5, 2.55, 3.6 (past the last row); columns x = -1.5 (before the first), 0, 1.5
    rows = np.array([1.5, 2.55, 3.6])
    cols = np.array([-1.5, 0.0, 1.5])
    expected = rows[:, None] * 4 + cols[None, :]
    expected[:, 0] = expected[2, :] = -1.0
    np.testing.assert_allclose(got[0, 0], expected, rtol=1e-5)


def test_resize_nearest_keeps_integers_exactly():
    x = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
    proto = resize_model({"mode": "nearest"}, x.shape, scales=np.asarray([1, 1, 2, 2], np.float32), dtype="u8")
    (got,) = run_tractile(proto, [x])
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got[0, 0], np.repeat(np.repeat(x[0, 0], 2, 0), 2, 1))


def test_resize_linear_on_integers_rounds():
    x = np.array([[[[0, 255]]]], dtype=np.uint8)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners"}
    proto = resize_model(attrs, x.shape, sizes=np.asarray([1, 1, 1, 4], np.int64), dtype="u8")
    (got,) = run_tractile(proto, [x])
    np.testing.assert_array_equal(got[0, 0, 0], [0, 85, 170, 255])


def test_upsample_v7_and_resize_v10_use_asymmetric_coordinates():
    x = rand(1, 1, 3, 3)
    expected = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
    v7 = model([node("Upsample", ["x"], ["y"], mode="nearest", scales=[1.0, 1.0, 2.0, 3.0])],
               [value("x", "f32", x.shape)], [value("y")], opset=7)
    np.testing.assert_array_equal(run_tractile(v7, [x])[0], expected)
    v10 = model([node("Resize", ["x", "s"], ["y"], mode="linear")], [value("x", "f32", x.shape)], [value("y")],
                {"s": np.asarray([1, 1, 2, 2], np.float32)}, opset=10)
    got = run_tractile(v10, [x])[0]
    np.testing.assert_allclose(got, run_onnxruntime(v10, [x])[0], rtol=1e-6)


def test_resize_runtime_scales_give_fresh_symbols_then_run():
    x = rand(1, 1, 4, 4)
    proto = model([node("Resize", ["x", "", "s"], ["y"], mode="nearest")],
                  [value("x", "f32", x.shape), value("s", "f32", [4])], [value("y")], opset=19)
    loaded = tractile.load(proto, optimize=False).into_optimized()
    fact = loaded.outlet_fact(loaded.outputs[0])
    assert fact.shape[:2] == (1, 1) or all(isinstance(d, TDim) for d in fact.shape)
    assert all(isinstance(d, TDim) for d in fact.shape[2:])
    scales = np.asarray([1, 1, 0.5, 2], np.float32)
    (got,) = loaded.plan().state(check_facts=True).run([x, scales])
    np.testing.assert_array_equal(got, run_onnxruntime(proto, [x, scales])[0])


def test_resize_symbolic_input_with_integer_scale_stays_symbolic():
    proto = model([node("Resize", ["x", "", "s"], ["y"], mode="nearest")], [value("x", "f32", ["N", 3, "H", 5])],
                  [value("y")], {"s": np.asarray([1, 1, 2, 0.5], np.float32)}, opset=19)
    typed = tractile.load(proto)
    fact = typed.outlet_fact(typed.outputs[0])
    assert str(fact.shape[0]) == "N" and fact.shape[1] == 3 and str(fact.shape[2]) == "2*H" and fact.shape[3] == 2


def test_resize_identity_scales_are_decluttered():
    proto = resize_model({"mode": "linear"}, [1, 2, 3, 3], scales=np.ones(4, np.float32))
    typed = tractile.load(proto)
    assert not any(n.op.name == "Resize" for n in typed.nodes)


def test_resize_errors_name_the_problem():
    with pytest.raises(AnalysisError, match="scales has 3 entries for 4"):
        tractile.load(resize_model({"mode": "linear"}, [1, 1, 2, 2], scales=np.ones(3, np.float32)))
    both = model([node("Resize", ["x", "", "s", "z"], ["y"])], [value("x", "f32", [1, 1, 2, 2])], [value("y")],
                 {"s": np.ones(4, np.float32), "z": np.ones(4, np.int64)}, opset=19)
    with pytest.raises(AnalysisError, match="scales or sizes, not both"):
        tractile.load(both)
    with pytest.raises(ModelFormatError, match="mode 'area'"):
        tractile.load(resize_model({"mode": "area"}, [1, 1, 2, 2], scales=np.ones(4, np.float32)))
    with pytest.raises(AnalysisError, match="must all be positive and finite"):
        tractile.load(resize_model({}, [1, 1, 2, 2], scales=np.asarray([1, 1, 0, 1], np.float32)))
    runtime = model([node("Resize", ["x", "", "", "z"], ["y"])], [value("x", "f32", [1, 1, 2, 2]),
                    value("z", "i64", [4])], [value("y")], opset=19)
    with pytest.raises(RunError, match="negative size"):
        run_tractile(runtime, [rand(1, 1, 2, 2), np.asarray([1, 1, -2, 2], np.int64)])


# GridSample, AffineGrid -----------------------------------------------------------------------------
def grid_sample_model(x_shape, grid_shape, opset=20, **attrs):
    return model([node("GridSample", ["x", "g"], ["y"], **attrs)],
                 [value("x", "f32", x_shape), value("g", "f32", grid_shape)], [value("y")], opset=opset)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_2d_matches_onnxruntime(mode, padding_mode, align_corners):
    x = rand(2, 3, 5, 4)
    grid = RNG.uniform(-1.6, 1.6, (2, 6, 7, 2)).astype(np.float32)
    proto = grid_sample_model(x.shape, grid.shape, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    (got,) = run_tractile(proto, [x, grid])
    (want,) = run_onnxruntime(proto, [x, grid])
    assert got.shape == want.shape == (2, 3, 6, 7)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_grid_sample_v16_mode_names_and_3d_linear():
    x = rand(1, 2, 3, 4)
    grid = RNG.uniform(-1, 1, (1, 2, 2, 2)).astype(np.float32)
    old = grid_sample_model(x.shape, grid.shape, opset=16, mode="bicubic")
    np.testing.assert_allclose(run_tractile(old, [x, grid])[0], run_onnxruntime(old, [x, grid])[0], rtol=1e-4,
                               atol=1e-5)
    volume = rand(1, 1, 3, 4, 5)
    # z, y, x all on pixel centres (align_corners): trilinear sampling reads voxels exactly
    points = np.array([[0, 0, 0], [2, 3, 4], [1, 2, 3], [0.5, 1, 2]])  # (z, y, x)
    sizes = np.array([3, 4, 5])
    normalised = (points / (sizes - 1) * 2 - 1)[:, ::-1].astype(np.float32).reshape(1, 1, 1, 4, 3)
    proto = grid_sample_model(volume.shape, normalised.shape, opset=20, mode="linear", align_corners=1)
    (got,) = run_tractile(proto, [volume, normalised])
    v = volume[0, 0]
    expected = [v[0, 0, 0], v[2, 3, 4], v[1, 2, 3], (v[0, 1, 2] + v[1, 1, 2]) / 2]
    np.testing.assert_allclose(got.ravel(), expected, rtol=1e-6)


def test_grid_sample_errors_name_the_problem():
    with pytest.raises(AnalysisError, match="grid's last axis must hold 2"):
        tractile.load(grid_sample_model([1, 1, 4, 4], [1, 3, 3, 3]))
    with pytest.raises(AnalysisError, match="input 1 rank is 3"):
        tractile.load(grid_sample_model([1, 1, 4, 4], [1, 3, 2]))
    with pytest.raises(ModelFormatError, match="padding_mode 'wrap'"):
        tractile.load(grid_sample_model([1, 1, 4, 4], [1, 3, 3, 2], padding_mode="wrap"))


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 1, 3, 4, 2]])
def test_affine_grid_matches_onnxruntime_or_formula(align_corners, size):
    rank = len(size) - 2
    theta = rand(2, rank, rank + 1)
    proto = model([node("AffineGrid", ["t", "s"], ["g"], align_corners=align_corners)],
                  [value("t", "f32", theta.shape), value("s", "i64", [len(size)])], [value("g")], opset=20)
    (got,) = run_tractile(proto, [theta, np.asarray(size, np.int64)])
    assert got.shape == (2, *size[2:], rank)

    def line(n):
        return np.linspace(-1, 1, n) if align_corners else (np.arange(n) * 2 + 1) / n - 1

    base = np.meshgrid(*[line(n) for n in size[2:]], indexing="ij")[::-1]  # x varies along the last axis
    index = (1,) * rank
    point = np.array([b[index] for b in base] + [1.0])
    np.testing.assert_allclose(got[(0,) + index], theta[0] @ point, rtol=1e-5)
    if rank == 2:
        np.testing.assert_allclose(got, run_onnxruntime(proto, [theta, np.asarray(size, np.int64)])[0],
                                   rtol=1e-5, atol=1e-6)


def test_affine_grid_rejects_bad_theta():
    proto = model([node("AffineGrid", ["t", "s"], ["g"])], [value("t", "f32", [1, 2, 4]), value("s", "i64", [4])],
                  [value("g")], opset=20)
    with pytest.raises(AnalysisError, match=r"theta must be \(N, 2, 3\)"):
        tractile.load(proto)


# RoiAlign, NonMaxSuppression --------------------------------------------------------------------------
def roi_align_model(opset=16, **attrs):
    return model([node("RoiAlign", ["x", "rois", "b"], ["y"], **attrs)],
                 [value("x", "f32", None), value("rois", "f32", None), value("b", "i64", None)], [value("y")],
                 opset=opset)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_roi_align_matches_onnxruntime(mode, transform, sampling_ratio):
    x = rand(2, 3, 9, 11)
    rois = np.array([[0.5, 1.0, 7.5, 6.0], [2.0, 2.0, 3.0, 2.5], [-2.0, -1.0, 12.0, 10.0], [4.0, 4.0, 30.0, 5.0]],
                    np.float32)
    batch = np.array([0, 1, 1, 0], np.int64)
    proto = roi_align_model(mode=mode, coordinate_transformation_mode=transform, sampling_ratio=sampling_ratio,
                            output_height=3, output_width=4, spatial_scale=0.8)
    (got,) = run_tractile(proto, [x, rois, batch])
    (want,) = run_onnxruntime(proto, [x, rois, batch])
    assert got.shape == want.shape == (4, 3, 3, 4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_roi_align_single_sample_reads_the_bilinear_value():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    # one bin, one sample at the roi centre: (x, y) = (1.25, 2.5) → 4 * 2.5 + 1.25
    proto = roi_align_model(opset=10, sampling_ratio=1)
    (got,) = run_tractile(proto, [x, np.array([[0.5, 2.0, 2.0, 3.0]], np.float32), np.zeros(1, np.int64)])
    np.testing.assert_allclose(got.ravel(), [11.25], rtol=1e-6)


def test_roi_align_errors_name_the_problem():
    proto = roi_align_model()
    with pytest.raises(RunError, match="batch index out of range"):
        run_tractile(proto, [rand(1, 1, 4, 4), np.zeros((1, 4), np.float32), np.array([3], np.int64)])
    fixed = model([node("RoiAlign", ["x", "rois", "b"], ["y"])],
                  [value("x", "f32", [1, 1, 4, 4]), value("rois", "f32", [2, 5]), value("b", "i64", [2])], [value("y")],
                  opset=16)
    with pytest.raises(AnalysisError, match=r"rois must be \(R, 4\)"):
        tractile.load(fixed)


def nms_model(center=0, inputs=5):
    names = ["boxes", "scores", "max", "iou", "score"][:inputs]
    facts = [value("boxes", "f32", None), value("scores", "f32", None), value("max", "i64", [1]),
             value("iou", "f32", [1]), value("score", "f32", [1])][:inputs]
    return model([node("NonMaxSuppression", names, ["y"], center_point_box=center)], facts, [value("y", "i64")],
                 opset=11)


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_matches_onnxruntime(center):
    corners = RNG.uniform(0, 10, (2, 40, 4)).astype(np.float32)
    corners = np.round(corners, 1)
    scores = np.round(RNG.uniform(0, 1, (2, 3, 40)), 2).astype(np.float32)  # ties on purpose
    inputs = [corners, scores, np.array([6], np.int64), np.array([0.3], np.float32), np.array([0.2], np.float32)]
    proto = nms_model(center)
    (got,) = run_tractile(proto, inputs)
    (want,) = run_onnxruntime(proto, inputs)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_non_max_suppression_hand_example_and_defaults():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6], [1, 1, 0, 0]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.95]]], np.float32)
    # box 3 is box 0 with flipped corners: same box, better score, so it wins and suppresses 0 and 1
    (got,) = run_tractile(nms_model(inputs=4), [boxes, scores, np.array([10], np.int64), np.array([0.5], np.float32)])
    np.testing.assert_array_equal(got, [[0, 0, 3], [0, 0, 2]])
    (none,) = run_tractile(nms_model(inputs=2), [boxes, scores])  # no max_output_boxes_per_class: keep none
    assert none.shape == (0, 3)


def test_non_max_suppression_output_has_a_fresh_first_dim_and_checks_shapes():
    proto = model([node("NonMaxSuppression", ["b", "s"], ["y"])],
                  [value("b", "f32", [1, 5, 4]), value("s", "f32", [1, 2, 6])], [value("y", "i64")], opset=11)
    with pytest.raises(AnalysisError, match="disagree on the box count"):
        tractile.load(proto)
    ok = model([node("NonMaxSuppression", ["b", "s"], ["y"])],
               [value("b", "f32", [1, 5, 4]), value("s", "f32", [1, 2, 5])], [value("y", "i64")], opset=11)
    fact = tractile.load(ok).output_fact(0)
    assert isinstance(fact.shape[0], TDim) and fact.shape[1] == 3


# Col2Im, DeformConv ---------------------------------------------------------------------------------------
def col2im_model(rank=2, **attrs):
    return model([node("Col2Im", ["x", "image", "block"], ["y"], **attrs)],
                 [value("x", "f32", None), value("image", "i64", [rank]), value("block", "i64", [rank])],
                 [value("y")], opset=18)


@pytest.mark.parametrize("attrs", [{}, {"strides": [2, 1]}, {"dilations": [2, 2], "pads": [1, 0, 1, 2]},
                                   {"strides": [2, 3], "pads": [1, 1, 0, 2], "dilations": [1, 2]}])
def test_col2im_matches_onnxruntime(attrs):
    image, block = np.array([6, 7], np.int64), np.array([2, 3], np.int64)
    strides, dilations = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    counts = [(image[a] + pads[a] + pads[a + 2] - dilations[a] * (block[a] - 1) - 1) // strides[a] + 1
              for a in range(2)]
    x = rand(2, 3 * 6, int(np.prod(counts)))
    proto = col2im_model(**attrs)
    (got,) = run_tractile(proto, [x, image, block])
    (want,) = run_onnxruntime(proto, [x, image, block])
    assert got.shape == want.shape == (2, 3, 6, 7)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_col2im_of_ones_counts_block_coverage_in_3d():
    image, block = np.array([3, 4, 2], np.int64), np.array([2, 2, 1], np.int64)
    x = np.ones((1, 4, 2 * 3 * 2), np.float32)
    (got,) = run_tractile(col2im_model(rank=3), [x, image, block])
    per_axis = [np.array([1, 2, 1]), np.array([1, 2, 2, 1]), np.array([1, 1])]
    np.testing.assert_array_equal(got[0, 0], np.einsum("i,j,k->ijk", *per_axis))


def test_col2im_errors_name_the_problem():
    with pytest.raises(RunError, match="does not hold 9 blocks"):
        run_tractile(col2im_model(), [rand(1, 4, 8), np.array([4, 4], np.int64), np.array([2, 2], np.int64)])
    fixed = model([node("Col2Im", ["x", "image", "block"], ["y"])], [value("x", "f32", [1, 5, 9])], [value("y")],
                  {"image": np.array([4, 4], np.int64), "block": np.array([2, 2], np.int64)}, opset=18)
    with pytest.raises(AnalysisError, match="not a multiple of the block volume 4"):
        tractile.load(fixed)


def deform_model(with_bias, with_mask, **attrs):
    names = ["x", "w", "o", "b" if with_bias else "", "m" if with_mask else ""]
    while names[-1] == "":
        names.pop()
    facts = [value(n, "f32", None) for n in names if n]
    return model([node("DeformConv", names, ["y"], **attrs)], facts, [value("y")], opset=22)


@pytest.mark.parametrize("with_bias,with_mask", [(False, False), (True, True), (False, True)])
@pytest.mark.parametrize("attrs", [{}, {"group": 2, "offset_group": 2, "strides": [2, 1], "pads": [1, 0, 1, 1],
                                        "dilations": [1, 2]}])
def test_deform_conv_matches_onnxruntime(with_bias, with_mask, attrs):
    x, w = rand(2, 4, 7, 6), rand(6, 4 // attrs.get("group", 1), 3, 2)
    strides, pads, dilations = attrs.get("strides", [1, 1]), attrs.get("pads", [0] * 4), attrs.get("dilations", [1, 1])
    out = [(x.shape[2 + a] + pads[a] + pads[a + 2] - dilations[a] * (w.shape[2 + a] - 1) - 1) // strides[a] + 1
           for a in range(2)]
    groups = attrs.get("offset_group", 1)
    offset = (RNG.standard_normal((2, groups * 6 * 2, *out)) * 1.5).astype(np.float32)
    inputs = [x, w, offset] + ([rand(6)] if with_bias else []) + (
        [RNG.uniform(0, 1, (2, groups * 6, *out)).astype(np.float32)] if with_mask else [])
    proto = deform_model(with_bias, with_mask, **attrs)
    if with_mask and not with_bias:
        inputs.insert(3, None)
        inputs = [i for i in inputs if i is not None]
    (got,) = run_tractile(proto, inputs)
    (want,) = run_onnxruntime(proto, inputs)
    assert got.shape == want.shape == (2, 6, *out)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_deform_conv_with_zero_offsets_is_a_convolution():
    x, w = rand(1, 2, 5, 5), rand(3, 2, 3, 3)
    offset = np.zeros((1, 18, 3, 3), np.float32)
    (got,) = run_tractile(deform_model(False, False), [x, w, offset])
    conv = model([node("Conv", ["x", "w"], ["y"])], [value("x", "f32", x.shape), value("w", "f32", w.shape)],
                 [value("y")])
    np.testing.assert_allclose(got, run_onnxruntime(conv, [x, w])[0], rtol=1e-5, atol=1e-5)


def test_deform_conv_rejects_a_misshaped_offset():
    proto = model([node("DeformConv", ["x", "w", "o"], ["y"])],
                  [value("x", "f32", [1, 2, 5, 5]), value("w", "f32", [3, 2, 3, 3]), value("o", "f32", [1, 9, 3, 3])],
                  [value("y")], opset=22)
    with pytest.raises(AnalysisError, match=r"offset should be \(1, 18, 3, 3\)"):
        tractile.load(proto)
