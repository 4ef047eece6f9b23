"""TensorFlow op translations against TensorFlow: convolutions (NHWC and NCHW, SAME / VALID /
EXPLICIT, strides, dilations, groups), transposed convolutions, pooling, MatMul / BatchMatMul,
SpaceToBatchND / BatchToSpaceND (Keras dilated convolutions), DepthToSpace / SpaceToDepth,
image resizing and fake quantization.

Each case traces a small tf.function, freezes it to a GraphDef written as a .pb, loads it with
tractile and compares the outputs with TensorFlow's on random inputs. TensorFlow runs few NCHW
kernels on CPU: NCHW graphs are loaded by tractile and compared with the NHWC graph's outputs.
"""
from __future__ import annotations

import numpy as np
import pytest

import tractile

from .oracle import assert_close, freeze, tensorflow

tf = tensorflow()
RNG = np.random.default_rng(14)


def load_frozen(tmp_path, function, *inputs, name: str = "op.pb", dynamic: bool = False):
    """``function`` traced for the inputs' types and shapes (every dim unknown when ``dynamic``),
    frozen, written and loaded by tractile; the inputs are named input0, input1..."""
    specs = [tf.TensorSpec([None] * x.ndim if dynamic else x.shape, tf.as_dtype(x.dtype), name=f"input{i}")
             for i, x in enumerate(inputs)]
    graph_def, _, _ = freeze(function, *specs)
    path = tmp_path / name
    path.write_bytes(graph_def.SerializeToString())
    return tractile.load(path)


def by_name(inputs) -> dict[str, np.ndarray]:
    return {f"input{i}": x for i, x in enumerate(inputs)}


def tensorflow_outputs(function, *inputs) -> list[np.ndarray]:
    return [np.asarray(t) for t in tf.nest.flatten(function(*[tf.constant(x) for x in inputs]))]


def check(tmp_path, function, *inputs, rtol: float = 1e-5, dynamic: bool = False) -> list[np.ndarray]:
    """tractile's outputs equal TensorFlow's (exactly for integers and booleans): they are returned."""
    expected = tensorflow_outputs(function, *inputs)
    actual = load_frozen(tmp_path, function, *inputs, dynamic=dynamic).run(None, by_name(inputs))
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert got.dtype == want.dtype, f"output {index}: {got.dtype} != {want.dtype}"
        assert_close(got, want, rtol=rtol, what=f"output {index}")
    return actual


