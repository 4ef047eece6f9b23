"""Lowering: walk a typed model's plan, give every wire a C tensor, call each node's emitter.

Nothing is written here: every node the compiler cannot lower is collected, and one
:class:`~tractile.errors.UnsupportedOpError` lists them all before any C exists.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..datum import DatumType
from ..errors import TractileError, UnsupportedOpError
from ..fact import TypedFact
from ..graph import Node, OutletId
from ..ops.io import Const, Source
from .bands import Chain, lower_chain
from .ctext import Names, comment_text, identifier
from .emit import Emit
from .program import ARENA, CONST, INPUT, OUTPUT, CTensor, NodeCode, Program, c_type
from .registry import Unsupported, find_emitter
from .rows import Region
from .rows_lower import lower_region
from .target import Target

#: identifiers the generated code uses for itself
RESERVED = ("ctx", "arena", "memcpy", "memset", "size_t")
#: what the generated header declares after the model's name (``model_invoke``...)
DECLARED = ("ctx", "init", "reset", "invoke", "context_bytes", "profile_offset", "set_threads",
            "release")


def concrete_shape(fact: TypedFact, where: str) -> tuple[int, ...]:
    shape = fact.concrete_shape()
    if shape is None and _empty(fact):  # no bytes whatever its symbols (a loop's effect tokens)
        return tuple(d if isinstance(d, int) else 0 for d in fact.shape)
    if shape is None:
        if not fact.is_tensor:
            raise UnsupportedOpError(f"{where} holds a {fact.kind}, which compiled code cannot represent")
        raise TractileError(f"{where} has a symbolic shape ({fact})")
    return tuple(int(d) for d in shape)


def _empty(fact: TypedFact) -> bool:
    return fact.is_tensor and fact.has_rank and any(isinstance(d, int) and d == 0 for d in fact.shape)


def unbound_symbols(model) -> list[str]:
    """The symbols left in the facts of the wires a compiled model would compute (but in empty ones)."""
    symbols: set[str] = set()
    for node_id in model.eval_order(model.outputs):
        for outlet in model.nodes[node_id].outputs:
            if outlet.fact.is_tensor and not _empty(outlet.fact):
                symbols |= outlet.fact.symbols()
    return sorted(symbols)


def run_time_shapes(model) -> list[str]:
    """The nodes whose output shapes depend on run-time values although their inputs' do not
    (an If whose branches give different shapes, a loop whose carried values grow)."""
    found = []
    for node_id in model.eval_order(model.outputs):
        node = model.nodes[node_id]
        made = {s for o in node.outputs if o.fact.is_tensor and not _empty(o.fact) for s in o.fact.symbols()}
        given = {s for i in node.inputs for s in model.outlet_fact(i).symbols() if model.outlet_fact(i).is_tensor}
        if made - given and node.op.subgraphs():
            found.append(f'node #{node.id} "{node.name}" ({node.op.name}) gives '
                         + ", ".join(str(o.fact) for o in node.outputs))
    return found


class Lowering:
    """Builds the :class:`Program` of one typed model for one target."""

    def __init__(self, model, name: str, target: Target, chains: Sequence[Chain] = (), inputs_in_arena: bool = False,
                 regions: Sequence[Region] = (), order: Sequence[int] = ()):
        self.model = model
        self.order = list(order)
        parts: list[Chain | Region] = [*chains, *regions]
        self.chains = {part.nodes[0]: part for part in parts}
        self._banded = {node for part in parts for node in part.nodes}
        self.target = target
        self.names = Names((*RESERVED, name, *(f"{name}_{suffix}" for suffix in DECLARED)))
        self.program = Program(name, chains=list(chains), regions=list(regions), inputs_in_arena=inputs_in_arena)
        self.tensors: dict[OutletId, CTensor] = {}
        self._constants: dict[tuple, CTensor] = {}
        self._step = 0
        #: node outputs written straight into tensors made elsewhere (a body's outputs: :mod:`.bodies`)
        self.bound: dict[OutletId, CTensor] = {}

    # called by Emit -------------------------------------------------------------------------
    def tensor_of(self, outlet: OutletId) -> CTensor:
        return self.tensors[outlet]

    def add_constant(self, name: str, values: np.ndarray, dtype: DatumType) -> str:
        key = (dtype, values.shape, hashlib.sha1(values.tobytes()).hexdigest())
        found = self._constants.get(key)
        if found is None:
            found = CTensor(self.names.unique(name, 64), dtype, values.shape, CONST, value=values)
            self._constants[key] = found
            self.program.constants.append((found, values))
        found.used = True
        return found.var

    def node_var(self, node_name: str, role: str) -> str:
        """A unique C name for something of a node (``dense_1_MatMul_weights``)."""
        return self.names.unique(f"{identifier(node_name)}_{role}", 64)

    def register_scratch(self, tensor: CTensor) -> None:
        tensor.first = tensor.last = self._step
        self.program.tensors.append(tensor)

    # the walk ---------------------------------------------------------------------------------
    def run(self) -> Program:
        model, program = self.model, self.program
        symbols = unbound_symbols(model)
        varying = run_time_shapes(model)
        if varying:
            raise UnsupportedOpError("compiled code needs shapes known before it runs; the shapes of "
                                     + "; ".join(varying) + " depend on the data (branches of different shapes, "
                                     "or loop-carried values that change shape)")
        if symbols:
            inputs = ", ".join(f'"{name}": {fact}' for name, fact in zip(model.input_names(), model.input_facts))
            raise TractileError(
                f"cannot compile: symbol{'s' if len(symbols) > 1 else ''} {', '.join(symbols)} "
                f"{'have' if len(symbols) > 1 else 'has'} no value; give concrete input facts "
                f"(inputs: {inputs}), e.g. model.compile(inputs=[...]) or -i on the command line")
        order = self.order or model.eval_order(model.outputs)
        self._make_io_tensors(order)
        failures: list[str] = []
        for node_id in order:
            node = model.nodes[node_id]
            if isinstance(node.op, (Source, Const)) or (node_id in self._banded and node_id not in self.chains):
                continue
            try:
                if node_id in self.chains:
                    schedule = self.chains[node_id]
                    lowered = lower_region(self, schedule) if isinstance(schedule, Region) else \
                        lower_chain(self, schedule)
                    self.program.nodes.append(lowered)
                    continue
                self._lower_node(node)
            except Unsupported as why:
                failures.append(f'node #{node.id} "{node.name}" ({node.op.name}): {why}')
            except UnsupportedOpError as why:
                failures.append(f'node #{node.id} "{node.name}" ({node.op.name}): {why}')
        if failures:
            raise UnsupportedOpError(
                f"{len(failures)} node{'s' if len(failures) > 1 else ''} cannot be compiled to C:\n  "
                + "\n  ".join(failures))
        self._lifetimes()
        self._output_copies()
        return program

    def _make_io_tensors(self, order: list[int]) -> None:
        model, program = self.model, self.program
        for port, outlet in enumerate(model.inputs):
            name = model.input_names()[port]
            fact = model.outlet_fact(outlet)
            tensor = CTensor(self.names.unique(name), fact.dtype, concrete_shape(fact, f'input "{name}"'), INPUT,
                             fact.qparams, port=port)
            if program.inputs_in_arena:
                tensor.storage, tensor.used = ARENA, True
                tensor.param = self.names.unique(f"{tensor.var}_buffer")
            c_type(fact.dtype)
            self.tensors[outlet] = tensor
            program.inputs.append(tensor)
            program.input_names.append(name)
            program.tensors.append(tensor)
        output_ports: dict[OutletId, int] = {}
        for port, outlet in enumerate(model.outputs):
            output_ports.setdefault(outlet, port)
        self._output_ports: dict[OutletId, int] = output_ports
        output_names = [model.outlet_label(o) for o in model.outputs]
        program.output_names = output_names
        self._vars: dict[OutletId, str] = {}
        for node_id in order:
            node = model.nodes[node_id]
            if isinstance(node.op, (Source, Const)):
                continue
            for slot in range(len(node.outputs)):
                position = output_ports.get(OutletId(node_id, slot))
                if position is not None:
                    label = output_names[position]
                else:
                    label = node.name if len(node.outputs) == 1 else f"{node.name}_{slot}"
                self._vars[OutletId(node_id, slot)] = self.names.unique(label)
        for node_id in order:
            node = model.nodes[node_id]
            if isinstance(node.op, Const):
                outlet = OutletId(node_id, 0)
                fact = model.outlet_fact(outlet)
                value = np.asarray(node.op.value)
                tensor = CTensor(self.names.unique(node.name), fact.dtype, concrete_shape(fact, node.name), CONST,
                                 fact.qparams, value=value)
                self.tensors[outlet] = tensor
                program.tensors.append(tensor)

    def node_outputs(self, node: Node) -> list[CTensor]:
        """The C tensors of ``node``'s outputs (arena, or the model's output buffers)."""
        outputs = []
        for slot, outlet in enumerate(node.outputs):
            bound = self.bound.get(OutletId(node.id, slot))
            if bound is not None:
                outputs.append(bound)
                self.tensors[OutletId(node.id, slot)] = bound
                continue
            where = f'output {slot} of node "{node.name}"'
            shape = concrete_shape(outlet.fact, where)
            port = self._output_ports.get(OutletId(node.id, slot))
            storage = ARENA if port is None else OUTPUT
            tensor = CTensor(self._vars[OutletId(node.id, slot)], outlet.fact.dtype, shape, storage,
                             outlet.fact.qparams, port=port)
            outputs.append(tensor)
            self.tensors[OutletId(node.id, slot)] = tensor
        return outputs

    def _lower_node(self, node: Node) -> None:
        outputs = self.node_outputs(node)
        emitter = find_emitter(node.op)
        if emitter is None:
            raise Unsupported(f"the compiler has no C lowering for {node.op.name}")
        for tensor in outputs:
            c_type(tensor.dtype)
        facts_in = "; ".join(str(self.model.outlet_fact(o)) for o in node.inputs)
        facts_out = "; ".join(str(o.fact) for o in node.outputs)
        comment = comment_text(f'node #{node.id} "{node.name}" ({node.op.name})') + "\n" + \
            comment_text(f"{facts_in} -> {facts_out}")
        code = NodeCode(node.id, node.name, node.op.name, comment, outputs=outputs)
        code.inputs = [self.tensors[o] for o in node.inputs]
        self._step = len(self.program.nodes)
        emitter(Emit(self, node, code))
        bound = set(map(id, self.bound.values()))
        self.program.tensors.extend(t for t in outputs if id(t) not in bound)
        self.program.nodes.append(code)

    def _lifetimes(self) -> None:
        for step, code in enumerate(self.program.nodes):
            for tensor in code.outputs:
                if tensor.first < 0:
                    tensor.first = tensor.last = step
            for tensor in code.inputs:
                tensor.last = max(tensor.last, step)
        end = len(self.program.nodes)
        for tensor in self.program.tensors:
            if tensor.storage in (INPUT, CONST, OUTPUT):
                tensor.first, tensor.last = -1, end
            elif tensor.arena_input:  # copied in (or written by the caller) before the first node
                tensor.first, tensor.last = 0, max(tensor.last, 0)

    def _output_copies(self) -> None:
        """Outputs that are inputs, constants or another output's value: copied at the end."""
        model, program = self.model, self.program
        for port, outlet in enumerate(model.outputs):
            tensor = self.tensors[outlet]
            if tensor.storage == OUTPUT and tensor.port == port:
                program.outputs.append(tensor)
                continue
            copy = CTensor(self.names.unique(program.output_names[port]), tensor.dtype, tensor.shape, OUTPUT,
                           tensor.qparams, port=port, used=True)
            copy.first, copy.last = -1, len(program.nodes)
            tensor.used = True
            if tensor.arena_input:
                tensor.last = len(program.nodes)
            program.outputs.append(copy)
            program.tensors.append(copy)
            program.output_copies.append((copy, tensor))


def lower(model, name: str, target: Target, chains: Sequence[Chain] = (), inputs_in_arena: bool = False,
          regions: Sequence[Region] = (), order: Sequence[int] = ()) -> Program:
    """The :class:`Program` of ``model`` (optimized, concrete shapes) for ``target``, with the
    ``chains`` of layers computed in bands of rows (:mod:`.bands`) and the ``regions`` by rows
    with line buffers (:mod:`.rows`); ``inputs_in_arena`` plans the model's inputs in the arena
    like intermediate values; ``order`` is an evaluation order of the nodes to run the model in
    (default: the model's)."""
    return Lowering(model, name, target, chains, inputs_in_arena, regions, order).run()
