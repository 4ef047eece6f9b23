"""Resource variables (TFLite's VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) and the
:class:`Program` that owns them.

Resource variables live in a store owned by one run state of a :class:`Program` (a model
as a whole), shared by every body that state runs and found through a context variable
while it runs. CALL_ONCE runs its initialisation body the first time a state reaches it.
``state.reset()`` forgets the variables and the CALL_ONCE marks.

Effects run in the order of the file they come from: each effectful op takes the previous
one's output as a last input (``ordered``), ASSIGN_VARIABLE and CALL_ONCE give an empty
token, and a body keeps its last effect as a hidden output (its ``tflite_outputs`` property
counts the real ones), so plans run every effect, in order.
"""
from __future__ import annotations

import contextvars
import zlib
from dataclasses import dataclass, field

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import QParams, TypedFact
from .base import Op
from .control import Body

#: the resource store of the program state running now
RESOURCES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("tractile_resources", default=None)
#: the fact of ASSIGN_VARIABLE's and CALL_ONCE's ordering token
TOKEN = TypedFact(DatumType.BOOL, (0,))
#: the model property counting a body's own outputs (the others order its effects)
OWN_OUTPUTS = "tflite_outputs"


def real_outputs(model) -> int:
    """How many of a body's outputs are its own (the rest order its effects)."""
    return model.properties.get(OWN_OUTPUTS, len(model.outputs))


def has_effects(model) -> bool:
    """Whether a body keeps an effect as a hidden output."""
    return OWN_OUTPUTS in model.properties


def resource_id(container: str, shared_name: str) -> int:
    """A stable id for a variable (the same names give the same variable across bodies)."""
    return zlib.crc32(f"{container}\0{shared_name}".encode()) & 0x7FFFFFFF


def current_store(what: str) -> dict:
    store = RESOURCES.get()
    if store is None:
        raise RunError(f"{what} uses resource variables outside of a program state")
    return store


def _token() -> np.ndarray:
    return np.zeros(0, dtype=bool)


class _Effect:
    """The run state of an effectful op: its eval, nothing kept (the store holds the variables)."""

    def __init__(self, op):
        self.eval = op.eval

    def reset(self) -> None:
        pass


@dataclass(frozen=True)
class VarHandle(Op):
    """The handle (an int32 id) of the variable named (container, shared_name)."""

    container: str = ""
    shared_name: str = ""

    def output_facts(self, inputs):
        if inputs:
            raise AnalysisError("VarHandle takes no inputs")
        return [TypedFact(DatumType.I32, ())]

    def eval(self, inputs):
        return [np.array(resource_id(self.container, self.shared_name), dtype=np.int32)]


@dataclass(frozen=True)
class ReadVariable(Op):
    """The value of the variable of handle input 0: a ``dtype`` tensor of ``shape`` (quantized
    as ``qparams``)."""

    shape: tuple = ()
    dtype: DatumType = DatumType.F32
    qparams: QParams | None = None
    #: a last input only orders this op after the previous effect
    ordered: bool = False
    is_stateless = False

    def output_facts(self, inputs):
        if len(inputs) != 1 + self.ordered or inputs[0].dtype != DatumType.I32:
            raise AnalysisError("ReadVariable takes a resource handle")
        return [TypedFact(self.dtype, self.shape, qparams=self.qparams)]

    def eval(self, inputs):
        store = current_store("ReadVariable")
        key = int(inputs[0])
        if key not in store:
            raise RunError("ReadVariable: the variable is read before anything was assigned to it")
        value = store[key]
        if value.shape != tuple(self.shape) or value.dtype != self.dtype.np:
            raise RunError(f"ReadVariable: the variable holds {value.dtype}{list(value.shape)}, the model reads "
                           f"{self.dtype}{list(self.shape)}")
        return [value]

    def state(self):
        return _Effect(self)


@dataclass(frozen=True)
class AssignVariable(Op):
    """Store input 1 in the variable of handle input 0 (gives an ordering token)."""

    ordered: bool = False
    is_stateless = False

    def output_facts(self, inputs):
        if len(inputs) != 2 + self.ordered or inputs[0].dtype != DatumType.I32:
            raise AnalysisError("AssignVariable takes a resource handle and a value")
        return [TOKEN]

    def eval(self, inputs):
        store = current_store("AssignVariable")
        value = np.array(inputs[1], copy=True)
        value.flags.writeable = False
        store[int(inputs[0])] = value
        return [_token()]

    def state(self):
        return _Effect(self)


@dataclass(frozen=True, eq=False)
class CallOnce(Op):
    """Run the ``init`` body (no inputs, no own outputs) the first time a program state gets here."""

    init: Body = field(repr=False)
    ordered: bool = False
    is_stateless = False

    def subgraphs(self):
        return {"init": self.init.model()}

    def output_facts(self, inputs):
        if len(inputs) != self.ordered or self.init.input_count or real_outputs(self.init.source):
            raise AnalysisError("CallOnce takes no inputs and an initialisation body without inputs or outputs")
        return [TOKEN]

    def eval(self, inputs):
        store = current_store("CallOnce")
        done = store.setdefault("call_once", set())
        if id(self.init.source) not in done:
            runner = store.get(("runner", id(self.init.source)))
            if runner is None:
                runner = store[("runner", id(self.init.source))] = self.init.runner([])
            runner.run([])
            done.add(id(self.init.source))
        return [_token()]

    def state(self):
        return _Effect(self)


@dataclass(frozen=True, eq=False)
class Program(Op):
    """A whole model that uses resource variables: ``body`` run with a resource store per state."""

    body: Body = field(repr=False)
    is_stateless = False

    def subgraphs(self):
        return {"main": self.body.model()}

    @property
    def nboutputs(self) -> int:
        return real_outputs(self.body.source)

    def output_facts(self, inputs):
        return self.body.output_facts(list(inputs))[:self.nboutputs]

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self):
        return _ProgramState(self)


class _ProgramState:
    def __init__(self, op: Program):
        self.op = op
        self.store: dict = {}
        self.runner = None

    def eval(self, inputs):
        token = RESOURCES.set(self.store)
        try:
            if self.runner is None:
                self.runner = self.op.body.runner(list(inputs))
            return self.runner.run(list(inputs))[:self.op.nboutputs]
        finally:
            RESOURCES.reset(token)

    def reset(self) -> None:
        self.store.clear()
        self.runner = None


#: the ops chained in file order (see the module docstring)
EFFECTS = (ReadVariable, AssignVariable, CallOnce)


def effectful(op) -> bool:
    """Whether ``op`` must run in file order: a resource op, or one whose bodies have effects."""
    if isinstance(op, EFFECTS):
        return True
    return any(has_effects(model) for model in op.subgraphs().values())