def normal(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def to_nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def check_nchw(tmp_path, nhwc_function, nchw_function, x: np.ndarray) -> None:
    """The NCHW graph run by tractile equals the NHWC graph run by TensorFlow, transposed."""
    expected = tensorflow_outputs(nhwc_function, x)[0]
    actual = load_frozen(tmp_path, nchw_function, to_nchw(x), name="nchw.pb").run(None, by_name([to_nchw(x)]))[0]
    assert_close(actual, to_nchw(expected))


def padding_attrs(padding: str, layout: str) -> dict:
    if padding != "EXPLICIT":
        return {"padding": padding}
    spatial = [[1, 2], [0, 1]]
    pads = [[0, 0]] + spatial + [[0, 0]] if layout == "NHWC" else [[0, 0], [0, 0]] + spatial
    return {"padding": "EXPLICIT", "explicit_paddings": [p for pair in pads for p in pair]}


def spatial4(values: tuple[int, int], layout: str) -> list[int]:
    return [1, *values, 1] if layout == "NHWC" else [1, 1, *values]


@pytest.mark.parametrize("padding", ["SAME", "VALID", "EXPLICIT"])
@pytest.mark.parametrize("strides,dilations,groups", [((1, 1), (1, 1), 1), ((2, 1), (1, 1), 2), ((1, 1), (2, 1), 1)])
def test_conv2d_nhwc_and_nchw(tmp_path, padding, strides, dilations, groups):
    filters = normal(3, 2, 4 // groups, 6)
    x = normal(2, 9, 7, 4)

    def conv(layout):
        return lambda x: tf.raw_ops.Conv2D(input=x, filter=tf.constant(filters), strides=spatial4(strides, layout),
                                           dilations=spatial4(dilations, layout), data_format=layout,
                                           **padding_attrs(padding, layout))

    check(tmp_path, conv("NHWC"), x)
    check_nchw(tmp_path, conv("NHWC"), conv("NCHW"), x)


@pytest.mark.parametrize("padding", ["SAME", "VALID", "EXPLICIT"])
@pytest.mark.parametrize("strides,dilations,multiplier", [((1, 1), (1, 1), 1), ((2, 2), (1, 1), 2),
                                                          ((1, 1), (2, 2), 2)])
def test_depthwise_conv2d(tmp_path, padding, strides, dilations, multiplier):
    filters = normal(3, 3, 3, multiplier)
    x = normal(1, 10, 9, 3)

    def conv(layout, dilated=True, weights=filters):
        return lambda x: tf.raw_ops.DepthwiseConv2dNative(
            input=x, filter=tf.constant(weights), strides=spatial4(strides, layout),
            dilations=spatial4(dilations if dilated else (1, 1), layout), data_format=layout,
            **padding_attrs(padding, layout))

    # TensorFlow's CPU kernel has no dilations: its oracle is the filter with zeros between the taps
    stuffed = np.zeros((2 * dilations[0] + 1, 2 * dilations[1] + 1, 3, multiplier), np.float32)
    stuffed[::dilations[0], ::dilations[1]] = filters
    expected = tensorflow_outputs(conv("NHWC", False, stuffed), x)[0]
    assert_close(load_frozen(tmp_path, conv("NHWC"), x).run(None, by_name([x]))[0], expected)
    actual = load_frozen(tmp_path, conv("NCHW"), to_nchw(x), name="nchw.pb").run(None, by_name([to_nchw(x)]))[0]
    assert_close(actual, to_nchw(expected))


@pytest.mark.parametrize("padding", ["SAME", "VALID", "EXPLICIT"])
@pytest.mark.parametrize("strides", [(1, 1), (2, 2), (2, 3)])
def test_conv2d_backprop_input(tmp_path, padding, strides):
    filters = normal(3, 2, 5, 4)  # h, w, output channels, input channels
    x = normal(2, 4, 5, 4)
    out_h = {"SAME": 4 * strides[0], "VALID": 3 * strides[0] + 3, "EXPLICIT": 3 * strides[0] + 3 - 3}[padding]
    out_w = {"SAME": 5 * strides[1], "VALID": 2 + 4 * strides[1], "EXPLICIT": 4 * strides[1] + 2 - 1}[padding]

    def deconv(layout):
        sizes = [2, out_h, out_w, 5] if layout == "NHWC" else [2, 5, out_h, out_w]
        return lambda x: tf.raw_ops.Conv2DBackpropInput(
            input_sizes=tf.constant(sizes), filter=tf.constant(filters), out_backprop=x,
            strides=spatial4(strides, layout), data_format=layout, **padding_attrs(padding, layout))

    actual = check(tmp_path, deconv("NHWC"), x)[0]
    assert actual.shape == (2, out_h, out_w, 5)
    check_nchw(tmp_path, deconv("NHWC"), deconv("NCHW"), x)


def test_keras_conv2d_transpose(tmp_path):
    layer = tf.keras.layers.Conv2DTranspose(3, 3, strides=2, padding="same")
    layer.build((None, 5, 4, 2))
    check(tmp_path, lambda x: layer(x), normal(2, 5, 4, 2))


@pytest.mark.parametrize("op", ["MaxPool", "AvgPool", "MaxPoolV2"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("ksize,strides", [((2, 2), (2, 2)), ((3, 2), (2, 1))])
def test_pooling_nhwc_and_nchw(tmp_path, op, padding, ksize, strides):
    x = normal(2, 7, 6, 3)

    def pool(layout):
        if op == "MaxPoolV2":
            return lambda x: tf.raw_ops.MaxPoolV2(input=x, ksize=spatial4(ksize, layout),
                                                  strides=spatial4(strides, layout), padding=padding,
                                                  data_format=layout)
        if op == "MaxPool":
            return lambda x: tf.raw_ops.MaxPool(input=x, ksize=spatial4(ksize, layout),
                                                strides=spatial4(strides, layout), padding=padding, data_format=layout)
        return lambda x: tf.raw_ops.AvgPool(value=x, ksize=spatial4(ksize, layout),
                                            strides=spatial4(strides, layout), padding=padding, data_format=layout)

    check(tmp_path, pool("NHWC"), x)
    check_nchw(tmp_path, pool("NHWC"), pool("NCHW"), x)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_transposes(tmp_path, transpose_a, transpose_b):
    a = normal(3, 4) if not transpose_a else normal(4, 3)
    b = normal(4, 5) if not transpose_b else normal(5, 4)
    check(tmp_path, lambda a, b: tf.raw_ops.MatMul(a=a, b=b, transpose_a=transpose_a, transpose_b=transpose_b), a, b)


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 2, 4, 5))])
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_broadcasting_and_adjoints(tmp_path, shapes, adj_x, adj_y):
    a, b = normal(*shapes[0]), normal(*shapes[1])
    if adj_x:
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    if adj_y:
        b = np.ascontiguousarray(np.swapaxes(b, -1, -2))
    check(tmp_path, lambda a, b: tf.raw_ops.BatchMatMulV2(x=a, y=b, adj_x=adj_x, adj_y=adj_y), a, b)


