"""ImageDecoder: encoded bytes to (H, W, C) u8 pixels (needs Pillow, the ``image`` extra)."""
import io

import numpy as np
import pytest

import tractile
from tractile.dim import TDim
from tractile.errors import AnalysisError, RunError

from .onnx_builder import model, node, value

Image = pytest.importorskip("PIL.Image")

PIXELS = np.random.default_rng(3).integers(0, 256, (5, 7, 3), dtype=np.uint8)


def encoded(pixels: np.ndarray, fmt: str) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8)


def decode(data: np.ndarray, pixel_format: str = "RGB") -> np.ndarray:
    proto = model([node("ImageDecoder", ["x"], ["y"], pixel_format=pixel_format)], [value("x", "u8", [None])],
                  [value("y", "u8")], opset=20)
    typed = tractile.load(proto, inputs=[data])
    return typed.plan().state(check_facts=True).run([data])[0]


@pytest.mark.parametrize("fmt", ["PNG", "BMP", "PPM", "TIFF"])
def test_lossless_formats_give_back_the_pixels(fmt):
    got = decode(encoded(PIXELS, fmt))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, PIXELS)


def test_bgr_reverses_channels_and_grayscale_uses_luma():
    data = encoded(PIXELS, "PNG")
    np.testing.assert_array_equal(decode(data, "BGR"), PIXELS[:, :, ::-1])
    gray = decode(data, "Grayscale")
    luma = PIXELS.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    assert gray.shape == (5, 7, 1)
    assert np.abs(gray[:, :, 0].astype(np.float64) - luma).max() <= 1


def test_output_dims_are_fresh_until_run():
    proto = model([node("ImageDecoder", ["x"], ["y"])], [value("x", "u8", [100])], [value("y", "u8")], opset=20)
    fact = tractile.load(proto).output_fact(0)
    assert all(isinstance(d, TDim) for d in fact.shape[:2]) and fact.shape[2] == 3


def test_bad_input_names_the_problem():
    with pytest.raises(RunError, match="cannot decode"):
        decode(np.arange(20, dtype=np.uint8))
    proto = model([node("ImageDecoder", ["x"], ["y"])], [value("x", "f32", [10])], [value("y", "u8")], opset=20)
    with pytest.raises(AnalysisError, match="1-d u8 byte stream"):
        tractile.load(proto)
