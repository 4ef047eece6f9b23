"""AddN: the sum of several tensors of one shape (TFLite's ADD_N; a float or int32 ADD_N is a
chain of core Adds, this op is its quantized form, TFLite Micro's int8 recipe in
``ops.quantized.add_n``)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .base import Op
from .quantized.add_n import AddNRecipe
from .quantized.common import cached_recipe, recipe_of, with_recipe


@dataclass(frozen=True)
class AddN(Op):
    """The element-wise sum of two or more int8 inputs of one shape and one quantization, given
    in ``quant``'s (the output's)."""

    quant: QParams | None = None

    def _recipe(self, inputs: list[TypedFact]) -> AddNRecipe:
        if self.quant is None:
            raise AnalysisError("AddN needs its output's quantization (a float sum is a chain of Adds)")
        return cached_recipe(self, inputs, lambda: AddNRecipe(inputs, self.quant))

    def output_facts(self, inputs):
        if len(inputs) < 2:
            raise AnalysisError(f"AddN needs at least 2 inputs, got {len(inputs)}")
        if any(f.shape != inputs[0].shape for f in inputs[1:]):
            raise AnalysisError(f"AddN's inputs must have one shape, got {', '.join(map(str, inputs))}")
        self._recipe(inputs)
        return [TypedFact(inputs[0].dtype, inputs[0].shape, qparams=self.quant)]

    def rules(self, s, inputs, outputs):
        for x in inputs:
            s.equals(x.datum_type, outputs[0].datum_type)
            s.equals_shape(x, outputs[0])

    def prepared(self, inputs):
        return with_recipe(self, self._recipe(inputs))

    def eval(self, inputs):
        return [recipe_of(self)(list(inputs))]

    def cost(self, inputs):
        return {"flops": inputs[0].volume * len(inputs)}
