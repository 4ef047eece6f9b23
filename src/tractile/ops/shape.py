"""Ops that compute or change shapes: Shape, Size, Reshape, Flatten, ConstantOfShape, BroadcastShapes
(Squeeze and Unsqueeze live in :mod:`.squeeze`, re-exported here).

Shape values may be symbolic (object arrays of ints and TDims): a ``Shape`` of an
``N,3,T`` input is known statically as ``[N, 3, T]``, so the usual exported
``Shape -> Gather -> Concat -> Reshape`` chains resolve to symbolic shapes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..datum import DatumType
from ..dim import TDim, fresh_symbol, volume
from ..errors import AnalysisError, RunError
from ..fact import TypedFact, is_symbolic_value
from ..patch import ModelPatch
from .axes import moved_qparams
from .base import Op, check_alloc, expect_inputs
from .broadcast import broadcast_shapes
from .squeeze import Squeeze, Unsqueeze  # noqa: F401 - re-exported: they used to live here


def shape_value(fact: TypedFact, what: str) -> list | None:
    """The dims a 1-d shape-like input holds (ints or TDims), or None if unknown."""
    if fact.rank != 1 or not isinstance(fact.shape[0], int):
        raise AnalysisError(f"{what} must be a 1-d tensor of known length, got {fact}")
    value = fact.known_value()
    if value is None:
        return None
    return [v if isinstance(v, TDim) else int(v) for v in value.ravel().tolist()]


def _known_or_fresh(value: list | None, length: int) -> list:
    return value if value is not None else [fresh_symbol() for _ in range(length)]


def value_fact(dims: list, dtype: DatumType = DatumType.I64) -> TypedFact:
    """Fact of a 1-d integer tensor with these (possibly symbolic) items."""
    array = np.asarray(dims, dtype=object)
    if is_symbolic_value(array):
        return TypedFact(dtype, (len(dims),), sym_value=array)
    return TypedFact(dtype, (len(dims),), konst=np.asarray(dims, dtype=dtype.np))


@dataclass(frozen=True)
class Shape(Op):
    """The input's shape as a 1-d ``dtype`` (i64 or i32) tensor, from ``start`` to ``end`` (ONNX semantics)."""

    start: int = 0
    end: int | None = None
    dtype: DatumType = DatumType.I64

    def _range(self, rank: int) -> slice:
        def clamp(axis, default):
            if axis is None:
                return default
            axis = axis + rank if axis < 0 else axis
            return min(max(axis, 0), rank)

        return slice(clamp(self.start, 0), clamp(self.end, rank))

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if self.dtype not in (DatumType.I64, DatumType.I32):
            raise AnalysisError(f"Shape gives i64 or i32 values, not {self.dtype}")
        if not inputs[0].has_rank:
            return [TypedFact(self.dtype, (fresh_symbol(),))]
        dims = list(inputs[0].shape[self._range(inputs[0].rank)])
        return [value_fact(dims, self.dtype)]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, self.dtype)
        s.equals(outputs[0].rank, 1)

    def eval(self, inputs):
        x = inputs[0]
        return [np.asarray(x.shape[self._range(x.ndim)], dtype=self.dtype.np)]

    def declutter(self, model, node):
        fact = node.outputs[0].fact
        if fact.konst is not None:
            return ModelPatch.replace_by_const(model, node, [fact.konst])
        return None


