"""Streaming keeps an op as it is only when the op declares itself element-wise; its class or
the names of its fields decide nothing."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from tractile.errors import AnalysisError
from tractile.ops import Add, Relu
from tractile.ops.unary import UnaryOp

from .helpers import Builder, assert_streams_like_batch, random_input


@dataclass(frozen=True)
class CumulativeAlong(UnaryOp):
    """A running sum along ``dimension``: not element-wise, though a UnaryOp, and its axis field
    has neither of the names streaming once looked for."""

    dimension: int = 2

    def compute(self, x):
        return np.cumsum(x, axis=self.dimension)


@dataclass(frozen=True)
class Doubled(UnaryOp):
    elementwise = True

    def compute(self, x):
        return x * 2


def model_with(op):
    build = Builder("1,4,T,f32")
    return build.output(build.node("op", op, build.x))


def test_an_undeclared_op_is_refused_not_streamed():
    with pytest.raises(AnalysisError, match="CumulativeAlong has no streaming translation.*not declared element-wise"):
        model_with(CumulativeAlong()).pulse("T", 4)


def test_a_declared_op_streams_and_the_library_declares_its_own():
    assert_streams_like_batch(model_with(Doubled()), [random_input((1, 4, 37))])
    assert Relu.elementwise and Add.elementwise and not UnaryOp.elementwise
