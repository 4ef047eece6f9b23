"""What lowering builds: tensors with their storage, constants, state, and one block of
statements per node. Rendering (:mod:`.render`) turns it into C text once memory is planned.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..datum import DatumType
from ..errors import UnsupportedOpError
from ..fact import QParams, TypedFact

#: the C element type of each datum type the compiler handles
C_TYPES: dict[DatumType, str] = {
    DatumType.F32: "float", DatumType.F64: "double",
    DatumType.I8: "int8_t", DatumType.U8: "uint8_t", DatumType.I16: "int16_t", DatumType.U16: "uint16_t",
    DatumType.I32: "int32_t", DatumType.U32: "uint32_t", DatumType.I64: "int64_t", DatumType.U64: "uint64_t",
    DatumType.BOOL: "uint8_t",
}

#: where a tensor's bytes live
INPUT, OUTPUT, CONST, ARENA, STATE = "input", "output", "const", "arena", "state"


def c_type(dtype: DatumType) -> str:
    """The C element type of ``dtype``, or an UnsupportedOpError naming it."""
    try:
        return C_TYPES[dtype]
    except KeyError:
        raise UnsupportedOpError(f"the compiler has no C type for datum type {dtype}") from None


@dataclass(eq=False)
class CTensor:
    """A value of the compiled model: a wire, a scratch buffer or a state buffer.

    ``var`` is the C identifier of its pointer in the generated ``invoke`` (or of the
    array, for constants and state). ``storage`` says where its bytes live; arena
    tensors get their ``offset`` from the memory planner.
    """

    var: str
    dtype: DatumType
    shape: tuple[int, ...]
    storage: str
    qparams: QParams | None = None
    value: np.ndarray | None = None
    first: int = -1
    last: int = -1
    offset: int | None = None
    port: int | None = None
    used: bool = False
    home: CTensor | None = None
    param: str | None = None
    #: (byte offset, bytes spanned) when its producer writes it straight into the channels of the
    #: Concat that reads it (a view of that output: :class:`NodeCode`'s ``views``), else None
    view: tuple[int, int] | None = None
    #: the other input of the Add that alone reads this tensor, when its producer already added it
    #: (the Add is then an alias of this tensor: :func:`.ops.host_gemm.residual_add`), else None
    residual: CTensor | None = None

    @property
    def arena_input(self) -> bool:
        """A model input planned in the arena (``param`` names invoke's parameter for it)."""
        return self.storage == ARENA and self.param is not None

    @property
    def ctype(self) -> str:
        return c_type(self.dtype)

    @property
    def count(self) -> int:
        total = 1
        for dim in self.shape:
            total *= dim
        return total

    @property
    def nbytes(self) -> int:
        return self.count * np.dtype(self.dtype.np).itemsize

    @property
    def writable(self) -> bool:
        return self.storage not in (INPUT, CONST)

    @property
    def fact(self) -> TypedFact:
        return TypedFact(self.dtype, self.shape, self.value, self.qparams)


@dataclass(eq=False)
class Alias:
    """``target`` is ``source``'s bytes seen with another shape (Reshape and kin).

    Rendered as nothing when the planner gives both one storage, else as a copy.
    """

    target: CTensor
    source: CTensor
    shared: bool = False


@dataclass(eq=False)
class Overlap:
    """An op that may write ``output`` over ``input`` when ``input`` dies at the op:
    the output then starts ``lag`` bytes before the input (0: exactly in place)."""

    output: CTensor
    input: CTensor
    lag: int = 0


@dataclass(eq=False)
class NodeCode:
    """What one node lowers to: statements, the kernels it calls, its memory hints."""

    node_id: int
    name: str
    op: str
    comment: str
    lines: list[str] = field(default_factory=list)
    inputs: list[CTensor] = field(default_factory=list)
    kernel: str = ""
    constants_bytes: int = 0
    aliases: list[Alias] = field(default_factory=list)
    #: inputs already written in place into the output (target: the input, source: the output)
    views: list[Alias] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)
    scratch: list[CTensor] = field(default_factory=list)
    outputs: list[CTensor] = field(default_factory=list)
    members: tuple[int, ...] = ()
    #: how many C blocks (branches, loops) the code sits in, for indentation
    depth: int = 0


@dataclass(eq=False)
class StateField:
    """A member of the context that survives invocations (recurrent state, SVDF memory)."""

    var: str
    dtype: DatumType
    count: int
    initial: np.ndarray | None = None
    #: the C name of the constant array ``initial`` is copied from by reset
    initial_var: str = ""

    @property
    def nbytes(self) -> int:
        return self.count * np.dtype(self.dtype.np).itemsize


@dataclass(eq=False)
class Program:
    """The whole lowered model, ready for memory planning and rendering."""

    name: str
    inputs: list[CTensor] = field(default_factory=list)
    outputs: list[CTensor] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    tensors: list[CTensor] = field(default_factory=list)
    constants: list[tuple[CTensor, np.ndarray]] = field(default_factory=list)
    state: list[StateField] = field(default_factory=list)
    nodes: list[NodeCode] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    uses_math: bool = False
    #: file-scope definitions of the nodes (functions, tables of functions), after the constants
    definitions: list[str] = field(default_factory=list)
    output_copies: list[tuple[CTensor, CTensor]] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    profile: bool = False
    macros: dict[str, tuple[int, str]] = field(default_factory=dict)
    chains: list = field(default_factory=list)
    regions: list = field(default_factory=list)
    inputs_in_arena: bool = False
    #: kernels split rows across the context's threads (host GEMMs): the context has a thread count
    threads: bool = False
    #: what the resource-variable emitters share across bodies (variables, handles, CALL_ONCE flags)
    resources: dict = field(default_factory=dict)

    @property
    def arena_tensors(self) -> list[CTensor]:
        return [t for t in self.tensors if t.storage == ARENA]

    @property
    def constants_bytes(self) -> int:
        return sum(tensor.nbytes for tensor, _ in self.constants)

    @property
    def state_bytes(self) -> int:
        return sum(field.nbytes for field in self.state)
