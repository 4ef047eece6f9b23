"""Reading users' fact specs: ``"N,3,224,224,f32"``, ``(shape, dtype)``, arrays, facts."""
from __future__ import annotations

import numpy as np

from .datum import DatumType
from .dim import TDim
from .dim_parse import to_dim
from .errors import TractileError
from .fact import InferenceFact, ShapeFactoid, TypedFact


def parse_fact(spec) -> InferenceFact:
    """Turn a user's fact spec into an :class:`InferenceFact`.

    Accepts a tract-style string ``"N,3,224,224,f32"`` (``?`` for an unknown dim, a
    trailing ``..`` for unknown rank, the datum type last and optional), a ``(shape,
    dtype)`` tuple, a NumPy array (its shape and dtype), or a fact.
    """
    if isinstance(spec, InferenceFact):
        return spec
    if isinstance(spec, TypedFact):
        return InferenceFact.from_typed(spec)
    if isinstance(spec, np.ndarray):
        return InferenceFact(DatumType.from_numpy(spec.dtype), ShapeFactoid.closed(spec.shape))
    if isinstance(spec, tuple) and len(spec) == 2 and not isinstance(spec[1], (int, TDim)):
        shape, dtype = spec
        dtype = dtype if isinstance(dtype, DatumType) else (
            DatumType.parse(dtype) if isinstance(dtype, str) else DatumType.from_numpy(dtype))
        dims = [None if d in ("?", None) else to_dim(d) for d in shape]
        return InferenceFact(dtype, ShapeFactoid.closed(dims))
    if not isinstance(spec, str):
        raise TractileError(f"cannot read a fact from {spec!r}: give 'N,3,224,224,f32' or (shape, dtype)")
    items = [item.strip() for item in spec.replace(";", ",").split(",") if item.strip()]
    dtype = None
    if items:
        try:
            dtype = DatumType.parse(items[-1])
            items = items[:-1]
        except TractileError:
            dtype = None
            _refuse_a_misspelt_datum_type(items[-1], spec)
    open_rank = bool(items) and items[-1] in ("..", "...")
    if open_rank:
        items = items[:-1]
    try:
        read = tuple(None if item == "?" else to_dim(item) for item in items)
    except TractileError as error:
        raise TractileError(f"cannot read fact {spec!r}: {error}") from None
    return InferenceFact(dtype, ShapeFactoid(read, open_rank))


def _refuse_a_misspelt_datum_type(item: str, spec: str) -> None:
    """A last item that reads like a datum type but is none (``flt``, ``f23``) is a typo, not a
    symbolic dim: say so now rather than let it become a dimension far away."""
    import difflib
    import re

    if not re.fullmatch(r"[a-z][a-z0-9]*", item):
        return
    names = sorted({d.value for d in DatumType} | {"float", "float32", "float16", "int8", "int16", "int32", "int64",
                                                     "uint8", "bool", "double", "string"})
    close = difflib.get_close_matches(item, names, n=3, cutoff=0.6)
    if close or re.fullmatch(r"[fiu]\d+", item):
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise TractileError(f"cannot read fact {spec!r}: {item!r} is not a datum type{hint}; the datum type comes "
                            "last, e.g. '1,3,224,224,f32'")
