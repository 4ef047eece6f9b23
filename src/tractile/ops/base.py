"""The op protocol: a frozen dataclass of attributes plus optional hooks.

Only :meth:`Op.output_facts` and :meth:`Op.eval` are required. The analyser uses
:meth:`Op.rules` for declarative (two-way) inference and falls back on
``output_facts`` and ``eval`` once the inputs are known.
"""
from __future__ import annotations

import contextvars
import dataclasses
import time
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import AnalysisError, RunError
from ..fact import TypedFact

if TYPE_CHECKING:
    from ..graph import Node, OutletId
    from ..infer.rules import Solver, TensorProxy
    from ..model import TypedModel
    from ..patch import ModelPatch


class Op:
    """Base class of every op. Subclasses are ``@dataclass(frozen=True)``."""

    name: ClassVar[str] = "Op"
    #: ops with memory across runs (Delay, streaming buffers) set this to False
    is_stateless: ClassVar[bool] = True
    #: ops whose eval draws random numbers must never be constant-folded
    is_random: ClassVar[bool] = False
    #: inputs that are parameters (kernels, biases...): constant folding may build large
    #: constants for them, since folding enables rewrites and saves recomputing them each run
    weight_inputs: ClassVar[tuple[int, ...]] = ()
    #: each output element depends only on the input elements at its own (broadcast) position:
    #: a declaration streaming relies on (the op then streams along any axis); never inherited
    #: by accident, since a base class (UnaryOp, BinaryOp) leaves it False
    elementwise: ClassVar[bool] = False
    #: once every input fact is complete, ``output_facts`` checks and infers all the rules would
    #: (element-wise families): the analyser then calls it without running the rules solver, and
    #: runs the rules only when it raises (for their message). A subclass that overrides
    #: ``rules`` or ``output_facts`` does not inherit it.
    rules_in_output_facts: ClassVar[bool] = False
    #: typing replaces an op whose outputs analysis computed by constants, unless this is False:
    #: DequantizeLinear stays, so that the declutter passes see quantized weights (``passes.qdq``)
    #: and fold it themselves when nothing fuses it
    folds_when_typing: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__
        if "rules_in_output_facts" not in cls.__dict__ and ("rules" in cls.__dict__ or "output_facts" in cls.__dict__):
            cls.rules_in_output_facts = False

    # required ---------------------------------------------------------------------------
    def output_facts(self, inputs: list[TypedFact]) -> list[TypedFact]:
        raise NotImplementedError(f"{self.name}.output_facts")

    def eval(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError(f"{self.name}.eval")

    # optional ---------------------------------------------------------------------------
    @property
    def nboutputs(self) -> int:
        return 1

    def rules(self, s: Solver, inputs: list[TensorProxy], outputs: list[TensorProxy]) -> None:
        """Declare constraints between input and output facts (default: none)."""

    def declutter(self, model: TypedModel, node: Node) -> ModelPatch | None:
        return None

    def optimize(self, model: TypedModel, node: Node) -> ModelPatch | None:
        return None

    def cost(self, inputs: list[TypedFact]) -> dict[str, Any]:
        """FLOPs (``flops``) or other costs for profiles; empty when the op cannot say."""
        return {}

    def prepared(self, inputs: list[TypedFact]) -> Op:
        """This op ready to evaluate values of these input facts. Ops whose arithmetic depends
        on the facts (quantized ops: multipliers, shifts and zero points from the inputs'
        ``qparams``; constant weights packed once) return a copy carrying what they derived
        (see ``ops.quantized.common``); the default is the op itself. Plans, the constant
        folder and the compiler call it once per node."""
        return self

    def wire_typed(self, model: TypedModel, name: str, inputs: list[OutletId]) -> list[OutletId]:
        """Wire this op into a typed model (expansions override it to wire several ops)."""
        return model.wire_node(name, self, inputs)

    def state(self):
        """Per-run state for stateful ops (None for stateless ones)."""
        return None

    def subgraphs(self) -> dict[str, Any]:
        """Named body graphs held by control-flow ops."""
        return {}

    def attributes(self) -> dict[str, Any]:
        """The attributes to show in dumps: those not at their default, large arrays summarised."""
        if not dataclasses.is_dataclass(self):
            return {}
        shown = {}
        for field in dataclasses.fields(self):
            if not field.repr:
                continue
            value = getattr(self, field.name)
            if field.default is not dataclasses.MISSING and _same_value(value, field.default):
                continue
            shown[field.name] = show_value(value)
        return shown

    def __str__(self) -> str:
        attrs = ", ".join(f"{k}={v}" for k, v in self.attributes().items())
        return f"{self.name}({attrs})" if attrs else self.name


def expect_inputs(inputs: list, count: int | tuple[int, int], op: Op) -> None:
    """Raise an AnalysisError unless the number of inputs is ``count`` (or within a range)."""
    low, high = (count, count) if isinstance(count, int) else count
    if not low <= len(inputs) <= high:
        want = str(low) if low == high else f"{low} to {high}"
        raise AnalysisError(f"{op.name} takes {want} inputs, got {len(inputs)}")


class Limits:
    """Run-time resource limits; change them with :func:`tractile.set_limits`."""

    max_tensor_bytes: int = 8 << 30
    #: about a second of a trivial loop body: an endless loop ends soon; real loops rarely need more
    max_loop_iterations: int = 1 << 18
    #: a deadline for one run, checked at each loop iteration (None: no deadline)
    max_run_seconds: float | None = None


#: true while a state runs with fact checks, so that subgraph bodies (run by control-flow ops)
#: check their values too
CHECKING_FACTS: contextvars.ContextVar[bool] = contextvars.ContextVar("tractile_check_facts", default=False)

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("tractile_deadline", default=None)


def start_deadline():
    """Start the run's deadline (when :attr:`Limits.max_run_seconds` is set and no outer run has
    one); returns a token for :func:`end_deadline`, or None."""
    if Limits.max_run_seconds is None or _DEADLINE.get() is not None:
        return None
    return _DEADLINE.set(time.monotonic() + Limits.max_run_seconds)


def end_deadline(token) -> None:
    if token is not None:
        _DEADLINE.reset(token)


def check_deadline(what: str) -> None:
    """Raise a RunError when the current run is past its deadline."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise RunError(f"{what}: the run took longer than {Limits.max_run_seconds} s, its deadline "
                       "(tractile.set_limits(max_run_seconds=...))")


def check_alloc(shape, dtype, what: str) -> None:
    """Raise a RunError before allocating a tensor beyond :attr:`Limits.max_tensor_bytes`."""
    count = 1
    for dim in shape:
        if dim < 0:
            raise RunError(f"{what}: negative dimension in shape {tuple(shape)}")
        count *= int(dim)
    size = count * np.dtype(dtype).itemsize
    if size > Limits.max_tensor_bytes:
        raise RunError(
            f"{what}: a tensor of shape {tuple(shape)} ({size / 2**30:.1f} GiB) is over the limit of "
            f"{Limits.max_tensor_bytes / 2**30:.1f} GiB (raise it with tractile.set_limits)"
        )


def _same_value(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def show_value(value) -> Any:
    """A short, readable form of an attribute value."""
    if isinstance(value, np.ndarray):
        if value.size <= 8:
            return value.tolist()
        return f"array{list(value.shape)} {value.dtype}"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [show_value(v) for v in value]
    return str(value)
