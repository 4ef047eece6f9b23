"""Specialising a model for known input values: each such input becomes a constant.

An If whose condition then becomes known folds away, with the branch it does not take;
a shape computed from the value becomes static. This is how a model with a mode switch
as an input (silero-vad's sample rate ``sr``) becomes the plain model of one mode.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .errors import TractileError
from .fact import InferenceFact, TypedFact
from .fact_unify import unify
from .graph import OutletId


def _as_input_value(name: str, fact, value: Any) -> np.ndarray:
    array = np.asarray(value)
    dtype = fact.dtype.np if fact.dtype is not None else None
    if dtype is not None and array.dtype != dtype:
        converted = array.astype(dtype)
        if converted.shape != array.shape or not np.array_equal(converted, array):
            raise TractileError(f'input "{name}" is {fact}: the value {value!r} does not convert to {fact.dtype} '
                                "without loss")
        array = converted
    return array


def replace_inputs_by_values(model, values: Mapping[str | int, Any]) -> None:
    """Turn the inputs named (or numbered) in ``values`` into constants, in place.

    Raises a TractileError naming the input when a value does not fit its fact.
    """
    from .ops.io import Const

    chosen: dict[OutletId, Any] = {}
    for which, value in values.items():
        outlet = model.inputs[model._port(which, False)]
        if outlet in chosen:
            raise TractileError(f"input {which!r} is given two values")
        chosen[outlet] = value
    typed = not isinstance(model.outlet_fact(next(iter(chosen))) if chosen else None, InferenceFact)
    for outlet, value in chosen.items():
        node = model.nodes[outlet.node]
        fact = model.outlet_fact(outlet)
        array = _as_input_value(node.name, fact, value)
        if typed:
            if not fact.is_tensor or not _fits(fact, array.shape):
                raise TractileError(f'input "{node.name}" is {fact}: a value of shape {array.shape} does not fit')
            new_fact = TypedFact.from_array(array, fact.qparams)
        else:
            try:
                new_fact = unify(fact, InferenceFact(None, None, array))
            except TractileError as error:
                raise TractileError(f'input "{node.name}": {error}') from None
        node.op = Const(array, new_fact.qparams if typed else None)
        model.set_outlet_fact(outlet, new_fact)
        model.properties["input_values"] = {**model.properties.get("input_values", {}), node.name: array}
    model.inputs = [o for o in model.inputs if o not in chosen]


def _fits(fact: TypedFact, shape: tuple) -> bool:
    if not fact.has_rank:
        return True
    return len(fact.shape) == len(shape) and all(
        not isinstance(d, int) or d == actual for d, actual in zip(fact.shape, shape))
