"""Graph boundary ops: model inputs (:class:`Source`) and constants (:class:`Const`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .base import Op


@dataclass(frozen=True)
class Source(Op):
    """A model input. Its fact is set on the model, not computed."""

    def output_facts(self, inputs):
        raise AnalysisError("a Source's fact is the model input fact")

    def eval(self, inputs):
        raise AnalysisError("a Source is fed by the run, not evaluated")


@dataclass(frozen=True, eq=False)
class Const(Op):
    """A constant tensor (weights, folded sub-graphs)."""

    value: np.ndarray = field(repr=False)
    qparams: QParams | None = None

    def output_facts(self, inputs):
        return [TypedFact.from_array(self.value, self.qparams)]

    def eval(self, inputs):
        return [self.value]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].value, self.value)

    def attributes(self):
        value = self.value
        if value.size <= 8:
            from ..fact import format_item

            items = [format_item(v) for v in value.ravel().tolist()]
            shown = "[" + ",".join(items) + "]" if value.ndim else items[0]
            return {"value": shown, "dtype": str(value.dtype)}
        return {"shape": list(value.shape), "dtype": str(value.dtype)}
