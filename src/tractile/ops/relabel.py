"""SetQuantization: the same integers under another quantization.

TFLite's data-movement kernels copy raw values, and a converter may give their output tensor
a quantization other than the input's (a REVERSE_V2 in a Keras Bidirectional LSTM does): the
values then mean something else. The TFLite front end writes that as the core move (which keeps
its input's quantization) followed by this relabelling, so the facts say what the file says.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..fact import QParams, TypedFact
from ..patch import ModelPatch
from .base import Op, expect_inputs


@dataclass(frozen=True)
class SetQuantization(Op):
    """Input 0's values unchanged, their fact quantized as ``qparams`` (None: not quantized)."""

    qparams: QParams | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        return [TypedFact(x.dtype, x.shape, x.konst, self.qparams)]

    def eval(self, inputs):
        return [inputs[0]]

    def declutter(self, model, node):
        if model.outlet_fact(node.inputs[0]).qparams == self.qparams:
            return ModelPatch.shunt_one_op(model, node, f"no-op quantization change {node.name}")
        return None
