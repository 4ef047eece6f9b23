"""Expansions: ops that stand for a small sub-graph of core ops.

A format op with no kernel of its own (ONNX ``Sum``, function bodies...) subclasses
:class:`Expansion` and implements :meth:`Expansion.expand`. It takes part in
analysis like any op (facts and values come from wiring the expansion into a
scratch model) and is replaced by the sub-graph when the model becomes typed.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..fact import TypedFact
from .base import Op


@dataclass(frozen=True)
class Expansion(Op):
    def expand(self, model, name: str, inputs: list) -> list:
        """Wire the equivalent core ops into ``model`` (a TypedModel or a patch)."""
        raise NotImplementedError

    def wire_typed(self, model, name, inputs):
        return self.expand(model, name, list(inputs))

    def _scratch(self, facts: list[TypedFact]):
        from ..model import TypedModel

        scratch = TypedModel()
        sources = [scratch.add_source(f"in{i}", TypedFact(f.dtype, f.shape, f.konst, f.qparams, f.sym_value))
                   for i, f in enumerate(facts)]
        scratch.outputs = self.expand(scratch, self.name, sources)
        return scratch

    def output_facts(self, inputs):
        scratch = self._scratch(inputs)
        return [scratch.outlet_fact(o) for o in scratch.outputs]

    def eval(self, inputs):
        scratch = self._scratch([TypedFact.from_array(v) for v in inputs])
        return scratch.plan().state().run(list(inputs))


@dataclass(frozen=True)
class VariadicChain(Expansion):
    """``op(op(x0, x1), x2)...``: ONNX's variadic Sum, Max, Min as binary ops."""

    binary: Op
    arity: int = 2

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Variadic{self.binary.name}"

    def expand(self, model, name, inputs):
        from .cast import Identity

        if len(inputs) == 1:
            return model.wire_node(name, Identity(), inputs)
        acc = inputs[0]
        for index, other in enumerate(inputs[1:]):
            label = name if index == len(inputs) - 2 else f"{name}.{index}"
            acc = model.wire_node(label, self.binary, [acc, other])[0]
        return [acc]
