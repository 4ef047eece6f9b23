"""Unification of facts: the most precise fact compatible with two others."""
from __future__ import annotations

from .errors import AnalysisError
from .fact import OPTIONAL, InferenceFact, ShapeFactoid, _values_equal, unify_dtype, unify_shape


def unify(a: InferenceFact, b: InferenceFact) -> InferenceFact:
    """The most precise fact compatible with both; :class:`AnalysisError` on conflict."""
    if a.kind is not None or b.kind is not None:
        return _unify_containers(a, b)
    try:
        dtype = unify_dtype(a.dtype, b.dtype)
        shape = unify_shape(a.shape, b.shape)
        value, other = a.value, b.value
        if value is None:
            value = other
        elif other is not None and not _values_equal(value, other):
            if value.dtype == object or other.dtype == object:
                value = value if value.dtype != object else other
            else:
                raise AnalysisError("values differ")
        return InferenceFact(dtype, shape, value)
    except AnalysisError as error:
        raise AnalysisError(f"facts {a} and {b} conflict: {error.message}") from None


def _unify_containers(a: InferenceFact, b: InferenceFact) -> InferenceFact:
    def says_tensor(fact: InferenceFact) -> bool:
        return fact.kind is None and (fact.value is not None or bool(fact.shape.dims))

    for optional, other in ((a, b), (b, a)):
        if optional.kind == OPTIONAL and other.kind != OPTIONAL and (other.kind is not None or says_tensor(other)):
            if optional.element is None:
                return other
            return unify(optional.element, other)  # the optional holds a value
    if (a.kind is not None and b.kind is not None and a.kind != b.kind) or says_tensor(a) or says_tensor(b):
        raise AnalysisError(f"facts {a} and {b} conflict: a {a.kind or 'tensor'} is not a {b.kind or 'tensor'}")
    kind = a.kind or b.kind
    assert kind is not None
    facts = [f for f in (a, b) if f.kind is not None]
    try:
        dtype = unify_dtype(a.dtype, b.dtype)
        elements = [f.element for f in facts if f.element is not None]
        element = elements[0] if len(elements) == 1 else unify(*elements) if elements else None
    except AnalysisError as error:
        raise AnalysisError(f"facts {a} and {b} conflict: {error.message}") from None
    if element is not None and element.dtype is None and dtype is not None:
        element = unify(element, InferenceFact(dtype))
    return InferenceFact.container(kind, element, dtype, nothing=element is None)


def generalize(a: InferenceFact, b: InferenceFact) -> InferenceFact:
    """The most precise fact that covers both (dims that differ become unknown).

    Used for what a sequence holds, the two branches of an If, and loop-carried values.
    """
    if a.kind != b.kind:
        return InferenceFact()
    if a.kind is not None:
        dtype = a.dtype if a.dtype == b.dtype else None
        if a.element is None or b.element is None:
            element = b.element if a.element is None else a.element
            return InferenceFact.container(a.kind, element, dtype, nothing=element is None)
        return InferenceFact.container(a.kind, generalize(a.element, b.element))
    dtype = a.dtype if a.dtype == b.dtype else None
    if a.shape.open or b.shape.open or len(a.shape.dims) != len(b.shape.dims):
        shape = ShapeFactoid.unknown()
    else:
        shape = ShapeFactoid(tuple(x if x == y else None for x, y in zip(a.shape.dims, b.shape.dims)), False)
    value = a.value if a.value is not None and b.value is not None and _values_equal(a.value, b.value) else None
    return InferenceFact(dtype, shape, value if dtype is not None and shape.is_complete() else None)
