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


@dataclass(frozen=True)
class LegacyBroadcast(Expansion):
    """ONNX's broadcasting before opset 7: ``binary(a, b)`` where ``b``'s axes line up with ``a``'s
    starting at ``axis`` (``broadcast=1, axis=k``), not from the right as NumPy aligns them. ``b``
    gets trailing size-1 axes so that the usual broadcasting does the rest. ``channel_slope``: a
    1-D ``b`` of more than one entry lines up with axis 1 (PRelu's per-channel slope before opset 7).
    """

    binary: Op
    axis: int | None = None
    channel_slope: bool = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.binary.name

    def expand(self, model, name, inputs):
        import numpy as np

        from ..errors import AnalysisError
        from .shape import Unsqueeze

        a, b = model.outlet_fact(inputs[0]), model.outlet_fact(inputs[1])
        axis = self.axis
        if self.channel_slope:
            axis = 1 if b.rank == 1 and a.rank >= 2 and b.shape[0] != 1 else None
        if axis is None:
            return model.wire_node(name, self.binary, inputs)
        if axis < 0:
            axis += a.rank
        trailing = a.rank - axis - b.rank
        if not 0 <= axis <= a.rank or trailing < 0:
            raise AnalysisError(f"legacy broadcast of {b} at axis {self.axis} does not fit {a}")
        for position in range(b.rank):
            if b.shape[position] != 1 and b.shape[position] != a.shape[axis + position]:
                raise AnalysisError(f"legacy broadcast: {b} does not match {a} from axis {axis}")
        if trailing:
            axes = model.add_const(f"{name}.legacy_axes", np.arange(b.rank, b.rank + trailing, dtype=np.int64))
            inputs = [inputs[0], model.wire_node(f"{name}.legacy_broadcast", Unsqueeze(), [inputs[1], axes])[0]]
        return model.wire_node(name, self.binary, inputs)
