"""The interface an emitter sees: one node's tensors, and ways to add C for it.

Emitters pre-process constants on the host (with the same Python functions the
interpreter uses), declare them with :meth:`Emit.constant`, and add statements, usually
one kernel call, with :meth:`Emit.call`. Pointers are named by their tensors' ``var``:
the memory plan decides later where each one points.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..datum import DatumType
from ..fact import TypedFact
from ..graph import Node
from .ctext import identifier, literal, needs_math
from .program import ARENA, Alias, CTensor, NodeCode, Overlap, StateField, c_type
from .registry import Unsupported
from .target import Target

if TYPE_CHECKING:
    from .lower import Lowering


def call_text(function: str, rendered: Sequence[str]) -> str:
    """``function(rendered...);`` wrapped in lines of about 108 characters."""
    lines, current = [], f"{function}("
    for index, item in enumerate(rendered):
        piece = item + (");" if index == len(rendered) - 1 else ", ")
        if len(current) + len(piece) > 108 and current.strip() and not current.endswith("("):
            lines.append(current.rstrip())
            current = "    "
        current += piece
    if not rendered:
        current += ");"
    lines.append(current)
    return "\n".join(lines)


class Emit:
    """One node being lowered."""

    def __init__(self, lowering: Lowering, node: Node, code: NodeCode):
        self._lowering = lowering
        self.node = node
        #: the node's op prepared for its input facts (quantized ops carry their recipe)
        self.op = node.op.prepared([lowering.model.outlet_fact(o) for o in node.inputs])
        self.code = code
        self.target: Target = lowering.target
        self.inputs: list[CTensor] = [lowering.tensor_of(o) for o in node.inputs]
        self.outputs: list[CTensor] = code.outputs

    @property
    def lowering(self) -> Lowering:
        """The lowering this node is part of (control-flow emitters lower their bodies into it)."""
        return self._lowering

    # reading the node ------------------------------------------------------------------------
    def input(self, index: int) -> CTensor:
        return self.inputs[index]

    def output(self, index: int = 0) -> CTensor:
        return self.outputs[index]

    def input_fact(self, index: int) -> TypedFact:
        return self.inputs[index].fact

    def output_fact(self, index: int = 0) -> TypedFact:
        return self.outputs[index].fact

    def const_value(self, index: int) -> np.ndarray | None:
        """Input ``index``'s value when it is a constant, else None."""
        return self.inputs[index].value

    def const_input(self, index: int, what: str = "") -> np.ndarray:
        """Input ``index``'s value, which must be a constant (else the node is unsupported)."""
        value = self.inputs[index].value
        if value is None:
            raise Unsupported(f"{what or f'input {index}'} must be a constant to be compiled")
        return value

    # adding C -------------------------------------------------------------------------------
    def use(self, header: str) -> None:
        """Include a kernel header (``fully_connected.h``) in the generated source."""
        if header not in self._lowering.program.headers:
            self._lowering.program.headers.append(header)

    def uses_math(self) -> None:
        self._lowering.program.uses_math = True

    def uses_threads(self) -> None:
        """The node's kernel takes the context's threads (``host_gemm.THREADS``, tl_threads.h)."""
        self._lowering.program.threads = True

    def constant(self, role: str, values: np.ndarray, dtype: DatumType | None = None) -> str:
        """A ``static const`` array holding ``values`` (as ``dtype``, default: theirs); its C name.

        Identical arrays are stored once.
        """
        values = np.ascontiguousarray(values)
        dtype = dtype or DatumType.from_numpy(values.dtype)
        c_type(dtype)
        if needs_math(values):
            self.uses_math()
        self.code.constants_bytes += values.size * np.dtype(dtype.np).itemsize
        return self._lowering.add_constant(f"{identifier(self.node.name)}_{role}", values.astype(dtype.np, copy=False),
                                           dtype)

    def definition(self, role: str, text: Callable[[str], str]) -> str:
        """A file-scope definition of this node (a function, a table of functions), ``text``
        given its unique C name; that name."""
        name = self._lowering.node_var(self.node.name, role)
        self._lowering.program.definitions.append(text(name))
        return name

    def state(self, role: str, dtype: DatumType, count: int, initial: np.ndarray | None = None) -> str:
        """A context member kept across invocations (zeros, or ``initial``, after reset); its C expression."""
        var = self._lowering.node_var(self.node.name, role)
        if initial is not None and needs_math(np.asarray(initial)):
            self.uses_math()
        initial_var = "" if initial is None else self._lowering.node_var(self.node.name, f"{role}_initial")
        self._lowering.program.state.append(StateField(var, dtype, int(count), initial, initial_var))
        return f"ctx->{var}"

    def scratch(self, role: str, dtype: DatumType, count: int) -> str:
        """Arena memory for this node only (planned like a tensor living one step); its pointer."""
        var = self._lowering.node_var(self.node.name, role)
        tensor = CTensor(var, dtype, (int(count),), ARENA)
        tensor.used = True
        self._lowering.register_scratch(tensor)
        self.code.scratch.append(tensor)
        return var

    def line(self, text: str) -> None:
        """Add one C statement (or several lines) to the node's code."""
        self.code.lines.extend(text.splitlines())

    def call(self, function: str, *args) -> None:
        """Add ``function(args...);``; tensors become their pointers, numbers C literals."""
        if not self.code.kernel:
            self.code.kernel = function
        self.line(call_text(function, [self.arg(a) for a in args]))

    def arg(self, value) -> str:
        if isinstance(value, CTensor):
            value.used = True
            return value.var
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, (int, np.integer)):
            return literal(int(value), DatumType.I32 if -(1 << 31) <= int(value) < (1 << 31) else DatumType.I64)
        if isinstance(value, (float, np.floating)):
            if not np.isfinite(value):
                self.uses_math()
            return literal(float(value), DatumType.F32 if isinstance(value, np.float32) else DatumType.F64)
        return str(value)

    def failure(self, message: str) -> int:
        """A status for ``invoke`` to return when this node finds bad run-time data (an index out
        of range...); the host raises a RunError with ``message`` naming the node."""
        errors = self._lowering.program.errors
        status = len(errors) + 1
        errors[status] = f'node #{self.node.id} "{self.node.name}" ({self.op.name}): {message}'
        return status

    def set_kernel(self, name: str) -> None:
        """What the report names as this node's kernel (default: the first function called)."""
        self.code.kernel = name

    # memory hints ----------------------------------------------------------------------------
    def alias(self, output: int = 0, input: int = 0) -> None:
        """Output ``output`` is input ``input``'s bytes with another shape (no code; a copy if
        the planner cannot share them)."""
        target, source = self.outputs[output], self.inputs[input]
        if target.nbytes != source.nbytes:
            raise Unsupported(f"output {output} ({target.nbytes} B) cannot alias input {input} ({source.nbytes} B)")
        self.code.aliases.append(Alias(target, source))
        if not self.code.kernel:
            self.code.kernel = "(alias)"

    def overlap(self, output: int = 0, input: int = 0, lag: int = 0) -> None:
        """The code is correct when output ``output`` starts at least ``lag`` bytes before input
        ``input`` (0: in place), so the planner may place them so when the input dies here."""
        self.code.overlaps.append(Overlap(self.outputs[output], self.inputs[input], int(lag)))

    def pointer_args(self, tensors: Sequence[CTensor]) -> list[str]:
        return [t.var for t in tensors]
