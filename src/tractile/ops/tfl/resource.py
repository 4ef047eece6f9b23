"""TFLite resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE, and the program scope.

Resource variables live in a store owned by one run state of a :class:`Program` (the
model as a whole), shared by every subgraph that state runs and found through a context
variable while it runs. CALL_ONCE runs its initialisation subgraph the first time a state
reaches it. ``state.reset()`` forgets the variables and the CALL_ONCE marks.

TFLite runs operators in file order, and ASSIGN_VARIABLE has no outputs. Here the
effectful ops are chained in file order: each takes the previous one's output as a last
``after`` input (``ordered``), ASSIGN_VARIABLE and CALL_ONCE give an empty token, and a
subgraph keeps its last effect as a hidden output (its ``tflite_outputs`` property counts
the real ones), so plans run every effect, in order.
"""
from __future__ import annotations

import contextvars
import zlib
from dataclasses import dataclass, field

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ...fact import TypedFact
from .common import TflOp

#: the resource store of the program state running now
RESOURCES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("tractile_tflite_resources", default=None)
#: the fact of ASSIGN_VARIABLE's and CALL_ONCE's ordering token
TOKEN = TypedFact(DatumType.BOOL, (0,))


def real_outputs(model) -> int:
    """How many of a subgraph's outputs are its own (the rest order its effects)."""
    return model.properties.get("tflite_outputs", len(model.outputs))


def resource_id(container: str, shared_name: str) -> int:
    """A stable id for a variable (the same names give the same variable across subgraphs)."""
    return zlib.crc32(f"{container}\0{shared_name}".encode()) & 0x7FFFFFFF


def current_store(what: str) -> dict:
    store = RESOURCES.get()
    if store is None:
        raise RunError(f"{what} uses resource variables outside of a TFLite program state")
    return store


class _Effect:
    """The run state of an effectful op: its eval, nothing kept (the store holds the variables)."""

    def __init__(self, op):
        self.eval = op.eval

    def reset(self) -> None:
        pass


@dataclass(frozen=True)
class VarHandle(TflOp):
    """VAR_HANDLE: the handle (an int32 id) of the variable named (container, shared_name)."""

    container: str = ""
    shared_name: str = ""

    def output_facts(self, inputs):
        if inputs:
            raise AnalysisError("VAR_HANDLE takes no inputs")
        return [TypedFact(DatumType.I32, ())]

    def eval(self, inputs):
        return [np.array(resource_id(self.container, self.shared_name), dtype=np.int32)]


@dataclass(frozen=True)
class ReadVariable(TflOp):
    """READ_VARIABLE: the value of the variable (of ``shape``, datum type ``out_dtypes[0]``)."""

    shape: tuple = ()
    ordered: bool = False
    is_stateless = False

    def output_facts(self, inputs):
        if len(inputs) != 1 + self.ordered or inputs[0].dtype != DatumType.I32:
            raise AnalysisError("READ_VARIABLE takes a resource handle")
        if not self.out_dtypes:
            raise AnalysisError("READ_VARIABLE needs its output datum type")
        return [self.fact(0, self.out_dtypes[0], self.shape)]

    def eval(self, inputs):
        store = current_store("READ_VARIABLE")
        key = int(inputs[0])
        if key not in store:
            raise RunError("READ_VARIABLE: the variable is read before anything was assigned to it")
        value = store[key]
        if value.shape != tuple(self.shape) or value.dtype != self.out_dtypes[0].np:
            raise RunError(f"READ_VARIABLE: the variable holds {value.dtype}{list(value.shape)}, the model reads "
                           f"{self.out_dtypes[0]}{list(self.shape)}")
        return [value]

    def state(self):
        return _Effect(self)


@dataclass(frozen=True)
class AssignVariable(TflOp):
    """ASSIGN_VARIABLE: store input 1 in the variable of handle input 0 (gives an ordering token)."""

    ordered: bool = False
    is_stateless = False

    def output_facts(self, inputs):
        if len(inputs) != 2 + self.ordered or inputs[0].dtype != DatumType.I32:
            raise AnalysisError("ASSIGN_VARIABLE takes a resource handle and a value")
        return [TOKEN]

    def eval(self, inputs):
        store = current_store("ASSIGN_VARIABLE")
        value = np.array(inputs[1], copy=True)
        value.flags.writeable = False
        store[int(inputs[0])] = value
        return [np.zeros(0, dtype=bool)]

    def state(self):
        return _Effect(self)


@dataclass(frozen=True, eq=False)
class CallOnce(TflOp):
    """CALL_ONCE: run the ``init`` subgraph the first time a program state gets here."""

    init: object = field(default=None, repr=False)
    ordered: bool = False
    is_stateless = False

    def subgraphs(self):
        return {"init": self.init}

    def output_facts(self, inputs):
        if len(inputs) != self.ordered or self.init is None or self.init.inputs or real_outputs(self.init):
            raise AnalysisError("CALL_ONCE takes no inputs and an initialisation subgraph without inputs or outputs")
        return [TOKEN]

    def eval(self, inputs):
        from .control import runner_for

        store = current_store("CALL_ONCE")
        done = store.setdefault("call_once", set())
        if id(self) not in done:
            runner_for(store, self.init, [], "the CALL_ONCE subgraph").run([])
            done.add(id(self))
        return [np.zeros(0, dtype=bool)]

    def state(self):
        return _Effect(self)


@dataclass(frozen=True, eq=False)
class Program(TflOp):
    """A whole TFLite model that uses resource variables: ``body`` (subgraph 0) run with a
    resource store per state."""

    body: object = field(default=None, repr=False)
    is_stateless = False

    def subgraphs(self):
        return {"main": self.body}

    @property
    def nboutputs(self) -> int:
        return real_outputs(self.body)

    def output_facts(self, inputs):
        from .control import subgraph_outputs

        return subgraph_outputs(self.body, list(inputs), "the TFLite main subgraph")

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self):
        return _ProgramState(self)


class _ProgramState:
    def __init__(self, op: Program):
        self.op = op
        self.store: dict = {}

    def eval(self, inputs):
        from .control import runner_for

        token = RESOURCES.set(self.store)
        try:
            runner = runner_for(self.store, self.op.body, inputs, "the TFLite main subgraph")
            return runner.run(list(inputs))
        finally:
            RESOURCES.reset(token)

    def reset(self) -> None:
        self.store.clear()


#: the ops chained in file order (see the module docstring)
EFFECTS = (ReadVariable, AssignVariable, CallOnce)
