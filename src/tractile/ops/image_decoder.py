"""ImageDecoder: an encoded image (1-d u8: BMP, JPEG, JPEG 2000, PNG, PNM, TIFF, WebP) to (H, W, C) u8.

Decoding uses Pillow (the ``image`` extra), imported only when an image is decoded.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, check_alloc, expect_inputs

PIXEL_FORMATS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


def pillow_available() -> bool:
    """True when Pillow can be imported."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class ImageDecoder(Op):
    """Decode a 1-d u8 byte stream into an (H, W, C) u8 image; H and W are known at run time."""

    pixel_format: str = "RGB"

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if self.pixel_format not in PIXEL_FORMATS:
            raise AnalysisError(f"ImageDecoder pixel_format {self.pixel_format!r} is not one of "
                                f"{', '.join(PIXEL_FORMATS)}")
        encoded = inputs[0]
        if encoded.rank != 1 or encoded.dtype != DatumType.U8:
            raise AnalysisError(f"ImageDecoder input must be a 1-d u8 byte stream, got {encoded}")
        return [TypedFact(DatumType.U8, (fresh_symbol(), fresh_symbol(), PIXEL_FORMATS[self.pixel_format]))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, DatumType.U8)
        s.equals(outputs[0].rank, 3)

    def eval(self, inputs):
        try:
            from PIL import Image, UnidentifiedImageError
        except ImportError:
            raise RunError("ImageDecoder needs Pillow: pip install 'tractile[image]'") from None
        try:
            image = Image.open(io.BytesIO(inputs[0].tobytes()))
            check_alloc((image.height, image.width, PIXEL_FORMATS[self.pixel_format]), np.uint8, "ImageDecoder")
            converted = image.convert("L" if self.pixel_format == "Grayscale" else "RGB")
            pixels = np.asarray(converted, dtype=np.uint8)
        except (UnidentifiedImageError, OSError, ValueError) as error:
            raise RunError(f"ImageDecoder cannot decode its input: {error}") from None
        if self.pixel_format == "Grayscale":
            return [pixels[:, :, None].copy()]
        return [np.ascontiguousarray(pixels[:, :, ::-1] if self.pixel_format == "BGR" else pixels)]
