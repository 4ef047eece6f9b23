"""ONNX optionals: at run time a value (tensor or sequence) or None."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import OPTIONAL, TENSOR, InferenceFact, TypedFact
from .base import Op, expect_inputs
from .sequence import element_of, fact_of_element


@dataclass(frozen=True, eq=False)
class OptionalConstruct(Op):
    """ONNX ``Optional``: an optional holding input 0, or an empty one of type ``element``."""

    name = "Optional"
    element: InferenceFact | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, (0, 1), self)
        if inputs:
            return [TypedFact.container(OPTIONAL, element_of(inputs[0]))]
        if self.element is None:
            raise AnalysisError("an empty Optional needs the type of what it would hold")
        return [TypedFact.container(OPTIONAL, self.element)]

    def eval(self, inputs):
        return [inputs[0] if inputs else None]

    def attributes(self):
        return {} if self.element is None else {"element": str(self.element)}


@dataclass(frozen=True)
class OptionalHasElement(Op):
    """Whether input 0 holds a value (a bool scalar); with no input, false. A tensor or
    sequence input always holds one."""

    def output_facts(self, inputs):
        expect_inputs(inputs, (0, 1), self)
        if not inputs or inputs[0].kind != OPTIONAL:
            return [TypedFact(DatumType.BOOL, (), np.array(bool(inputs)))]
        return [TypedFact(DatumType.BOOL, ())]

    def eval(self, inputs):
        return [np.array(bool(inputs) and inputs[0] is not None)]

    def declutter(self, model, node):
        producer = model.nodes[node.inputs[0].node] if node.inputs else None
        if producer is not None and isinstance(producer.op, OptionalConstruct):
            from ..patch import ModelPatch

            return ModelPatch.replace_by_const(model, node, [np.array(bool(producer.inputs))],
                                               f"optional {node.name} is known")
        return None


@dataclass(frozen=True)
class OptionalGetElement(Op):
    """The value an optional holds (RunError if empty); a tensor or sequence passes through."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        fact = inputs[0]
        if fact.kind != OPTIONAL:
            return [fact if fact.kind != TENSOR else fact.without_value()]
        return [fact_of_element(fact.element, "OptionalGetElement")]

    def eval(self, inputs):
        if inputs[0] is None:
            raise RunError("OptionalGetElement on an empty optional")
        return [inputs[0]]
