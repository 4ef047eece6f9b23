"""Facts about wires: full (:class:`TypedFact`) and partial (:class:`InferenceFact`)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .datum import DatumType
from .dim import Dim, TDim, dim_symbols, is_concrete, volume
from .dim_parse import to_dim
from .errors import AnalysisError, TractileError, UnknownRankError


@dataclass(frozen=True)
class QParams:
    """Affine quantization: ``real = scale * (q - zero_point)``.

    ``scale``/``zero_point`` are tuples (one entry per channel along ``axis``) or a
    single entry with ``axis`` None for per-tensor quantization.
    """

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    def __str__(self) -> str:
        if self.axis is None:
            return f"q(s={self.scale[0]:.6g},zp={self.zero_point[0]})"
        return f"q(axis={self.axis},{len(self.scale)} ch)"


def _dims_text(shape: Sequence) -> str:
    return ",".join("?" if d is None else str(d) for d in shape)


def _values_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a is b:
        return True
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return all(x == y for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc" and b.dtype.kind in "fc"))


#: kinds of value a wire may hold: tensors (the default), ONNX sequences and optionals
TENSOR = "tensor"
SEQUENCE = "sequence"
OPTIONAL = "optional"
CONTAINER_KINDS = (SEQUENCE, OPTIONAL)


def is_symbolic_value(value: np.ndarray | None) -> bool:
    """True for object arrays of ints and TDims (shape computations on symbolic dims)."""
    return value is not None and value.dtype == object and any(isinstance(v, TDim) for v in value.flat)


class TypedFact:
    """Everything known about a wire in a typed model.

    ``shape`` is a tuple of :data:`~tractile.dim.Dim`; ``konst`` the constant value if
    the wire is constant; ``sym_value`` the value as ints and TDims when it is a small
    integer tensor computed from symbolic shapes (it is never run, only reasoned on).

    A wire holding an ONNX sequence (a list of tensors at run time) or optional (a value
    or None) has ``kind`` :data:`SEQUENCE` or :data:`OPTIONAL`, shape ``()``, ``element``
    the (partial) :class:`InferenceFact` of what it holds and ``dtype`` the element's
    datum type (None when unknown). ``element`` None means it holds nothing yet (an empty
    sequence). Build them with :meth:`TypedFact.container`.

    A tensor whose rank depends on data (If branches of different ranks, a Reshape to a
    run-time shape of run-time length) has ``shape`` None at construction
    (:meth:`TypedFact.unknown_rank`): ``has_rank`` is False, ``max_rank`` bounds the rank
    when known, and reading ``shape`` or ``rank`` raises :class:`UnknownRankError` (an
    :class:`AnalysisError`), which is how an op that needs a rank says so.
    """

    __slots__ = ("dtype", "_shape", "konst", "qparams", "sym_value", "kind", "element", "max_rank")

    def __init__(self, dtype: DatumType | None, shape: Sequence | None, konst: np.ndarray | None = None,
                 qparams: QParams | None = None, sym_value: np.ndarray | None = None,
                 kind: str = TENSOR, element: InferenceFact | None = None, max_rank: int | None = None):
        self.dtype = dtype
        self._shape = None if shape is None else tuple(to_dim(d) for d in shape)
        self.max_rank = max_rank if shape is None else None
        self.konst = konst
        self.qparams = qparams
        self.sym_value = sym_value
        self.kind = kind
        self.element = element

    @staticmethod
    def container(kind: str, element: InferenceFact | None, dtype: DatumType | None = None) -> TypedFact:
        """The fact of a sequence or optional holding values described by ``element``
        (None: nothing yet, of datum type ``dtype``)."""
        if kind not in CONTAINER_KINDS:
            raise TractileError(f"unknown container kind {kind!r}")
        return TypedFact(element.dtype if element is not None else dtype, (), kind=kind, element=element)

    @staticmethod
    def unknown_rank(dtype: DatumType, max_rank: int | None = None,
                     qparams: QParams | None = None) -> TypedFact:
        """A tensor whose rank is only known at run time (at most ``max_rank`` when given)."""
        return TypedFact(dtype, None, qparams=qparams, max_rank=max_rank)

    @property
    def shape(self) -> tuple:
        if self._shape is None:
            raise UnknownRankError(f"the rank of {self} depends on data (known only at run time) and this op "
                                   "needs it; giving the inputs' shapes or values when loading may fix it")
        return self._shape

    @property
    def has_rank(self) -> bool:
        """False for a tensor whose rank is only known at run time."""
        return self._shape is not None

    @property
    def is_tensor(self) -> bool:
        return self.kind == TENSOR

    @staticmethod
    def from_array(value: np.ndarray, qparams: QParams | None = None) -> TypedFact:
        value = np.asarray(value)
        return TypedFact(DatumType.from_numpy(value.dtype), value.shape, value, qparams)

    @staticmethod
    def dt_shape(dtype: DatumType, shape: Sequence) -> TypedFact:
        return TypedFact(dtype, shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def volume(self) -> Dim:
        return volume(self.shape)

    def is_concrete(self) -> bool:
        return self._shape is not None and all(is_concrete(d) for d in self._shape)

    def concrete_shape(self) -> tuple[int, ...] | None:
        """The shape as ints; None if symbolic, or if the wire holds a sequence or optional."""
        if self.kind != TENSOR:
            return None
        return self.shape if self.is_concrete() else None

    def symbols(self) -> set[str]:
        return dim_symbols(self._shape) if self._shape is not None else set()

    def known_value(self) -> np.ndarray | None:
        """The constant value, or else the symbolic value, or None."""
        return self.konst if self.konst is not None else self.sym_value

    def without_value(self) -> TypedFact:
        return TypedFact(self.dtype, self._shape, None, self.qparams, kind=self.kind, element=self.element,
                         max_rank=self.max_rank)

    def with_shape(self, shape: Sequence) -> TypedFact:
        return TypedFact(self.dtype, shape, None, self.qparams)

    def with_dtype(self, dtype: DatumType) -> TypedFact:
        return TypedFact(dtype, self._shape, None, None, max_rank=self.max_rank)

    def same_type_and_shape(self, other: TypedFact) -> bool:
        if self.kind != other.kind or (self.kind != TENSOR and self.element != other.element):
            return False
        return (self.dtype == other.dtype and self._shape == other._shape and self.qparams == other.qparams
                and self.max_rank == other.max_rank)

    def __eq__(self, other) -> bool:
        if not isinstance(other, TypedFact) or not self.same_type_and_shape(other):
            return False
        if (self.konst is None) != (other.konst is None):
            return False
        return self.konst is None or other.konst is None or _values_equal(self.konst, other.konst)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        if self.kind != TENSOR:
            return _container_text(self.kind, self.element, self.dtype)
        if self._shape is None:
            bound = f"<={self.max_rank}" if self.max_rank is not None else ""
            dims = [f"rank?{bound}"]
        else:
            dims = [str(d) for d in self._shape]
        text = ",".join([*dims, str(self.dtype)])
        if self.qparams is not None:
            text += f" {self.qparams}"
        known = self.known_value()
        if known is not None:
            text += " " + _value_summary(known)
        return text

    __repr__ = __str__


def _container_text(kind: str, element, dtype) -> str:
    return f"{kind}<{element}>" if element is not None else f"{kind}<nothing,{dtype or '?'}>"


def _value_summary(value: np.ndarray) -> str:
    if value.size <= 8:
        items = [format_item(v) for v in value.ravel().tolist()]
        return "value=" + ("[" + ",".join(items) + "]" if value.ndim else items[0])
    return "const"


def format_item(item) -> str:
    """A tensor element, short: floats with 4 significant digits."""
    return f"{item:.4g}" if isinstance(item, float) else str(item)


@dataclass(frozen=True)
class ShapeFactoid:
    """A partially known shape: ``dims`` (``None`` = unknown), ``open`` = more dims may follow."""

    dims: tuple = ()
    open: bool = True

    @staticmethod
    def unknown() -> ShapeFactoid:
        return ShapeFactoid((), True)

    @staticmethod
    def closed(dims: Sequence) -> ShapeFactoid:
        return ShapeFactoid(tuple(None if d is None else to_dim(d) for d in dims), False)

    @property
    def rank(self) -> int | None:
        return None if self.open else len(self.dims)

    def is_complete(self) -> bool:
        return not self.open and all(d is not None for d in self.dims)

    def __str__(self) -> str:
        return _dims_text(self.dims) + (",.." if self.open and self.dims else ".." if self.open else "")


class InferenceFact:
    """A partial fact: datum type, shape and value each possibly unknown.

    ``kind`` is None for tensors (and unknown wires); a sequence or optional fact (see
    :meth:`InferenceFact.container`) has ``kind`` set, shape ``()`` and an ``element`` fact.
    """

    __slots__ = ("dtype", "shape", "value", "kind", "element")

    def __init__(self, dtype: DatumType | None = None, shape: ShapeFactoid | Sequence | None = None,
                 value: np.ndarray | None = None):
        self.kind: str | None = None
        self.element: InferenceFact | None = None
        if shape is None:
            shape = ShapeFactoid.unknown()
        elif not isinstance(shape, ShapeFactoid):
            shape = ShapeFactoid.closed(shape)
        if value is not None:
            value = np.asarray(value)
            if value.dtype != object:
                value_dtype = DatumType.from_numpy(value.dtype)
            elif dtype is not None:
                value_dtype = dtype
            else:
                value_dtype = DatumType.STRING if any(isinstance(v, (str, bytes)) for v in value.flat) \
                    else DatumType.I64
            dtype = unify_dtype(dtype, value_dtype)
            shape = unify_shape(shape, ShapeFactoid.closed(value.shape))
        self.dtype = dtype
        self.shape = shape
        self.value = value

    @staticmethod
    def from_typed(fact: TypedFact) -> InferenceFact:
        if fact.kind != TENSOR:
            return InferenceFact.container(fact.kind, fact.element, fact.dtype)
        if not fact.has_rank:
            return InferenceFact(fact.dtype, ShapeFactoid.unknown())
        return InferenceFact(fact.dtype, ShapeFactoid.closed(fact.shape), fact.known_value())

    @staticmethod
    def container(kind: str, element: InferenceFact | None = None, dtype: DatumType | None = None,
                  nothing: bool = False) -> InferenceFact:
        """A sequence or optional fact; ``element`` describes the values it holds (unknown
        when None, unless ``nothing``: it holds nothing yet, of datum type ``dtype``)."""
        if kind not in CONTAINER_KINDS:
            raise TractileError(f"unknown container kind {kind!r}")
        if element is None and not (nothing or dtype is not None):
            element = InferenceFact()
        fact = InferenceFact(element.dtype if element is not None else dtype, ShapeFactoid.closed(()))
        fact.kind = kind
        fact.element = element
        return fact

    @property
    def is_tensor(self) -> bool:
        """False for sequence and optional facts (an unknown wire counts as a tensor)."""
        return self.kind is None

    @property
    def rank(self) -> int | None:
        return self.shape.rank

    def is_complete(self) -> bool:
        """Datum type and shape known; a sequence or optional is complete once its kind is known."""
        if self.kind is not None:
            return True
        return self.dtype is not None and self.shape.is_complete()

    def to_typed(self) -> TypedFact:
        if self.kind is not None:
            return TypedFact.container(self.kind, self.element, self.dtype)
        if not self.is_complete():
            raise AnalysisError(f"fact {self} is not complete")
        konst = sym = None
        if self.value is not None:
            if self.value.dtype == object and is_symbolic_value(self.value):
                sym = self.value
            elif self.value.dtype == object and self.dtype not in (DatumType.STRING, None):
                konst = self.value.astype(self.dtype.np)
            else:
                konst = self.value
        return TypedFact(self.dtype, self.shape.dims, konst, None, sym)

    def __eq__(self, other) -> bool:
        if not isinstance(other, InferenceFact):
            return False
        if self.dtype != other.dtype or self.shape != other.shape:
            return False
        if self.kind != other.kind or self.element != other.element:
            return False
        if (self.value is None) != (other.value is None):
            return False
        return self.value is None or other.value is None or _values_equal(self.value, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        if self.kind is not None:
            return _container_text(self.kind, self.element, self.dtype)
        dims = str(self.shape)
        dtype = "?" if self.dtype is None else str(self.dtype)
        text = f"{dims},{dtype}" if dims else dtype
        if self.value is not None:
            text += " " + _value_summary(self.value)
        return text

    __repr__ = __str__


# unification of the parts of facts (whole facts: fact_unify) ---------------------------------------
def unify_dtype(a: DatumType | None, b: DatumType | None) -> DatumType | None:
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise AnalysisError(f"datum types {a} and {b} conflict")


def unify_dim(a, b):
    """Unify two dims (``None`` = unknown). A concrete dim wins over a symbolic one."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise AnalysisError(f"dimensions {a} and {b} conflict")
    if isinstance(a, TDim) and isinstance(b, TDim):
        diff = a - b
        if isinstance(diff, int):
            raise AnalysisError(f"dimensions {a} and {b} conflict")
        return a
    return a if isinstance(a, int) else b


def unify_shape(a: ShapeFactoid, b: ShapeFactoid) -> ShapeFactoid:
    if a.open and b.open:
        common = min(len(a.dims), len(b.dims))
        dims = [unify_dim(x, y) for x, y in zip(a.dims, b.dims)]
        longer = a.dims if len(a.dims) > len(b.dims) else b.dims
        return ShapeFactoid(tuple(dims) + tuple(longer[common:]), True)
    if not a.open and not b.open and len(a.dims) != len(b.dims):
        raise AnalysisError(f"ranks {len(a.dims)} and {len(b.dims)} conflict")
    closed, other = (a, b) if not a.open else (b, a)
    if len(other.dims) > len(closed.dims):
        raise AnalysisError(f"ranks {len(closed.dims)} and at least {len(other.dims)} conflict")
    dims = list(closed.dims)
    for axis, dim in enumerate(other.dims):
        dims[axis] = unify_dim(dims[axis], dim)
    return ShapeFactoid(tuple(dims), False)