@dataclass(frozen=True)
class Size(Op):
    """The number of elements of the input, as an i64 scalar (symbolic when the shape is)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if not inputs[0].has_rank:
            return [TypedFact(DatumType.I64, ())]
        count = volume(inputs[0].shape)
        if isinstance(count, TDim):
            return [TypedFact(DatumType.I64, (), sym_value=np.asarray(count, dtype=object))]
        return [TypedFact(DatumType.I64, (), konst=np.asarray(count, dtype=np.int64))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, DatumType.I64)
        s.equals(outputs[0].rank, 0)

    def eval(self, inputs):
        return [np.asarray(inputs[0].size, dtype=np.int64)]

    def declutter(self, model, node):
        fact = node.outputs[0].fact
        if fact.konst is not None:
            return ModelPatch.replace_by_const(model, node, [fact.konst])
        return None


def reshaped_dims(input_shape: tuple, target: list, allowzero: bool = False) -> list:
    """Resolve ONNX Reshape targets (``0`` copies, ``-1`` infers) over symbolic dims."""
    dims = []
    infer_at = None
    for axis, item in enumerate(target):
        if isinstance(item, int) and item == 0 and not allowzero:
            if axis >= len(input_shape):
                raise AnalysisError(f"Reshape target {target}: 0 at axis {axis} but the input has rank "
                                    f"{len(input_shape)}")
            dims.append(input_shape[axis])
        elif isinstance(item, int) and item == -1:
            if infer_at is not None:
                raise AnalysisError(f"Reshape target {target} has more than one -1")
            infer_at = axis
            dims.append(None)
        elif isinstance(item, int) and item < -1:
            raise AnalysisError(f"Reshape target {target} has a negative dimension {item}")
        else:
            dims.append(item)
    total = volume(input_shape)
    if infer_at is not None:
        known = volume(d for d in dims if d is not None)
        if isinstance(total, int) and isinstance(known, int):
            if known == 0 or total % known:
                raise AnalysisError(f"cannot reshape ({','.join(map(str, input_shape))}) to {target}")
            dims[infer_at] = total // known
        else:
            quotient = total.div_exact(known) if isinstance(total, TDim) else None
            dims[infer_at] = quotient if quotient is not None else fresh_symbol()
    elif isinstance(total, int) and isinstance(volume(dims), int) and total != volume(dims):
        raise AnalysisError(f"cannot reshape ({','.join(map(str, input_shape))}) ({total} elements) to "
                            f"({','.join(map(str, dims))}) ({volume(dims)} elements)")
    return dims


@dataclass(frozen=True)
class Reshape(Op):
    """Reshape to the dims held by input 1 (``0`` copies an input dim unless ``allowzero``)."""

    allowzero: bool = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        data, shape = inputs
        if shape.rank == 1 and not isinstance(shape.shape[0], int):
            return [TypedFact.unknown_rank(data.dtype)]  # a shape of run-time length
        target = shape_value(shape, "Reshape's shape")
        if target is None:
            dims = [fresh_symbol() for _ in range(shape.shape[0])]
        elif not data.has_rank:
            dims = [fresh_symbol() if isinstance(v, int) and (v == -1 or v == 0 and not self.allowzero) else v
                    for v in target]
        else:
            dims = reshaped_dims(data.shape, target, self.allowzero)
        fact = TypedFact(data.dtype, dims, qparams=moved_qparams(data, _reshaped_axis(data.shape, dims)))
        if data.sym_value is not None and all(isinstance(d, int) for d in dims):
            fact.sym_value = data.sym_value.reshape(dims)
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[1].rank, 1)
        s.equals(outputs[0].rank, inputs[1].shape[0])

    def eval(self, inputs):
        data, shape = inputs
        target = [int(v) for v in shape.tolist()] if shape.dtype != object else shape.tolist()
        if not self.allowzero:
            if any(v == 0 for v in target[data.ndim:]):
                raise RunError(f"Reshape target {target}: 0 copies an input dim but the input has rank {data.ndim}")
            target = [data.shape[i] if v == 0 else v for i, v in enumerate(target)]
        try:
            return [np.reshape(data, target)]
        except ValueError:
            raise RunError(f"cannot reshape an input of shape {data.shape} to {target}") from None

    def declutter(self, model, node):
        data, fact = model.outlet_fact(node.inputs[0]), node.outputs[0].fact
        if not (data.has_rank and fact.has_rank):
            return None
        out = fact.shape
        if data.shape == out:
            return ModelPatch.shunt_one_op(model, node, f"no-op reshape {node.name}")
        if model.outlet_fact(node.inputs[1]).konst is not None:
            return None
        # a target computed from shapes (Shape -> Gather -> Concat...) whose value is known
        # symbolically: the reshape a person wrote, without the exporter's plumbing
        if len(out) == 2:
            for axis in range(len(data.shape) + 1):
                if (volume(data.shape[:axis]), volume(data.shape[axis:])) == tuple(out):
                    patch = ModelPatch(model, f"{node.name}: a flatten at axis {axis}")
                    flat = patch.wire_node(node.name, Flatten(axis), [patch.tap(node.inputs[0])])[0]
                    patch.shunt(_outlet(node), flat)
                    patch.obliterate(node.id)
                    return patch
        if all(isinstance(d, int) for d in out):
            patch = ModelPatch(model, f"{node.name}: a reshape to the constant shape {list(out)}")
            from .io import Const

            target = patch.wire_node(f"{node.name}.shape", Const(np.array(out, np.int64)), [])[0]
            reshaped = patch.wire_node(node.name, Reshape(self.allowzero), [patch.tap(node.inputs[0]), target])[0]
            patch.shunt(_outlet(node), reshaped)
            patch.obliterate(node.id)
            return patch
        return None


def _reshaped_axis(before, after):
    """Input axis -> output axis of a reshape, for an axis kept whole with the same
    elements before it (None otherwise)."""
    def mapping(axis: int):
        if axis >= len(before):
            return None
        lead = volume(before[:axis])
        for index, dim in enumerate(after):
            if dim == before[axis] and volume(after[:index]) == lead:
                return index
        return None
    return mapping


def _outlet(node):
    from ..graph import OutletId

    return OutletId(node.id, 0)


@dataclass(frozen=True)
class Flatten(Op):
    """Reshape to 2-d: dims before ``axis`` times dims from ``axis`` on."""

    axis: int = 1

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        axis = self.axis + x.rank if self.axis < 0 else self.axis
        if not 0 <= axis <= x.rank:
            raise AnalysisError(f"Flatten axis {self.axis} is out of range for {x}")
        dims = (volume(x.shape[:axis]), volume(x.shape[axis:]))
        return [TypedFact(x.dtype, dims, qparams=moved_qparams(x, _reshaped_axis(x.shape, dims)))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(outputs[0].rank, 2)

    def eval(self, inputs):
        x = inputs[0]
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        lead = int(np.prod(x.shape[:axis], dtype=np.int64))
        return [x.reshape(lead, int(np.prod(x.shape[axis:], dtype=np.int64)))]


@dataclass(frozen=True, eq=False)
class ConstantOfShape(Op):
    """A tensor of the shape held by input 0, filled with ``value`` (a 1-element array)."""

    value: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.float32))

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        dims = _known_or_fresh(shape_value(inputs[0], "ConstantOfShape's input"), inputs[0].shape[0])
        for dim in dims:
            if isinstance(dim, int) and dim < 0:
                raise AnalysisError(f"ConstantOfShape: negative dimension in {dims}")
        return [TypedFact(DatumType.from_numpy(self.value.dtype), dims)]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, DatumType.from_numpy(self.value.dtype))
        s.equals(outputs[0].rank, inputs[0].shape[0])

    def eval(self, inputs):
        shape = [int(d) for d in inputs[0].tolist()]
        if any(d < 0 for d in shape):
            raise RunError(f"ConstantOfShape: negative dimension in {shape}")
        check_alloc(shape, self.value.dtype, "ConstantOfShape")
        return [np.full(shape, self.value.reshape(-1)[0], dtype=self.value.dtype)]

    def attributes(self):
        return {"value": self.value.reshape(-1)[0].item(), "dtype": str(self.value.dtype)}


@dataclass(frozen=True)
class BroadcastShapes(Op):
    """The NumPy broadcast of the shapes held by the (1-d integer) inputs, in their datum type
    (TensorFlow's BroadcastArgs)."""

    def output_facts(self, inputs):
        if not inputs or any(f.dtype != inputs[0].dtype or not f.dtype.is_integer for f in inputs):
            raise AnalysisError(f"BroadcastShapes takes 1-d shapes of one integer type, got {inputs}")
        values = [shape_value(f, "a BroadcastShapes input") for f in inputs]
        rank = max(f.shape[0] for f in inputs)
        if any(v is None for v in values):
            return [TypedFact(inputs[0].dtype, (rank,))]
        return [value_fact(list(broadcast_shapes(*[tuple(v) for v in values])), inputs[0].dtype)]

    def eval(self, inputs):
        try:
            shape = np.broadcast_shapes(*[tuple(int(d) for d in v.reshape(-1)) for v in inputs])
        except ValueError:
            raise RunError(f"cannot broadcast the shapes {[v.tolist() for v in inputs]}") from None
        return [np.asarray(shape, dtype=inputs[0].dtype)]
