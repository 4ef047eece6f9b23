"""Type conversion and pass-through ops: Cast, Identity, Dropout (inference)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..fact import TypedFact
from ..graph import OutletId
from ..patch import ModelPatch
from .base import Op, expect_inputs


@dataclass(frozen=True)
class Cast(Op):
    """Convert to datum type ``to``."""

    to: DatumType

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        fact = TypedFact(self.to, inputs[0].shape)
        if inputs[0].sym_value is not None and self.to.is_integer:
            fact.sym_value = inputs[0].sym_value
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(outputs[0].datum_type, self.to)

    def eval(self, inputs):
        x = inputs[0]
        if x.dtype == object and self.to != DatumType.STRING:
            if any(not isinstance(v, (int, float, np.number, bool)) for v in x.flat):
                return [x]
        return [cast_array(x, self.to)]

    def declutter(self, model, node):
        if model.outlet_fact(node.inputs[0]).dtype == self.to:
            return ModelPatch.shunt_one_op(model, node, f"no-op cast {node.name}")
        return None


def cast_array(x: np.ndarray, to: DatumType) -> np.ndarray:
    """``x`` converted to ``to`` (strings parse and print numbers as ONNX does)."""
    target = to.np
    if to == DatumType.STRING:
        if x.dtype.kind == "f":
            return np.asarray([_float_text(v) for v in x.ravel().tolist()], dtype=object).reshape(x.shape)
        return x.astype(str).astype(object)
    if x.dtype == object or x.dtype.kind in "US":
        return np.asarray([float(v) if to.is_float else int(float(v)) for v in x.ravel()],
                          dtype=np.float64 if to.is_float else np.int64).reshape(x.shape).astype(target)
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(target)


def _float_text(value: float) -> str:
    text = repr(float(value))
    return {"nan": "NaN", "inf": "INF", "-inf": "-INF"}.get(text, text)


@dataclass(frozen=True)
class Identity(Op):
    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        f = inputs[0]
        return [TypedFact(f.dtype, f.shape, f.konst, f.qparams, f.sym_value)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        return [inputs[0]]

    def declutter(self, model, node):
        return ModelPatch.shunt_one_op(model, node, f"identity {node.name}")


@dataclass(frozen=True)
class Dropout(Op):
    """Dropout at inference: the data passes unchanged; the optional mask is all true."""

    with_mask: bool = False

    @property
    def nboutputs(self) -> int:
        return 2 if self.with_mask else 1

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 3), self)
        x = inputs[0]
        facts = [TypedFact(x.dtype, x.shape)]
        if self.with_mask:
            facts.append(TypedFact(DatumType.BOOL, x.shape))
        return facts

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x = inputs[0]
        return [x, np.ones(x.shape, dtype=bool)] if self.with_mask else [x]

    def declutter(self, model, node):
        if self.with_mask and node.outputs[1].successors or OutletId(node.id, 1) in model.outputs:
            return None
        patch = ModelPatch(model, f"inference dropout {node.name}")
        patch.shunt(OutletId(node.id, 0), patch.tap(node.inputs[0]))
        patch.obliterate(node.id)
        return patch
