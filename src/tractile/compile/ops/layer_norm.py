"""ONNX LayerNormalization (float32, its normalized output only; ``tl_layer_norm.h``)."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.nn import normalize_axis
from ...ops.norm import LayerNorm
from ..emit import Emit
from ..registry import Unsupported, emitter


@emitter(LayerNorm)
def layer_norm(e: Emit) -> None:
    """Rows of the axes from ``axis`` on, normalised; Scale and B constants."""
    op: LayerNorm = e.op
    x, y = e.input(0), e.output(0)
    if x.dtype != DatumType.F32 or op.stash != DatumType.F32:
        raise Unsupported(f"{op.name} on {x.dtype} (float32 only)")
    if op.outputs != 1:
        raise Unsupported(f"{op.name} with its Mean and InvStdDev outputs")
    shape = tuple(int(d) for d in x.shape)
    axis = normalize_axis(op.axis, len(shape))
    inner = shape[axis:]
    depth = int(np.prod(inner, dtype=np.int64))
    rows = x.count // depth if depth else 0
    params = [np.broadcast_to(np.asarray(e.const_input(index, name), np.float32), inner).reshape(-1)
              for index, name in ((1, "Scale"), (2, "B")) if index < len(e.inputs)]
    e.use("tl_layer_norm.h")
    e.uses_math()
    scale = e.constant("scale", params[0])
    bias = e.constant("bias", params[1]) if len(params) > 1 else "NULL"
    e.call("tl_layer_norm_f32", x, y, scale, bias, rows, depth, np.float32(op.epsilon))
