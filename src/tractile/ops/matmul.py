"""Matrix products: MatMul (NumPy semantics, optional fused bias and activation) and Gemm."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from ..graph import OutletId
from ..patch import ModelPatch
from .activations import Activation
from .base import Op, expect_inputs
from .binary import Add, Mul, broadcast_shapes


def matmul_shape(a: tuple, b: tuple, what: str = "MatMul") -> tuple:
    """Output shape of ``a @ b`` with NumPy's promotion of 1-d operands."""
    if not a or not b:
        raise AnalysisError(f"{what} operands must have rank >= 1, got ({','.join(map(str, a))}) and "
                            f"({','.join(map(str, b))})")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2] and isinstance(a2[-1], int) and isinstance(b2[-2], int):
        raise AnalysisError(f"{what}: inner dimensions differ: ({','.join(map(str, a))}) @ "
                            f"({','.join(map(str, b))})")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


#: ``np.dot`` without its ``__array_function__`` dispatch: on small 2-d products it costs half of ``np.matmul``
_dot = getattr(np.dot, "_implementation", np.dot)


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    kind = a.dtype.kind
    if kind == "f" and a.dtype.itemsize >= 4:
        if a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype and type(a) is np.ndarray and type(b) is np.ndarray:
            return _dot(a, b)
        return np.matmul(a, b)
    if kind in "iu" and a.dtype == b.dtype and a.dtype.itemsize <= 2:
        # BLAS in float64 is exact here: partial sums of 16-bit products stay far below 2**53
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    if kind == "V" or a.dtype.name == "bfloat16":
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    return np.matmul(a, b)


@dataclass(frozen=True)
class MatMul(Op):
    """``a @ b`` (+ ``bias``, broadcast onto the output, then ``activation``, when fused)."""

    weight_inputs = (1, 2)

    has_bias: bool = False
    activation: Activation | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 if self.has_bias else 2, self)
        a, b = inputs[0], inputs[1]
        if a.dtype != b.dtype:
            raise AnalysisError(f"MatMul operands have different datum types ({a}; {b})")
        shape = matmul_shape(a.shape, b.shape)
        if self.has_bias and broadcast_shapes(shape, inputs[2].shape) != shape:
            raise AnalysisError(f"bias {inputs[2]} does not broadcast onto the product's shape {shape}")
        return [TypedFact(a.dtype, shape)]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, outputs[0].datum_type)
        s.given_all([inputs[0].shape, inputs[1].shape],
                    lambda s, a, b: s.equals(outputs[0].shape, matmul_shape(a, b)))

    def eval(self, inputs):
        y = _matmul(inputs[0], inputs[1])
        if self.has_bias:
            if y.ndim == 0:
                y = y + inputs[2]
            else:
                y += inputs[2]
        if self.activation is not None:
            y = self.activation.apply_inplace(y)
        return [np.asarray(y)]

    def cost(self, inputs):
        a, b = inputs[0].shape, inputs[1].shape
        out = matmul_shape(a, b)
        flops = 2 * a[-1]
        for dim in out:
            flops = flops * dim
        return {"flops": flops}


@dataclass(frozen=True)
class Gemm(Op):
    """ONNX Gemm: ``alpha * op(A) @ op(B) + beta * C`` on 2-d A and B."""

    weight_inputs = (1, 2)

    alpha: float = 1.0
    beta: float = 1.0
    trans_a: bool = False
    trans_b: bool = False

    def _operand_shapes(self, inputs):
        a, b = inputs[0], inputs[1]
        if a.rank != 2 or b.rank != 2:
            raise AnalysisError(f"Gemm needs 2-d A and B, got {a} and {b}")
        sa = a.shape[::-1] if self.trans_a else a.shape
        sb = b.shape[::-1] if self.trans_b else b.shape
        return sa, sb

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        sa, sb = self._operand_shapes(inputs)
        if inputs[0].dtype != inputs[1].dtype:
            raise AnalysisError(f"Gemm operands have different datum types ({inputs[0]}; {inputs[1]})")
        shape = matmul_shape(sa, sb, "Gemm")
        if len(inputs) == 3 and broadcast_shapes(shape, inputs[2].shape) != shape:
            raise AnalysisError(f"C {inputs[2]} does not broadcast to ({shape[0]},{shape[1]})")
        return [TypedFact(inputs[0].dtype, shape)]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, outputs[0].datum_type)
        s.equals_all(inputs[0].rank, inputs[1].rank, outputs[0].rank, 2)
        s.equals(outputs[0].shape[0], inputs[0].shape[1 if self.trans_a else 0])
        s.equals(outputs[0].shape[1], inputs[1].shape[0 if self.trans_b else 1])
        s.equals(inputs[0].shape[0 if self.trans_a else 1], inputs[1].shape[1 if self.trans_b else 0],
                 why="Gemm inner dimensions differ: {} and {}")

    def eval(self, inputs):
        a = inputs[0].T if self.trans_a else inputs[0]
        b = inputs[1].T if self.trans_b else inputs[1]
        y = _matmul(a, b)
        if self.alpha != 1.0:
            y = y * np.asarray(self.alpha, dtype=y.dtype)
        if len(inputs) == 3:
            c = inputs[2] if self.beta == 1.0 else inputs[2] * np.asarray(self.beta, dtype=y.dtype)
            y = y + c
        return [y]

    def cost(self, inputs):
        sa, sb = self._operand_shapes(inputs)
        return {"flops": 2 * sa[0] * sa[1] * sb[1]}

    def declutter(self, model, node):
        """Rewrite as MatMul (+ Mul by alpha/beta) + Add: fusing passes take it from there."""
        from .array import Transpose

        patch = ModelPatch(model, f"gemm as matmul {node.name}")
        a, b = (patch.tap(o) for o in node.inputs[:2])
        if self.trans_a:
            a = patch.wire_node(f"{node.name}.trans_a", Transpose((1, 0)), [a])[0]
        if self.trans_b:
            b = patch.wire_node(f"{node.name}.trans_b", Transpose((1, 0)), [b])[0]
        y = patch.wire_node(f"{node.name}.matmul", MatMul(), [a, b])[0]
        dtype = model.outlet_fact(node.inputs[0]).dtype.np
        if self.alpha != 1.0:
            alpha = patch.add_const(f"{node.name}.alpha", np.asarray(self.alpha, dtype=dtype))
            y = patch.wire_node(f"{node.name}.scale", Mul(), [y, alpha])[0]
        if len(node.inputs) == 3 and self.beta != 0.0:
            c = patch.tap(node.inputs[2])
            if self.beta != 1.0:
                beta = patch.add_const(f"{node.name}.beta", np.asarray(self.beta, dtype=dtype))
                c = patch.wire_node(f"{node.name}.beta_c", Mul(), [c, beta])[0]
            y = patch.wire_node(f"{node.name}.bias", Add(), [y, c])[0]
        patch.shunt(OutletId(node.id, 0), y)
        patch.obliterate(node.id)
        return patch
