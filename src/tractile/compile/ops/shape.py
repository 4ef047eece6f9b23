"""Ops that only change a tensor's shape: their output shares the input's bytes."""
from __future__ import annotations

from ...ops.cast import Identity
from ...ops.relabel import SetQuantization
from ...ops.shape import Flatten, Reshape, Squeeze, Unsqueeze
from ..emit import Emit
from ..registry import Unsupported, emitter


@emitter(Reshape, Flatten, Squeeze, Unsqueeze, Identity, SetQuantization)
def reshape(e: Emit) -> None:
    x, y = e.input(0), e.output(0)
    if x.dtype != y.dtype or (x.qparams != y.qparams and not isinstance(e.op, SetQuantization)):
        raise Unsupported(f"a reshape that changes the type ({x.fact} -> {y.fact})")
    e.alias(0, 0)
