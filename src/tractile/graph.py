"""The graph IR shared by inference and typed models: nodes, outlets, wiring."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, NamedTuple, TypeVar

from .errors import TractileError

F = TypeVar("F")


class OutletId(NamedTuple):
    """A wire: output ``slot`` of node ``node``."""

    node: int
    slot: int = 0

    def __str__(self) -> str:
        return f"{self.node}/{self.slot}"


class InletId(NamedTuple):
    """An input port: input ``slot`` of node ``node``."""

    node: int
    slot: int

    def __str__(self) -> str:
        return f"{self.node}>{self.slot}"


class Outlet(Generic[F]):
    """What a node stores per output: its fact and the inlets it feeds."""

    __slots__ = ("fact", "successors")

    def __init__(self, fact: F, successors: list[InletId] | None = None):
        self.fact = fact
        self.successors = successors if successors is not None else []

    def __repr__(self) -> str:
        return f"Outlet({self.fact}, {self.successors})"


class Node(Generic[F]):
    """A node: an op applied to input wires, with one :class:`Outlet` per output."""

    __slots__ = ("id", "name", "op", "inputs", "outputs")

    def __init__(self, id: int, name: str, op, inputs: list[OutletId], outputs: list[Outlet[F]]):
        self.id = id
        self.name = name
        self.op = op
        self.inputs = inputs
        self.outputs = outputs

    def __repr__(self) -> str:
        return f'#{self.id} "{self.name}" {self.op.name}({", ".join(map(str, self.inputs))})'


class Graph(Generic[F]):
    """Nodes plus the model's input and output wires.

    Subclasses (:class:`~tractile.model.InferenceModel`, :class:`~tractile.model.TypedModel`)
    decide how facts are computed when a node is wired.
    """

    def __init__(self) -> None:
        self.nodes: list[Node[F]] = []
        self.inputs: list[OutletId] = []
        self.outputs: list[OutletId] = []
        self.outlet_labels: dict[OutletId, str] = {}
        self.properties: dict[str, object] = {}
        self._names: set[str] = set()
        #: counts the changes of nodes, wiring and facts (what a cached result of the graph keys on)
        self.changes = 0

    # building ---------------------------------------------------------------------------
    def unique_name(self, name: str) -> str:
        name = name or "node"
        if name not in self._names:
            return name
        index = 1
        while f"{name}.{index}" in self._names:
            index += 1
        return f"{name}.{index}"

    def add_node(self, name: str, op, output_facts: list[F]) -> int:
        name = self.unique_name(name)
        self._names.add(name)
        self.changes += 1
        node = Node(len(self.nodes), name, op, [], [Outlet(f) for f in output_facts])
        self.nodes.append(node)
        return node.id

    def add_edge(self, outlet: OutletId, inlet: InletId) -> None:
        self.changes += 1
        source = self._outlet(outlet)
        node = self.nodes[inlet.node]
        if inlet.slot < len(node.inputs):
            previous = node.inputs[inlet.slot]
            self._outlet(previous).successors.remove(inlet)
            node.inputs[inlet.slot] = outlet
        elif inlet.slot == len(node.inputs):
            node.inputs.append(outlet)
        else:
            raise TractileError(f"cannot wire input {inlet.slot} of {node} before its earlier inputs")
        source.successors.append(inlet)

    def _wire(self, name: str, op, inputs: list[OutletId], facts: list[F]) -> list[OutletId]:
        node_id = self.add_node(name, op, facts)
        for slot, outlet in enumerate(inputs):
            self.add_edge(outlet, InletId(node_id, slot))
        return [OutletId(node_id, slot) for slot in range(len(facts))]

    # access ------------------------------------------------------------------------------
    def _outlet(self, outlet: OutletId) -> Outlet[F]:
        try:
            return self.nodes[outlet.node].outputs[outlet.slot]
        except IndexError:
            raise TractileError(f"no outlet {outlet} in this graph") from None

    def outlet_fact(self, outlet: OutletId) -> F:
        return self._outlet(outlet).fact

    def set_outlet_fact(self, outlet: OutletId, fact: F) -> None:
        self.changes += 1
        self._outlet(outlet).fact = fact

    def outlet_successors(self, outlet: OutletId) -> list[InletId]:
        return self._outlet(outlet).successors

    def node(self, node_id: int) -> Node[F]:
        return self.nodes[node_id]

    def node_by_name(self, name: str) -> Node[F]:
        for node in self.nodes:
            if node.name == name:
                return node
        raise TractileError(f"no node named {name!r}")

    def node_input_facts(self, node_id: int) -> list[F]:
        return [self.outlet_fact(o) for o in self.nodes[node_id].inputs]

    def outlet_label(self, outlet: OutletId) -> str:
        label = self.outlet_labels.get(outlet)
        if label is not None:
            return label
        node = self.nodes[outlet.node]
        return node.name if outlet.slot == 0 else f"{node.name}:{outlet.slot}"

    def input_names(self) -> list[str]:
        return [self.nodes[o.node].name for o in self.inputs]

    def output_names(self) -> list[str]:
        return [self.outlet_label(o) for o in self.outputs]

    def input_index(self, name: str) -> int:
        names = self.input_names()
        if name not in names:
            raise TractileError(f"no input named {name!r}; inputs are: {', '.join(names)}")
        return names.index(name)

    def output_index(self, name: str) -> int:
        names = self.output_names()
        if name not in names:
            raise TractileError(f"no output named {name!r}; outputs are: {', '.join(names)}")
        return names.index(name)

    def set_output_names(self, names: Iterable[str]) -> None:
        for outlet, name in zip(self.outputs, names):
            self.outlet_labels[outlet] = name

    # order -------------------------------------------------------------------------------
    def eval_order(self, outputs: list[OutletId] | None = None) -> list[int]:
        """Node ids in an order where every node comes after its inputs (only those needed)."""
        targets = [o.node for o in (self.outputs if outputs is None else outputs)]
        targets += [o.node for o in self.inputs]
        done: set[int] = set()
        on_path: set[int] = set()
        order: list[int] = []
        for target in targets:
            if target in done:
                continue
            stack = [(target, 0)]
            on_path.add(target)
            while stack:
                node_id, position = stack[-1]
                inputs = self.nodes[node_id].inputs
                if position < len(inputs):
                    stack[-1] = (node_id, position + 1)
                    child = inputs[position].node
                    if child in done:
                        continue
                    if child in on_path:
                        raise TractileError(f"the graph has a cycle through {self.nodes[child]}")
                    on_path.add(child)
                    stack.append((child, 0))
                else:
                    stack.pop()
                    on_path.discard(node_id)
                    done.add(node_id)
                    order.append(node_id)
        return order

    # checks ------------------------------------------------------------------------------
    def check_consistency(self) -> None:
        """Raise if any wire is dangling, any successor list is stale or the graph has a cycle."""
        self.check_nodes(range(len(self.nodes)))
        for outlet in [*self.inputs, *self.outputs]:
            self._outlet(outlet)
        self.eval_order()

    def check_nodes(self, node_ids: Iterable[int]) -> None:
        """The wiring checks of :meth:`check_consistency` for some nodes only (what a rewrite
        touched), in time proportional to their edges rather than to the graph."""
        for index in node_ids:
            node = self.nodes[index]
            if node.id != index:
                raise TractileError(f"node {node} stored at index {index}")
            for slot, outlet in enumerate(node.inputs):
                if InletId(index, slot) not in self._outlet(outlet).successors:
                    raise TractileError(f"{node} input {slot} from {outlet} is missing from its successors")
            for slot, out in enumerate(node.outputs):
                for inlet in out.successors:
                    target = self.nodes[inlet.node]
                    if inlet.slot >= len(target.inputs) or target.inputs[inlet.slot] != OutletId(index, slot):
                        raise TractileError(f"{node} output {slot} lists stale successor {inlet}")

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}: inputs {self.inputs}, outputs {self.outputs}"]
        lines += [f"  {node!r} -> {[str(o.fact) for o in node.outputs]}" for node in self.nodes]
        return "\n".join(lines)
