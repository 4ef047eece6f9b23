"""The host's float 3x3 convolutions of stride 1 as Winograd F(2x2, 3x3) (``tl_host_wino.h``):
16 multiply-adds per 2x2 outputs and input channel instead of 36, in 16 GEMMs run by the host's
float GEMM (``tl_gemm.h``) over filters transformed here (``U = G g G^T``, in float64, rounded
once to float32). Taken on the host target only, for layers with enough channels that the
transforms pay for themselves (measured on ResNet50's and SqueezeNet's layers: docs/PERFORMANCE.md).
The results differ from direct summation by rounding only (the transforms add and subtract inputs
before the products): within 1e-5 relative of the interpreter on the models measured.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ..emit import Emit
from .host_gemm import NR, THREADS, TL_THREAD_COL_BYTES, applies, concat_slice
from .host_gemm import _use as use_gemm

HEADER = "tl_host_wino.h"
#: the fewest input and output channels of a layer taken (below, the direct GEMM measured faster)
MIN_IN = 16
MIN_OUT = 16
#: bytes of a strip's scratch (its transformed tiles and their products): L2 holds them and a block
#: of outputs' 16 matrices of weights while the 16 GEMMs run (128 KiB measured faster than 256 KiB
#: on ResNet50's layers on a 512 KiB L2); at most a thread's scratch, so that strips split across threads
STRIP_BYTES = min(128 * 1024, TL_THREAD_COL_BYTES)
#: tiles of the GEMM micro-kernel (the AVX2 one's 6 rows)
TILE_ROWS = 6

#: F(2x2, 3x3)'s filter transform (Lavin and Gray): U = G g G^T
G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def transform_filters(w: np.ndarray) -> np.ndarray:
    """OHWI 3x3 filters [filters][3][3][in_c] as U [16][in_c][filters] (G g G^T per filter and
    input channel, row-major over the 4x4 products)."""
    filters, _, _, in_c = w.shape
    u = np.einsum("ai,oijc,bj->abco", G, np.asarray(w, np.float64), G)
    return u.reshape(16, in_c, filters)


def pack(u: np.ndarray) -> np.ndarray:
    """U [16][in_c][filters] per block of 16 outputs: 16 matrices [in_c][16] (tl_gemm.h's float
    blocks), outputs past the last zero."""
    products, in_c, filters = u.shape
    blocks = -(-filters // NR)
    padded = np.zeros((products, in_c, blocks * NR), np.float64)
    padded[..., :filters] = u
    return np.ascontiguousarray(padded.reshape(products, in_c, blocks, NR).transpose(2, 0, 1, 3),
                                np.float32).reshape(-1)


def most_tiles(in_c: int) -> int:
    """The most tiles of a strip: as many as STRIP_BYTES of scratch hold, whole micro-kernel tiles."""
    most = STRIP_BYTES // (16 * 4 * (in_c + NR))
    return most // TILE_ROWS * TILE_ROWS if most >= TILE_ROWS else most


def strip_tiles(tiles: int, in_c: int) -> int:
    """Tiles transformed at a time: at most :func:`most_tiles`, in near-equal strips (whole
    micro-kernel tiles where that fits)."""
    most = most_tiles(in_c)
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
            and left >= 0 and most_tiles(depth) >= TILE_ROWS)


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
    tiles = batches * (-(-out_h // 2)) * (-(-out_w // 2))
    strip = strip_tiles(tiles, in_c)
    into = concat_slice(e, y)
    e.call("tl_wino_f32", x, e.constant("wino", pack(transform_filters(w))), bias_name, y,
           e.scratch("tiles", DatumType.F32, 16 * strip * (in_c + NR)), batches, *x.shape[1:3], in_c, out_h, out_w,
           filters, top, left, strip, into or filters, np.float32(low), np.float32(high), THREADS)
    finish_activation(e, e.op.activation, y)
    return True
