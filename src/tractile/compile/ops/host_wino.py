"""The host's float 3x3 convolutions of stride 1 as Winograd F(2x2, 3x3) or F(4x4, 3x3)
(``tl_host_wino.h``): 16 multiply-adds per 2x2 outputs and input channel instead of 36, or 36 per
4x4 instead of 144, in one GEMM per product run by the host's float GEMM (``tl_gemm.h``) over
filters transformed here (``U = G g G^T``, in float64, rounded once to float32). Taken on the host
target only, for layers with enough channels that the transforms pay for themselves (measured on
ResNet50's and SqueezeNet's layers: docs/PERFORMANCE.md). The results differ from direct summation
by rounding only (the transforms add and subtract inputs before the products): F(2x2)'s by about
twice the direct sums', F(4x4)'s by some 10-15 times (4e-6 of the output's scale on signed sums of
unit size; ResNet50 and SqueezeNet within 1e-5 relative of onnxruntime as before).
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ..emit import Emit
from .host_gemm import NR, THREADS, TL_THREAD_COL_BYTES, applies, concat_slice, use_gemm

HEADER = "tl_host_wino.h"
#: the fewest input and output channels of a layer taken (below, the direct GEMM measured faster)
MIN_IN = 16
MIN_OUT = 16
#: the fewest input channels of a layer taking F(4x4, 3x3) (tiles of 4x4 outputs, 36 products:
#: 4x fewer multiply-adds, a larger rounding error) rather than F(2x2, 3x3)
F4_MIN_IN = 16
#: bytes of a strip's scratch (its transformed tiles and their products): L2 holds them and a block
#: of outputs' 16 matrices of weights while the 16 GEMMs run (128 KiB measured faster than 256 KiB
#: on ResNet50's layers on a 512 KiB L2); at most a thread's scratch, so that strips split across threads
STRIP_BYTES = min(128 * 1024, TL_THREAD_COL_BYTES)
#: the same for F(4x4, 3x3), 36 products a tile: strips of two micro-kernel tiles up to 135 channels
F4_STRIP_BYTES = min(256 * 1024, TL_THREAD_COL_BYTES)
#: tiles of the GEMM micro-kernel (the AVX2 one's 6 rows)
TILE_ROWS = 6

#: the filter transforms (Lavin and Gray) of F(2x2, 3x3) and F(4x4, 3x3) by tile side: U = G g G^T
G = {2: np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]]),
     4: np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                  [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])}


def transform_filters(w: np.ndarray, tile: int = 2) -> np.ndarray:
    """OHWI 3x3 filters [filters][3][3][in_c] as U [(tile + 2)^2][in_c][filters] (G g G^T per
    filter and input channel, row-major over the products)."""
    filters, _, _, in_c = w.shape
    g = G[tile]
    u = np.einsum("ai,oijc,bj->abco", g, np.asarray(w, np.float64), g)
    return u.reshape(len(g) ** 2, in_c, filters)


def pack(u: np.ndarray) -> np.ndarray:
    """U [16][in_c][filters] per block of 16 outputs: 16 matrices [in_c][16] (tl_gemm.h's float
    blocks), outputs past the last zero."""
    products, in_c, filters = u.shape
    blocks = -(-filters // NR)
    padded = np.zeros((products, in_c, blocks * NR), np.float64)
    padded[..., :filters] = u
    return np.ascontiguousarray(padded.reshape(products, in_c, blocks, NR).transpose(2, 0, 1, 3),
                                np.float32).reshape(-1)


def tile_side(in_c: int) -> int:
    """Outputs per side of a tile: 4 (F(4x4, 3x3)) from F4_MIN_IN input channels when a strip
    holds two micro-kernel tiles of them, else 2."""
    return 4 if in_c >= F4_MIN_IN and most_tiles(in_c, 4) >= 2 * TILE_ROWS else 2


def most_tiles(in_c: int, tile: int = 2) -> int:
    """The most tiles of a strip: as many as STRIP_BYTES of scratch hold, whole micro-kernel tiles."""
    most = (F4_STRIP_BYTES if tile == 4 else STRIP_BYTES) // ((tile + 2) ** 2 * 4 * (in_c + NR))
    return most // TILE_ROWS * TILE_ROWS if most >= TILE_ROWS else most


def strip_tiles(tiles: int, in_c: int, tile: int = 2) -> int:
    """Tiles transformed at a time: at most :func:`most_tiles`, in near-equal strips (whole
    micro-kernel tiles where that fits)."""
    most = most_tiles(in_c, tile)
    strips = -(-tiles // most)
    strip = -(-tiles // strips)
    rounded = -(-strip // TILE_ROWS) * TILE_ROWS
    return rounded if strips > 1 and rounded <= most else strip


def takes(x_dtype: DatumType, w_shape: tuple, window, top: int, left: int) -> bool:
    """Whether a convolution of ``w_shape`` (OHWI) on ``x_dtype`` runs as Winograd on the host: 3x3,
    stride 1, enough channels, and strips of a whole micro-kernel tile at least (deeper inputs read
    every weight again for too few tiles: ResNet50's 7x7x512 layers measured 0.4-0.6x the direct GEMM)."""
    filters, k_h, k_w, depth = w_shape
    return (x_dtype == DatumType.F32 and (k_h, k_w) == (3, 3) and tuple(window.strides) == (1, 1)
            and tuple(window.dilations) == (1, 1) and depth >= MIN_IN and filters >= MIN_OUT and top >= 0
            and left >= 0 and most_tiles(depth, tile_side(depth)) >= TILE_ROWS)


def conv2d(e: Emit, x, y, w: np.ndarray, bias: np.ndarray | None, window, out_h: int, out_w: int, top: int,
           left: int) -> bool:
    """A float NHWC 3x3 convolution of stride 1 and one group (``w`` OHWI) as Winograd on the
    host; False when not taken. Its output gets memory apart from its input (no overlap)."""
    filters, _, _, depth = w.shape
    batches, _, _, in_c = x.shape
    if not applies(e) or depth != in_c or not takes(x.dtype, w.shape, window, top, left) or not out_h or not out_w:
        return False
    from .fused import finish_activation, fused_float_activation

    use_gemm(e)
    e.use(HEADER)
    e.uses_math()  # INFINITY
    low, high = fused_float_activation(e, e.op.activation, y)
    bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
    tile = tile_side(in_c)
    tiles = batches * (-(-out_h // tile)) * (-(-out_w // tile))
    strip = strip_tiles(tiles, in_c, tile)
    into = concat_slice(e, y)
    e.call("tl_wino_f32", x, e.constant("wino", pack(transform_filters(w, tile))), bias_name, y,
           e.scratch("tiles", DatumType.F32, (tile + 2) ** 2 * strip * (in_c + NR)), batches, *x.shape[1:3], in_c,
           out_h, out_w, filters, top, left, tile, strip, into or filters, np.float32(low), np.float32(high), THREADS)
    finish_activation(e, e.op.activation, y)
    return True
