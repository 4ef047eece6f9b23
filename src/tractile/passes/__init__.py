"""Model-level passes: ``declutter`` (normalise) and ``optimize`` (speed)."""
from __future__ import annotations

from .const_fold import fold_constants
from .driver import op_declutter, op_optimize, run_passes
from .fold_affine import fold_affine_chain
from .fold_batchnorm import fold_batchnorm, merge_constant_adds, push_mul_above_add
from .fuse import fuse_activation, fuse_bias
from .layout import cancel_quantized, nhwc_max_pool, sink_quantized
from .qdq import fuse_qdq
from .qlinear import lower_qlinear

#: normalising rewrites, in the order each round applies them
DECLUTTER_PASSES = [
    ("fuse-qdq", fuse_qdq),  # first: constant folding would dequantize the weights
    ("lower-qlinear", lower_qlinear),
    ("declutter", op_declutter),
    ("fold-constants", fold_constants),
    ("fold-batchnorm", fold_batchnorm),
    ("fold-affine-chain", fold_affine_chain),
    ("push-mul-above-add", push_mul_above_add),
    ("merge-constant-adds", merge_constant_adds),
    ("nhwc-max-pool", nhwc_max_pool),
    ("cancel-quantized-layout", cancel_quantized),
    ("sink-quantized-layout", sink_quantized),
]

#: speed rewrites
OPTIMIZE_PASSES = [
    ("optimize", op_optimize),
    ("fuse-bias", fuse_bias),
    ("fuse-activation", fuse_activation),
]


def declutter(model, trace: list | None = None):
    """Remove no-ops, fold constants and BatchNorm; dead nodes go with compaction."""
    return run_passes(model, DECLUTTER_PASSES, trace=trace)


def optimize(model, trace: list | None = None):
    """Fuse bias adds and activations into the producing op, then the ops' own speed rewrites."""
    return run_passes(model, OPTIMIZE_PASSES, trace=trace)


__all__ = ["declutter", "optimize", "run_passes", "DECLUTTER_PASSES", "OPTIMIZE_PASSES"]