@pytest.mark.parametrize("layer", ["conv", "depthwise"])
def test_keras_dilated_convolutions_through_space_to_batch(tmp_path, layer):
    """Keras lowers dilated convolutions to SpaceToBatchND / conv / BatchToSpaceND; the batch stays symbolic."""
    tf.keras.utils.set_random_seed(2)
    if layer == "conv":
        keras_layer = tf.keras.layers.Conv2D(5, 3, dilation_rate=(2, 3), padding="same")
    else:
        keras_layer = tf.keras.layers.DepthwiseConv2D(3, dilation_rate=2, padding="valid", depth_multiplier=2)
    keras_layer.build((None, 11, 10, 3))
    graph_def, _, _ = freeze(lambda x: keras_layer(x), tf.TensorSpec([None, 11, 10, 3], tf.float32))
    assert {"SpaceToBatchND", "BatchToSpaceND"} <= {node.op for node in graph_def.node}
    path = tmp_path / "dilated.pb"
    path.write_bytes(graph_def.SerializeToString())
    loaded = tractile.load(path)
    for batch in (1, 3):
        x = normal(batch, 11, 10, 3)
        assert_close(loaded.run([x])[0], keras_layer(x).numpy(), what=f"batch {batch}")


@pytest.mark.parametrize("block,amounts", [([2, 2], [[0, 0], [0, 0]]), ([2, 3], [[1, 1], [0, 2]]), ([3], [[2, 1]])])
def test_space_to_batch_and_back(tmp_path, block, amounts):
    x = normal(2, 6, 4, 3)
    check(tmp_path, lambda x: tf.raw_ops.SpaceToBatchND(input=x, block_shape=block, paddings=amounts), x)
    y = normal(2 * int(np.prod(block)), 4, 4, 3)
    crops = [[a[0] // 2, a[1] // 2] for a in amounts]
    check(tmp_path, lambda y: tf.raw_ops.BatchToSpaceND(input=y, block_shape=block, crops=crops), y)


@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
def test_depth_to_space_and_back(tmp_path, op):
    x = normal(2, 3, 4, 8) if op == "DepthToSpace" else normal(2, 4, 6, 3)
    check(tmp_path, lambda x: getattr(tf.raw_ops, op)(input=x, block_size=2), x)


@pytest.mark.parametrize("corners", ["legacy", "align_corners", "half_pixel_centers"])
@pytest.mark.parametrize("size", [(10, 9), (3, 2), (7, 4)])
def test_image_resize(tmp_path, corners, size):
    """ResizeBilinear, ResizeNearestNeighbor and ResizeBicubic (outputs 0, 1, 2)."""
    x = normal(2, 5, 4, 3)
    flags = {"align_corners": corners == "align_corners", "half_pixel_centers": corners == "half_pixel_centers"}
    check(tmp_path, lambda x: [getattr(tf.raw_ops, op)(images=x, size=size, **flags)
                               for op in ("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic")], x)


def test_resizing_integer_images(tmp_path):
    x = RNG.integers(0, 255, (1, 4, 5, 3)).astype(np.uint8)
    check(tmp_path, lambda x: tf.raw_ops.ResizeBilinear(images=x, size=[6, 7], half_pixel_centers=True), x)
    check(tmp_path, lambda x: tf.raw_ops.ResizeNearestNeighbor(images=x, size=[8, 3]), x)


def test_keras_image_resizing_layers(tmp_path):
    x = normal(2, 6, 5, 3)
    for interpolation in ("bilinear", "nearest", "bicubic"):
        layer = tf.keras.layers.Resizing(9, 4, interpolation=interpolation)
        check(tmp_path, lambda x, layer=layer: layer(x), x)
    up = tf.keras.layers.UpSampling2D(2)
    check(tmp_path, lambda x: up(x), x)


RANGES = [(-6.0, 6.0), (-0.7, 1.3), (0.1, 2.0), (-2.0, -0.5), (0.0, 255.0)]


@pytest.mark.parametrize("low,high", RANGES)
@pytest.mark.parametrize("num_bits,narrow_range", [(8, False), (8, True), (4, False)])
def test_fake_quant_with_min_max_args_and_vars(tmp_path, low, high, num_bits, narrow_range):
    x = normal(3, 40) * max(abs(low), abs(high))
    check(tmp_path, lambda x: (
        tf.raw_ops.FakeQuantWithMinMaxArgs(inputs=x, min=low, max=high, num_bits=num_bits, narrow_range=narrow_range),
        tf.raw_ops.FakeQuantWithMinMaxVars(inputs=x, min=tf.constant(low), max=tf.constant(high), num_bits=num_bits,
                                           narrow_range=narrow_range)), x)


@pytest.mark.parametrize("num_bits,narrow_range", [(8, False), (8, True), (5, True)])
def test_fake_quant_per_channel(tmp_path, num_bits, narrow_range):
    lows = np.array([r[0] for r in RANGES], np.float32)
    highs = np.array([r[1] for r in RANGES], np.float32)
    x = normal(4, 6, 5) * 4
    check(tmp_path, lambda x: tf.raw_ops.FakeQuantWithMinMaxVarsPerChannel(
        inputs=x, min=tf.constant(lows), max=tf.constant(highs), num_bits=num_bits, narrow_range=narrow_range), x)


@pytest.mark.parametrize("radius,bias,alpha,beta", [(5, 1.0, 1.0, 0.5), (2, 2.0, 1e-4, 0.75), (1, 0.5, 0.3, 1.0)])
def test_local_response_normalization(tmp_path, radius, bias, alpha, beta):
    check(tmp_path, lambda x: tf.nn.local_response_normalization(x, radius, bias, alpha, beta), normal(2, 3, 4, 7))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("strides", [(1, 1, 1), (2, 1, 2)])
def test_conv3d_and_3d_pooling(tmp_path, padding, strides):
    filters = normal(3, 2, 2, 4, 3)
    x = normal(2, 5, 6, 4, 4)
    full = [1, *strides, 1]
    check(tmp_path, lambda x: (
        tf.raw_ops.Conv3D(input=x, filter=tf.constant(filters), strides=full, padding=padding),
        tf.raw_ops.MaxPool3D(input=x, ksize=[1, 2, 3, 2, 1], strides=full, padding=padding),
        tf.raw_ops.AvgPool3D(input=x, ksize=[1, 2, 2, 3, 1], strides=full, padding=padding)), x)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_bias_add_and_fused_batch_norm(tmp_path, layout):
    channels = 4
    x = normal(2, 3, 5, channels) if layout == "NHWC" else normal(2, channels, 3, 5)
    bias, scale, offset = normal(channels), normal(channels), normal(channels)
    mean, variance = normal(channels), RNG.uniform(0.5, 2.0, channels).astype(np.float32)

    def graph(x):
        y = tf.nn.bias_add(x, bias, data_format=layout)
        return tf.raw_ops.FusedBatchNormV3(x=y, scale=scale, offset=offset, mean=mean, variance=variance,
                                           epsilon=1e-3, data_format=layout, is_training=False)[0]

    check(tmp_path, graph, x)


@pytest.mark.parametrize("corners", ["legacy", "align_corners", "half_pixel_centers"])
def test_resize_of_images_of_unknown_size(tmp_path, corners):
    """Bilinear and nearest are exact; bicubic falls back to core Resize, whose exact cubic weights
    differ from TensorFlow's 1/1024 table by up to ~1e-3 of the range."""
    x = normal(2, 5, 4, 3)
    flags = {"align_corners": corners == "align_corners", "half_pixel_centers": corners == "half_pixel_centers"}
    check(tmp_path, lambda x: [getattr(tf.raw_ops, op)(images=x, size=(7, 6), **flags)
                               for op in ("ResizeBilinear", "ResizeNearestNeighbor")], x, dynamic=True)
    check(tmp_path, lambda x: tf.raw_ops.ResizeBicubic(images=x, size=(7, 6), **flags), x, dynamic=True, rtol=2e-3)
