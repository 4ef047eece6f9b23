"""Array ops that move data without arithmetic: Transpose, Concat, Slice, Split.

``Gather`` lives in :mod:`.indexing` and ``Pad`` in :mod:`.pad` (both re-exported here).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dim import TDim, fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import QParams, TypedFact
from ..patch import ModelPatch
from .axes import expect_integer, int_values, moved_qparams, resolve_axes, resolve_axis, same_qparams, with_known_value
from .base import Op, expect_inputs
from .indexing import Gather  # noqa: F401 - re-exported: it used to live here
from .nn import normalize_axis
from .pad import Pad  # noqa: F401 - re-exported: it used to live here
from .quantized.common import cached_recipe, recipe_of, with_recipe


def _with_value(fact: TypedFact, value) -> TypedFact:
    if value is not None:
        if value.dtype == object:
            fact.sym_value = value
        else:
            fact.konst = value
    return fact


@dataclass(frozen=True)
class Transpose(Op):
    """Permute axes (``perm`` None reverses them)."""

    perm: tuple[int, ...] | None = None

    def _perm(self, rank: int) -> tuple[int, ...]:
        perm = tuple(reversed(range(rank))) if self.perm is None else self.perm
        if sorted(perm) != list(range(rank)):
            raise AnalysisError(f"perm {perm} is not a permutation of the {rank} axes")
        return perm

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        perm = self._perm(x.rank)
        return [TypedFact(x.dtype, [x.shape[p] for p in perm], qparams=moved_qparams(x, perm.index))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)

        def dims(s, rank):
            for axis, source in enumerate(self._perm(rank)):
                s.equals(outputs[0].shape[axis], inputs[0].shape[source])

        if self.perm is not None:
            s.equals(inputs[0].rank, len(self.perm))
        s.given(inputs[0].rank, dims)

    def eval(self, inputs):
        return [np.transpose(inputs[0], self.perm)]

    def declutter(self, model, node):
        rank = model.outlet_fact(node.inputs[0]).rank
        if self._perm(rank) == tuple(range(rank)):
            return ModelPatch.shunt_one_op(model, node, f"identity transpose {node.name}")
        return None


@dataclass(frozen=True)
class Concat(Op):
    """Concatenate along ``axis``.

    ``quant``: the output's quantization when the inputs are quantized tensors rescaled to it
    (``ops.quantized.concat``; with ``flavour="onnxruntime"``, QLinearConcat's tables); None
    concatenates values as they are (the output keeps the inputs' quantization when they share one).
    """

    axis: int = 0
    quant: QParams | None = None
    flavour: str = "reference"

    def _recipe(self, inputs):
        from .quantized import onnxruntime
        from .quantized.concat import ConcatRecipe

        recipe = onnxruntime.ConcatRecipe if self.flavour == "onnxruntime" else ConcatRecipe
        return cached_recipe(self, inputs, lambda: recipe(list(inputs), self.quant))

    def prepared(self, inputs):
        return self if self.quant is None else with_recipe(self, self._recipe(inputs))

    def _qparams(self, inputs, axis: int):
        if self.quant is not None:
            self._recipe(inputs)
            return self.quant
        shared = same_qparams(inputs)
        return shared if shared is None or shared.axis != axis else None

    def output_facts(self, inputs):
        if not inputs:
            raise AnalysisError("Concat needs at least one input")
        first = inputs[0]
        axis = normalize_axis(self.axis, first.rank, "Concat axis")
        total = 0
        for index, fact in enumerate(inputs):
            if fact.rank != first.rank or fact.dtype != first.dtype:
                raise AnalysisError(f"Concat input {index} is {fact}, input 0 is {first}")
            for other_axis, (a, b) in enumerate(zip(fact.shape, first.shape)):
                if other_axis != axis and a != b and isinstance(a, int) and isinstance(b, int):
                    raise AnalysisError(f"Concat inputs 0 and {index} differ on axis {other_axis}: {first}; {fact}")
            total = total + fact.shape[axis]
        shape = list(first.shape)
        shape[axis] = total
        values = [f.known_value() for f in inputs]
        value = None
        if all(v is not None for v in values):
            objects = any(v.dtype == object for v in values)
            value = np.concatenate([v.astype(object) if objects else v for v in values], axis=axis)
        fact = TypedFact(first.dtype, shape, qparams=self._qparams(inputs, axis))
        return [_with_value(fact, value if value is not None and value.dtype == object else None)]

    def rules(self, s, inputs, outputs):
        s.equals_all(*[i.datum_type for i in inputs], outputs[0].datum_type)
        s.equals_all(*[i.rank for i in inputs], outputs[0].rank)

        def dims(s, rank):
            axis = normalize_axis(self.axis, rank, "Concat axis")
            for other in range(rank):
                if other != axis:
                    s.equals_all(*[i.shape[other] for i in inputs], outputs[0].shape[other])
            s.sum_equals_zero(outputs[0].shape[axis], *[-1 * i.shape[axis] for i in inputs])

        s.given(outputs[0].rank, dims)

    def eval(self, inputs):
        if len(inputs) == 1 and self.quant is None:
            return [inputs[0]]
        objects = any(v.dtype == object for v in inputs)
        if objects:
            inputs = [v.astype(object) for v in inputs]
        if self.quant is not None:
            recipe = recipe_of(self)
            inputs = [recipe.rescaled(index, part) for index, part in enumerate(inputs)]
        return [np.concatenate(inputs, axis=self.axis)]


def _slice_params(inputs, values):
    """Resolve Slice's (starts, ends, axes, steps) value lists; None if any is unknown."""
    rank = inputs[0].rank
    starts, ends = values[1], values[2]
    if starts is None or ends is None:
        return None
    axes = values[3] if len(values) > 3 and values[3] is not None else list(range(len(starts)))
    if len(inputs) > 3 and values[3] is None:
        return None
    steps = values[4] if len(values) > 4 else [1] * len(starts)
    if steps is None:
        return None
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise AnalysisError(f"Slice starts {starts}, ends {ends}, axes {axes}, steps {steps} differ in length")
    axes = [normalize_axis(int(a), rank, "Slice axis") for a in axes]
    if len(set(axes)) != len(axes):
        raise AnalysisError(f"Slice axes {axes} repeat")
    if any(s == 0 for s in steps):
        raise AnalysisError("Slice steps cannot be 0")
    return starts, ends, axes, steps


#: slice bounds at least this large (in magnitude) mean "past the end of the axis"
_OPEN_BOUND = 1 << 62


def _symbolic_start(start, dim, step: int):
    """Position of a slice start on a symbolic axis (a constant start is assumed inside the axis)."""
    if isinstance(start, TDim):
        return start
    if step > 0:
        return 0 if start <= -_OPEN_BOUND else dim + start if start < 0 else start
    return dim - 1 if start >= _OPEN_BOUND else dim + start if start < 0 else start


def _symbolic_end(end, dim, step: int):
    """Position of a slice end on a symbolic axis, or None when it depends on the axis size."""
    if isinstance(end, TDim):
        return end
    if step > 0:
        return dim if end >= _OPEN_BOUND else dim + end if end < 0 else None
    return -1 if end <= -_OPEN_BOUND else dim + end if end < 0 else None


def _sliced_dim(dim, start, end, step):
    """Length of ``range(dim)[start:end:step]``, symbolically when it can be told, else a fresh symbol."""
    if isinstance(dim, int) and isinstance(start, int) and isinstance(end, int):
        return len(range(*slice(start, end, step).indices(dim)))
    if isinstance(dim, int):
        return fresh_symbol()
    first, stop = _symbolic_start(start, dim, step), _symbolic_end(end, dim, step)
    if stop is None:
        return fresh_symbol()
    span = stop - first if step > 0 else first - stop
    stride = abs(step)
    if isinstance(span, int):
        return max(-(-span // stride), 0)
    return span if stride == 1 else (span + stride - 1) // stride


@dataclass(frozen=True)
class Slice(Op):
    """ONNX Slice: inputs data, starts, ends, optional axes and steps (Python slicing rules).

    On a symbolic axis, constant starts and negative bounds are taken to fall inside the axis
    (a symbol stands for a size at least that large: ``x[1:]`` has ``N-1`` rows); a non-negative
    constant end, which exporters also use for "to the end", gives a fresh symbol.
    """

    def output_facts(self, inputs):
        expect_inputs(inputs, (3, 5), self)
        data = inputs[0]
        values = [None] + [int_values(f) for f in inputs[1:]]
        params = _slice_params(inputs, values)
        if params is None:
            return [TypedFact(data.dtype, [fresh_symbol() for _ in data.shape], qparams=moved_qparams(data))]
        starts, ends, axes, steps = params
        shape = list(data.shape)
        for start, end, axis, step in zip(starts, ends, axes, steps):
            shape[axis] = _sliced_dim(shape[axis], start, end, int(step))
        kept = [a for a in range(data.rank) if a not in axes or shape[a] == data.shape[a] and steps[axes.index(a)] == 1]
        fact = TypedFact(data.dtype, shape, qparams=moved_qparams(data, lambda a: a if a in kept else None))
        if data.sym_value is not None and all(isinstance(v, int) for v in starts + ends):
            with_known_value(fact, self.eval([data.sym_value, *[np.asarray(v) for v in values[1:]]])[0])
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)

    def eval(self, inputs):
        data = inputs[0]
        starts, ends = inputs[1].ravel().tolist(), inputs[2].ravel().tolist()
        axes = inputs[3].ravel().tolist() if len(inputs) > 3 else list(range(len(starts)))
        steps = inputs[4].ravel().tolist() if len(inputs) > 4 else [1] * len(starts)
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise RunError(f"Slice starts {starts}, ends {ends}, axes {axes}, steps {steps} differ in length")
        if 0 in steps:
            raise RunError("Slice steps cannot be 0")
        index = [slice(None)] * data.ndim
        for start, end, axis, step in zip(starts, ends, resolve_axes(axes, data.ndim, "Slice axis", RunError), steps):
            index[axis] = slice(int(start), int(end), int(step))
        return [data[tuple(index)]]

    def declutter(self, model, node):
        facts = [model.outlet_fact(o) for o in node.inputs]
        steps = facts[4].konst if len(facts) > 4 else None
        if len(facts) > 4 and (steps is None or (steps != 1).any()):
            return None
        if facts[0].shape == node.outputs[0].fact.shape and all(f.konst is not None for f in facts[1:]):
            return ModelPatch.shunt_one_op(model, node, f"no-op slice {node.name}")
        return None


def split_sizes(dim, parts: int):
    """Sizes of ``parts`` chunks of ``dim``: equal, the last one smaller if it does not divide (ONNX)."""
    if parts < 1:
        raise AnalysisError(f"Split into {parts} parts: it needs at least one")
    if isinstance(dim, TDim):
        exact = dim.div_exact(parts)
        if exact is not None:
            return [exact] * parts
        chunk = (dim + (parts - 1)) // parts
        return [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
    chunk = -(-dim // parts)
    last = dim - chunk * (parts - 1)
    if last < 0:
        raise AnalysisError(f"cannot split a dimension of {dim} into {parts} parts")
    return [chunk] * (parts - 1) + [last]


@dataclass(frozen=True)
class Split(Op):
    """Split along ``axis`` into ``outputs`` parts, sized by input 1 if present, else equal."""

    axis: int = 0
    outputs: int = 2

    @property
    def nboutputs(self) -> int:
        return self.outputs

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 2), self)
        x = inputs[0]
        axis = resolve_axis(self.axis, x.rank, "Split axis")
        dim = x.shape[axis]
        if len(inputs) == 2:
            expect_integer(inputs[1], "Split's split")
            if inputs[1].rank != 1 or inputs[1].shape[0] != self.outputs:
                raise AnalysisError(f"Split's split {inputs[1]} must hold one size for each of the "
                                    f"{self.outputs} outputs")
            sizes = int_values(inputs[1])
            if sizes is None:
                sizes = [fresh_symbol() for _ in range(self.outputs)]
            elif any(isinstance(s, int) and s < 0 for s in sizes):
                raise AnalysisError(f"Split sizes {sizes} must not be negative")
            elif isinstance(dim, int) and all(isinstance(s, int) for s in sizes) and sum(sizes) != dim:
                raise AnalysisError(f"Split sizes {sizes} add up to {sum(sizes)}, not to axis {axis} of {x}")
        else:
            sizes = split_sizes(dim, self.outputs)
        facts = []
        qparams = moved_qparams(x, lambda a: a if a != axis else None)
        for size in sizes:
            shape = list(x.shape)
            shape[axis] = size
            facts.append(TypedFact(x.dtype, shape, qparams=qparams))
        return facts

    def rules(self, s, inputs, outputs):
        for output in outputs:
            s.equals(inputs[0].datum_type, output.datum_type)
            s.equals(inputs[0].rank, output.rank)

    def eval(self, inputs):
        x = inputs[0]
        axis = resolve_axis(self.axis, x.ndim, "Split axis", RunError)
        if len(inputs) == 2:
            sizes = [int(s) for s in inputs[1].ravel()]
            if len(sizes) != self.outputs or any(s < 0 for s in sizes) or sum(sizes) != x.shape[axis]:
                raise RunError(f"Split sizes {sizes} do not split an axis of {x.shape[axis]} into {self.outputs}")
        else:
            try:
                sizes = split_sizes(x.shape[axis], self.outputs)
            except AnalysisError as error:
                raise RunError(error.message) from None
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
