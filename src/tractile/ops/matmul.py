"""Matrix products: MatMul (NumPy semantics, optional transposed operands, fused bias and
activation; quantized and hybrid forms) and Gemm."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from ..graph import OutletId
from ..patch import ModelPatch
from .activations import Activation
from .base import Op, expect_inputs
from .binary import Add, Mul
from .broadcast import broadcast_shapes
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .quantized.dense import ProductRecipe, check_product_quantization, clamp_of
from .quantized.hybrid import HybridDense, check_hybrid_weights, is_hybrid


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


def _swapped(shape: tuple, what: str) -> tuple:
    if len(shape) < 2:
        raise AnalysisError(f"MatMul cannot transpose the rank-{len(shape)} {what}")
    return (*shape[:-2], shape[-1], shape[-2])


@dataclass(frozen=True)
class MatMul(Op):
    """``a @ b`` (+ ``bias``, broadcast onto the output, then ``activation``, when fused).

    ``transpose_a`` / ``transpose_b``: an operand's last two axes are swapped first (TFLite's
    BATCH_MATMUL ``adj_x``/``adj_y``; FULLY_CONNECTED's weights, stored (units, depth)).

    ``quant``: the output's quantization. Set, ``a`` and ``b`` are quantized tensors (their
    facts' qparams; ``b`` per-tensor or per output column), the bias is int32 (int64 for
    int16 activations) in the scale of their product, and the op follows TFLite's integer
    recipe (``ops.quantized.dense``) in ``flavour``: "reference" rescales in double precision
    as LiteRT's reference FULLY_CONNECTED, "micro" in fixed point as TFLite Micro (and every
    BATCH_MATMUL). A fused ``activation`` is then a Clip with integer bounds.

    A float ``a`` times a constant int8 quantized ``b`` with ``quant`` None is a hybrid
    product (``ops.quantized.hybrid``): rows of ``a`` quantized on the fly, symmetrically or
    with ``asymmetric_inputs``, as LiteRT's dynamic-range kernels.
    """

    weight_inputs = (1, 2)

    has_bias: bool = False
    activation: Activation | None = None
    transpose_a: bool = False
    transpose_b: bool = False
    quant: QParams | None = None
    flavour: str = "reference"
    asymmetric_inputs: bool = False

    def operand_shapes(self, a: tuple, b: tuple) -> tuple[tuple, tuple]:
        """The operands' shapes once transposed as the op says."""
        return (_swapped(a, "first operand") if self.transpose_a else a,
                _swapped(b, "second operand") if self.transpose_b else b)

    def _clip(self) -> tuple[float, float] | None:
        activation = self.activation
        if activation is None:
            return None
        if type(activation).__name__ != "Clip" or getattr(activation, "dynamic_low", False) \
                or getattr(activation, "dynamic_high", False):
            raise AnalysisError(f"a quantized MatMul can only fuse a Clip, got {activation.name}")
        low, high = getattr(activation, "low", None), getattr(activation, "high", None)
        return (-np.inf if low is None else low, np.inf if high is None else high)

    def is_hybrid(self, inputs: list[TypedFact]) -> bool:
        return self.quant is None and is_hybrid(inputs[0], inputs[1])

    def _recipe(self, inputs: list[TypedFact]):
        a, b = inputs[0], inputs[1]
        bias = inputs[2] if self.has_bias else None
        if self.quant is not None:
            units_axis = -2 if self.transpose_b else -1
            check_product_quantization(a, b, bias, self.quant, self.flavour, units_axis)
            return cached_recipe(self, inputs, lambda: ProductRecipe(
                a, b, self.quant, clamp_of(self.quant, a.dtype, self._clip()), self.flavour, self.transpose_a,
                self.transpose_b))
        return cached_recipe(self, inputs, lambda: self._hybrid(a, b, bias))

    def _hybrid(self, a: TypedFact, b: TypedFact, bias: TypedFact | None) -> HybridDense:
        if b.konst is None or b.rank != 2 or self.transpose_a:
            raise AnalysisError(f"a hybrid MatMul needs constant 2-d int8 weights, got {b}")
        weights = b.konst if self.transpose_b else b.konst.T
        scales = check_hybrid_weights(b, "MatMul weights", 0 if self.transpose_b else 1)
        if bias is not None and (bias.konst is None or bias.dtype != DatumType.F32
                                 or bias.volume != weights.shape[0]):
            raise AnalysisError(f"a hybrid MatMul needs a constant float32 bias per output column, got {bias}")
        return HybridDense(weights, scales, None if bias is None else bias.konst, self.asymmetric_inputs)

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 if self.has_bias else 2, self)
        a, b = inputs[0], inputs[1]
        sa, sb = self.operand_shapes(a.shape, b.shape)
        shape = matmul_shape(sa, sb)
        if self.has_bias and broadcast_shapes(shape, inputs[2].shape) != shape:
            raise AnalysisError(f"bias {inputs[2]} does not broadcast onto the product's shape {shape}")
        if self.quant is not None or self.is_hybrid(inputs):
            self._recipe(inputs)
            return [TypedFact(a.dtype, shape, qparams=self.quant)]
        if a.dtype != b.dtype:
            raise AnalysisError(f"MatMul operands have different datum types ({a}; {b})")
        return [TypedFact(a.dtype, shape)]

    def rules(self, s, inputs, outputs):
        if self.quant is None and not self.transpose_b:
            s.equals_all(inputs[0].datum_type, inputs[1].datum_type, outputs[0].datum_type)
        else:  # 16x8 and hybrid products multiply operands of two datum types
            s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.given_all([inputs[0].shape, inputs[1].shape],
                    lambda s, a, b: s.equals(outputs[0].shape, matmul_shape(*self.operand_shapes(a, b))))

    def prepared(self, inputs):
        if self.quant is not None or self.is_hybrid(inputs):
            return with_recipe(self, self._recipe(inputs))
        return self

    def eval(self, inputs):
        a, b = inputs[0], inputs[1]
        if self.quant is not None:
            return [recipe_of(self)(a, b, inputs[2] if self.has_bias else None)]
        if a.dtype.kind == "f" and b.dtype == np.int8 and "recipe" in self.__dict__:
            dense = recipe_of(self)
            rows = a.reshape(-1, dense.depth)
            y = dense(rows).reshape(*a.shape[:-1], dense.units)
            return [self.activation.apply_inplace(y) if self.activation is not None else y]
        if self.transpose_a:
            a = np.swapaxes(a, -1, -2)
        if self.transpose_b:
            b = np.swapaxes(b, -1, -2)
        y = _matmul(a, b)
        if self.has_bias:
            if y.ndim == 0:
                y = y + inputs[2]
            else:
                y += inputs[2]
        if self.activation is not None:
            y = self.activation.apply_inplace(y)
        return [np.asarray(y)]

    def cost(self, inputs):
        a, b = self.operand_shapes(inputs[0].shape, inputs[1].shape)
        out = matmul_shape(a, b)
        flops = 2 * a[-1]
        for dim in out:
            flops = flops * dim
        return {"flops": flops}

    @property
    def is_plain(self) -> bool:
        """A float product of untransposed operands, quantized by nothing: what algebraic
        rewrites (folding a scale or a bias into it) may change."""
        return self.quant is None and not self.transpose_a and not self.transpose_b


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
