"""Reductions over axes: ReduceSum, ReduceMean, ReduceMax, ReduceL2, ReduceLogSumExp...

ONNX rules: the axes come from an attribute (old opsets) or an input, negative axes
count from the back, no axes means every axis (or, with ``noop_with_empty_axes``, no
reduction at all), ``keepdims`` keeps reduced axes as size 1. Reducing an empty set
gives the reduction's identity (0 for sums, 1 for products, -inf for LogSum and Max).

Sums and products also run on symbolic values (``ReduceProd(Shape(x))`` is ``N*3*T``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError, TractileError
from ..fact import QParams, TypedFact
from ..patch import ModelPatch
from .axes import resolve_axes, widened, with_known_value
from .base import Op, expect_inputs
from .quantized.common import cached_recipe, quantized_fact, recipe_of, with_recipe
from .quantized.reduce import mean_sum_recipe


def _lowest(dtype: np.dtype):
    if dtype == np.bool_:
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return -np.inf


def _highest(dtype: np.dtype):
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.inf


def _max(x, axes, keep):
    if x.size == 0:
        return np.max(x, axis=axes, keepdims=keep, initial=_lowest(x.dtype))
    return np.max(x, axis=axes, keepdims=keep)


def _min(x, axes, keep):
    if x.size == 0:
        return np.min(x, axis=axes, keepdims=keep, initial=_highest(x.dtype))
    return np.min(x, axis=axes, keepdims=keep)


def _log_sum_exp(x, axes, keep):
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=axes, keepdims=keep))
    shift = np.max(x, axis=axes, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0)
    total = np.log(np.sum(np.exp(x - shift), axis=axes, keepdims=True)) + shift
    return total if keep else np.squeeze(total, axis=axes)


_REDUCERS: dict[str, Callable] = {
    "sum": lambda x, axes, keep: np.sum(x, axis=axes, keepdims=keep),
    "mean": lambda x, axes, keep: np.mean(x, axis=axes, keepdims=keep),
    "prod": lambda x, axes, keep: np.prod(x, axis=axes, keepdims=keep),
    "max": _max,
    "min": _min,
    "l1": lambda x, axes, keep: np.sum(np.abs(x), axis=axes, keepdims=keep),
    "l2": lambda x, axes, keep: np.sqrt(np.sum(x * x, axis=axes, keepdims=keep)),
    "sum_square": lambda x, axes, keep: np.sum(x * x, axis=axes, keepdims=keep),
    "log_sum": lambda x, axes, keep: np.log(np.sum(x, axis=axes, keepdims=keep)),
    "log_sum_exp": _log_sum_exp,
    "any": lambda x, axes, keep: np.any(x, axis=axes, keepdims=keep),
    "all": lambda x, axes, keep: np.all(x, axis=axes, keepdims=keep),
}
#: reducers that make sense on symbolic dims
_SYMBOLIC_REDUCERS = ("sum", "prod")
#: reducers whose result on a single element is that element (reducing size-1 axes is a reshape)
_IDEMPOTENT = ("sum", "mean", "prod", "max", "min", "any", "all")
#: reducers that select one of their inputs: the output keeps the input's quantization
_SELECTING = ("max", "min")


class _RuntimeAxes(Exception):
    """The axes input is only known at run time."""


@dataclass(frozen=True)
class Reduce(Op):
    """Reduce with ``reducer`` over the axes held by input 1 (or ``axes``, or all axes).

    ``reducer`` is one of sum, mean, prod, max, min, l1, l2, sum_square, log_sum,
    log_sum_exp, any, all (bools). ``noop_with_empty_axes``: with no axes given, return the
    input unchanged. Max and min of quantized values keep the input's quantization; ``quant``
    (the output's quantization) makes a mean or sum of a quantized input follow TFLite's
    integer recipe (``ops.quantized.reduce``).
    """

    reducer: str
    axes: tuple[int, ...] | None = None
    keepdims: bool = True
    noop_with_empty_axes: bool = False
    quant: QParams | None = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return "Reduce" + "".join(part.capitalize() for part in self.reducer.split("_"))

    def _axes(self, rank: int, inputs, error=AnalysisError) -> tuple[int, ...] | None:
        """Sorted axes to reduce, or None for no reduction at all."""
        axes = self.axes
        if len(inputs) > 1:
            item = inputs[1]
            if isinstance(item, TypedFact):
                if item.rank != 1 or not isinstance(item.shape[0], int):
                    raise AnalysisError(f"{self.name} axes must be a 1-d tensor of known length, got {item}")
                if item.konst is None and item.shape[0] != 0:
                    raise _RuntimeAxes()
                value = item.konst if item.konst is not None else np.zeros(0, np.int64)
            else:
                value = item
            axes = tuple(int(a) for a in np.asarray(value).ravel())
        if not axes:
            return None if self.noop_with_empty_axes else tuple(range(rank))
        return tuple(sorted(set(resolve_axes(axes, rank, f"{self.name} axis", error, unique=False))))

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 2), self)
        if self.reducer not in _REDUCERS:
            raise AnalysisError(f"unknown reducer {self.reducer!r}; expected one of {', '.join(_REDUCERS)}")
        x = inputs[0]
        if len(inputs) > 1 and not inputs[1].dtype.is_integer:
            raise AnalysisError(f"{self.name} axes must be integers, got {inputs[1]}")
        if self.reducer in ("any", "all") and x.dtype != DatumType.BOOL:
            raise AnalysisError(f"{self.name} needs a bool input, got {x}")
        qparams = x.qparams if self.reducer in _SELECTING else None
        if self.quant is not None:
            if not quantized_fact(x):
                raise AnalysisError(f"a quantized {self.name} needs a quantized input, got {x}")
            self._recipe(inputs)
            qparams = self.quant
        try:
            axes = self._axes(x.rank, inputs)
        except _RuntimeAxes:
            if self.quant is not None:
                raise AnalysisError(f"a quantized {self.name} needs constant axes") from None
            return [self._runtime_axes_fact(x, inputs[1].shape[0])]
        if axes is None:
            return [TypedFact(x.dtype, x.shape, x.konst, x.qparams if self.quant is None else self.quant,
                              x.sym_value)]
        if self.keepdims:
            shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
        else:
            shape = [d for i, d in enumerate(x.shape) if i not in axes]
        fact = TypedFact(x.dtype, shape, qparams=qparams)
        if x.sym_value is not None and self.reducer in _SYMBOLIC_REDUCERS:
            try:
                with_known_value(fact, self._reduce(x.sym_value, axes))
            except (TractileError, TypeError):
                pass
        return [fact]

    def _runtime_axes_fact(self, x: TypedFact, count: int) -> TypedFact:
        if self.keepdims:
            return TypedFact(x.dtype, [1 if d == 1 else fresh_symbol() for d in x.shape])
        if count > x.rank:
            raise AnalysisError(f"{self.name} has {count} axes for an input of rank {x.rank}")
        return TypedFact(x.dtype, [fresh_symbol() for _ in range(x.rank - count)])

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        if self.keepdims:
            s.equals(inputs[0].rank, outputs[0].rank)
        elif len(inputs) == 1:
            def rank(s, input_rank):
                axes = self._axes(input_rank, [])
                s.equals(outputs[0].rank, input_rank - (0 if axes is None else len(axes)))

            s.given(inputs[0].rank, rank)

    def _reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        if x.dtype == object:
            result = _REDUCERS[self.reducer](x, axes, self.keepdims)
            return np.asarray(result, dtype=object)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            result = _REDUCERS[self.reducer](widened(x), axes, self.keepdims)
        return np.asarray(result).astype(x.dtype, copy=False)

    def _recipe(self, inputs: list[TypedFact]):
        return cached_recipe(self, inputs[:1], lambda: mean_sum_recipe(self.reducer, inputs[0], self.quant))

    def prepared(self, inputs):
        return self if self.quant is None else with_recipe(self, self._recipe(inputs))

    def eval(self, inputs):
        x = inputs[0]
        axes = self._axes(x.ndim, inputs, RunError)
        if axes is None:
            return [x] if self.quant is None else [recipe_of(self)(x, (), self.keepdims)]
        if self.quant is not None:
            return [recipe_of(self)(np.asarray(x), axes, self.keepdims)]
        return [self._reduce(x, axes)]

    def declutter(self, model, node):
        inputs = [model.outlet_fact(o) for o in node.inputs]
        try:
            axes = self._axes(inputs[0].rank, inputs)
        except _RuntimeAxes:
            return None
        if axes is None:
            return ModelPatch.shunt_one_op(model, node, f"no-op {self.name} {node.name}")
        if self.quant is not None:
            return None
        if self.keepdims and self.reducer in _IDEMPOTENT and all(inputs[0].shape[a] == 1 for a in axes):
            return ModelPatch.shunt_one_op(model, node, f"{self.name} over size-1 axes {node.name}")
        return None

    def cost(self, inputs):
        return {"flops": inputs[0].volume}
