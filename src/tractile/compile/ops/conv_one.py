"""The host's float convolution of one input channel (``tl_conv_one.h``): a first layer on a
spectrogram or a grey image, its 3 x 3 windows read in place (no im2col), the filters in vector
registers. Taken from ``conv.conv2d`` before the GEMM kernels."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ..emit import Emit
from .fused import finish_activation, fused_float_activation
from .host_gemm import applies

HEADER = "tl_conv_one.h"


def conv2d(e: Emit, x, y, w: np.ndarray, bias: np.ndarray | None, window, out_h: int, out_w: int, top: int,
           left: int) -> bool:
    """A float NHWC convolution of one input channel and one group (``w`` OHWI) on the host;
    False when not taken."""
    filters, k_h, k_w, depth = w.shape
    batches, in_h, in_w, in_c = x.shape
    if not applies(e) or x.dtype != DatumType.F32 or in_c != 1 or depth != 1 or not filters:
        return False
    from .conv import _overlap_nhwc

    e.use(HEADER)
    low, high = fused_float_activation(e, e.op.activation, y)
    bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
    taps = np.ascontiguousarray(w.astype(np.float32).reshape(filters, k_h * k_w).T)  # [tap][filter]
    e.call("tl_conv_one_f32", x, e.constant("weights", taps), bias_name, y, batches, in_h, in_w, out_h, out_w,
           filters, k_h, k_w, *window.strides, *window.dilations, top, left, np.float32(low), np.float32(high))
    finish_activation(e, e.op.activation, y)
    _overlap_nhwc(e, x, y, in_h, out_h, in_w, out_w * filters, window.strides[0], top, batches)
    return True
