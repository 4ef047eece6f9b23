"""TensorFlow ``GraphDef`` (and function bodies) to :class:`~tractile.model.InferenceModel`.

A :class:`Scope` wires the nodes of a graph or of a ``FunctionDef`` body into a model. The
main graph's ``Placeholder`` nodes become inputs; functions called by ``PartitionedCall`` are
inlined into the calling scope (their nodes named under the call's name), and the bodies of
``If`` / ``While`` become models of their own (:meth:`Scope.function_model`). Only the nodes
the outputs depend on are translated. Values known when loading (constants, and what
translations compute from constants only) are tracked per outlet: translations read
parameters such as axes or permutations through :meth:`TfNode.const`.

Names: the nodes a translation adds besides the one named after the TensorFlow node are
called ``node.suffix``, so they stay in the node's name scope (the graph page's groups).
Every value of the graph and of inlined functions is labelled with its tensor name
(``scope/node:0``; inlined nodes under ``call/``, as TensorFlow's own function inlining names
them), which is how ``tractile compare --with tensorflow`` finds TensorFlow's value of a wire.
"""
from __future__ import annotations

import numpy as np

from ...dim import symbol
from ...errors import ModelFormatError, UnsupportedOpError
from ...fact import InferenceFact, ShapeFactoid
from ...graph import OutletId
from ...model import InferenceModel
from .proto import DT_RESOURCE, DT_VARIANT, datum_type
from .registry import TfNode, Translated, lookup, supported_ops

#: ops with several output arguments: a function body names their outputs ``node:arg:index``
OUTPUT_ARGS = {
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV2": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV3": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                         "reserve_space_3"),
    "TopKV2": ("values", "indices"), "Unique": ("y", "idx"), "ArgMax": ("output",),
    "TensorListConcatV2": ("tensor", "lengths"),
}
#: ops the loader handles itself
SPECIAL_OPS = ("Placeholder", "PlaceholderWithDefault", "Const")
#: TensorFlow 1 control-flow ops, raised to functional If/While by ``control_v1``
CONTROL_V1 = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "RefSwitch", "RefMerge",
              "RefEnter", "RefExit", "RefNextIteration", "TensorArrayV3", "TensorArrayWriteV3",
              "TensorArrayReadV3", "TensorArrayScatterV3", "TensorArrayGatherV3", "TensorArraySizeV3",
              "TensorArrayConcatV3", "TensorArraySplitV3"}
#: functional ops and the attributes naming the functions they call
CALLS = {"PartitionedCall": ("f",), "StatefulPartitionedCall": ("f",), "If": ("then_branch", "else_branch"),
         "StatelessIf": ("then_branch", "else_branch"), "While": ("cond", "body"),
         "StatelessWhile": ("cond", "body")}
#: sinks of a GraphDef that are not outputs
NOT_OUTPUTS = {"NoOp", "Const", "Placeholder", "Assert", "SaveV2", "RestoreV2", "VarHandleOp", "AssignVariableOp",
               "VarIsInitializedOp", "MergeV2Checkpoints", "ShardedFilename", "StringJoin"}

_LARGEST_FOLDED = 4096


def split_ref(ref: str, op_of) -> tuple[str, int]:
    """``name``, ``name:2`` (graphs) or ``name:arg:2`` (function bodies) as (node name, output slot)."""
    parts = ref.split(":")
    if len(parts) == 1:
        return ref, 0
    try:
        index = int(parts[-1])
    except ValueError:
        raise ModelFormatError(f"malformed tensor name {ref!r}") from None
    if len(parts) == 2:
        return parts[0], index
    names = OUTPUT_ARGS.get(op_of(parts[0]) or "")
    if names and parts[1] in names:
        index += names.index(parts[1])
    return parts[0], index


class Library:
    """The functions of a graph's library, by name."""

    def __init__(self, graph_def):
        self.functions = {f.signature.name: f for f in graph_def.library.function}

    def get(self, name: str, where: str):
        found = self.functions.get(name)
        if found is None:
            raise ModelFormatError(f"{where} calls function {name!r}, which the graph's library does not define")
        return found


def needed_nodes(nodes: dict, roots: list[str]) -> list:
    """The nodes the ``roots`` depend on through data inputs, in an order where producers
    come first (iterative: graphs may be deep)."""
    order, state = [], {}
    for root in roots:
        stack = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                state[name] = 2
                order.append(nodes[name])
                continue
            if state.get(name) or name not in nodes:
                continue
            state[name] = 1
            stack.append((name, True))
            for ref in nodes[name].input:
                if not ref.startswith("^"):
                    producer = ref.split(":")[0]
                    if state.get(producer) is None:
                        stack.append((producer, False))
    return order


def graph_outputs(graph_def) -> list[str]:
    """The tensors nothing consumes: what a frozen graph computes."""
    consumed = {ref.lstrip("^").split(":")[0] for node in graph_def.node for ref in node.input}
    return [node.name for node in graph_def.node if node.name not in consumed and node.op not in NOT_OUTPUTS]


def find_unsupported(nodes, library: Library, found: dict | None = None, seen: set | None = None) -> dict:
    """Every op with no translation, with the nodes using it, in ``nodes`` and the functions
    they call."""
    found = {} if found is None else found
    seen = set() if seen is None else seen
    for node in nodes:
        if node.op not in SPECIAL_OPS and lookup(node.op) is None:
            found.setdefault(node.op, []).append(node.name)
        for attr in CALLS.get(node.op, ()):
            name = node.attr[attr].func.name if attr in node.attr else ""
            if name and name not in seen:
                seen.add(name)
                body = library.get(name, f'{node.op} node "{node.name}"')
                find_unsupported(body.node_def, library, found, seen)
    return found


def unsupported_error(found: dict) -> UnsupportedOpError:
    lines = []
    for op_type, names in sorted(found.items()):
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        lines.append(f"  {op_type} at {shown}")
    message = (f"the model uses {len(found)} unsupported TensorFlow op(s):\n" + "\n".join(lines)
               + "\nsupported TensorFlow ops: " + ", ".join(supported_ops()))
    return UnsupportedOpError(message, [("tf", op, 0, names) for op, names in sorted(found.items())])


class Scope:
    """Wires the nodes of one graph or function body into ``model``.

    ``values`` maps the names a function body reads (its arguments) to outlets; ``consts``
    (shared by every scope of one model) holds the values known at load time.
    """

    def __init__(self, model: InferenceModel, library: Library, consts: dict, prefix: str = "",
                 values: dict[str, OutletId] | None = None, labels: bool = True):
        self.model = model
        self.library = library
        self.consts = consts
        self.prefix = prefix
        self.values = dict(values or {})
        self.labels = labels
        self.outlets: dict[str, list[OutletId]] = {}
        self.op_types: dict[str, str] = {}
        #: what to call the model inputs that placeholders become (a signature's keys)
        self.input_names: dict[str, str] = {}

    # values -------------------------------------------------------------------------------------
    def outlet(self, ref: str, node: TfNode | None = None) -> OutletId:
        if ref in self.values:
            return self.values[ref]
        name, index = split_ref(ref, self.op_types.get)
        outlets = self.outlets.get(name)
        where = f"{node!r}" if node is not None else "the graph"
        if outlets is None:
            raise ModelFormatError(f"{where} reads {ref!r}, which no node or argument defines")
        if not 0 <= index < len(outlets):
            raise ModelFormatError(f"{where} reads {ref!r}, but {name!r} has {len(outlets)} output(s) in tractile")
        return outlets[index]

    def const_value(self, outlet: OutletId) -> np.ndarray | None:
        return self.consts.get(outlet)

    def add_const(self, name: str, value: np.ndarray) -> OutletId:
        outlet = self.model.add_const(name, value)
        self.consts[outlet] = np.asarray(value)
        return outlet

    # wiring -------------------------------------------------------------------------------------
    def wire_op(self, node: TfNode, suffix: str, op, inputs: list) -> list[OutletId]:
        outlets = []
        name = self.prefix + node.name + (f".{suffix}" if suffix else "")
        for index, item in enumerate(inputs):
            if isinstance(item, OutletId):
                outlets.append(item)
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                outlets.append(node.input(int(item)))
            else:
                outlets.append(self.add_const(f"{name}.const{index}", np.asarray(item)))
        wired = self.model.wire_node(name, op, outlets)
        self._fold(op, outlets, wired)
        return wired

    def _fold(self, op, inputs: list[OutletId], outputs: list[OutletId]) -> None:
        """Compute small outputs of ops whose inputs are all known."""
        values = [self.consts.get(i) for i in inputs]
        if any(v is None for v in values) or getattr(op, "is_random", False) or not op.is_stateless:
            return
        try:
            results = op.eval([np.asarray(v) for v in values])
        except Exception:  # noqa: BLE001 - folding is an optimisation: the node runs later anyway
            return
        for outlet, result in zip(outputs, results):
            if isinstance(result, np.ndarray) and result.size <= _LARGEST_FOLDED and result.dtype != object:
                self.consts[outlet] = result

    def build(self, nodes: list) -> None:
        """Wire ``nodes`` (producers first)."""
        for proto in nodes:
            self.op_types[proto.name] = proto.op
        for proto in nodes:
            self.wire(proto)

    def wire(self, proto) -> None:
        node = TfNode(proto, self)
        if proto.op == "Const":
            value = node.tensor("value")
            outlets = [self.add_const(self.prefix + proto.name, value)]
        elif proto.op in ("Placeholder", "PlaceholderWithDefault"):
            outlets = [self.placeholder(node)]
        else:
            translate = lookup(proto.op)
            if translate is None:
                raise unsupported_error({proto.op: [proto.name]})
            result = translate(node)
            if isinstance(result, list):
                outlets = result
            else:
                if not isinstance(result, Translated):
                    result = Translated(result, list(range(len(node.inputs))))
                outlets = self.wire_op(node, "", result.op, result.inputs)
        self.outlets[proto.name] = outlets
        if self.labels:
            for index, outlet in enumerate(outlets):
                self.model.outlet_labels.setdefault(outlet, f"{self.prefix}{proto.name}:{index}")

    def placeholder(self, node: TfNode) -> OutletId:
        if node.name in self.values:
            return self.values[node.name]
        if node.op_type == "PlaceholderWithDefault":
            return node.input(0)
        dtype = node.type("dtype")
        dims = node.shape("shape", None)
        name = self.input_names.get(node.name, node.name)
        if dims is None:
            fact = InferenceFact(dtype)
        else:
            shape = tuple(symbol(_symbol_name(f"{name}_{axis}")) if d < 0 else d for axis, d in enumerate(dims))
            fact = InferenceFact(dtype, ShapeFactoid(shape, False))
        return self.model.add_source(name, fact)

    # functions ----------------------------------------------------------------------------------
    def inline(self, node: TfNode, function_name: str, inputs: list[OutletId]) -> list[OutletId]:
        """Wire the body of ``function_name`` here, its arguments bound to ``inputs``."""
        function = self.library.get(function_name, repr(node))
        args = function.signature.input_arg
        if len(args) != len(inputs):
            raise node.error(f"calls {function_name!r} with {len(inputs)} inputs; it takes {len(args)}")
        scope = Scope(self.model, self.library, self.consts, f"{self.prefix}{node.name}/",
                      {arg.name: outlet for arg, outlet in zip(args, inputs)}, labels=self.labels)
        return scope.build_function(function)

    def build_function(self, function) -> list[OutletId]:
        nodes = {n.name: n for n in function.node_def}
        rets = [function.ret[arg.name] for arg in function.signature.output_arg]
        if any(r not in self.values and r.split(":")[0] not in nodes for r in rets):
            missing = [r for r in rets if r not in self.values and r.split(":")[0] not in nodes]
            raise ModelFormatError(f"function {function.signature.name!r} returns {missing}, which it does not define")
        roots = [r.split(":")[0] for r in rets if r not in self.values]
        self.build(needed_nodes(nodes, roots))
        return [self.outlet(r) for r in rets]

    def function_model(self, node: TfNode, function_name: str, inputs: list[OutletId],
                       extra_sources: list[tuple[str, InferenceFact]] = (), then=None,
                       constant_args: set[int] | None = None) -> InferenceModel:
        """A model of its own for ``function_name`` (an If branch, a While body): one input per
        extra source, then per argument; an argument whose value is a constant here is that
        constant in the body too (only those in ``constant_args`` when given: the loop
        invariants of a While). ``then(scope, outlets)`` may wire more after the body."""
        function = self.library.get(function_name, repr(node))
        args = function.signature.input_arg
        if len(args) != len(inputs):
            raise node.error(f"calls {function_name!r} with {len(inputs)} inputs; it takes {len(args)}")
        body = InferenceModel()
        body.symbols = self.model.symbols
        consts: dict = {}
        for name, fact in extra_sources:
            body.add_source(name, fact)
        values = {}
        for position, (arg, outlet) in enumerate(zip(args, inputs)):
            source = body.add_source(arg.name, _arg_fact(arg, node))
            known = self.consts.get(outlet)
            if known is not None and (constant_args is None or position in constant_args):
                source = body.add_const(f"{arg.name}.value", known)
                consts[source] = known
            values[arg.name] = source
        scope = Scope(body, self.library, consts, "", values, labels=False)
        outputs = scope.build_function(function)
        body.outputs = then(scope, outputs) if then is not None else outputs
        return body


def invariant_args(function) -> set[int]:
    """The positions of the arguments a loop body returns unchanged (directly or through Identity)."""
    nodes = {n.name: n for n in function.node_def}
    positions = {arg.name: index for index, arg in enumerate(function.signature.input_arg)}
    found = set()
    for index, arg in enumerate(function.signature.output_arg):
        ref = function.ret.get(arg.name, "")
        for _ in range(len(nodes) + 1):
            producer = nodes.get(ref.split(":")[0])
            if producer is None or producer.op not in ("Identity", "StopGradient", "Snapshot"):
                break
            ref = next((r for r in producer.input if not r.startswith("^")), "")
        if positions.get(ref) == index:
            found.add(index)
    return found


def _arg_fact(arg, node: TfNode) -> InferenceFact:
    if arg.type in (DT_RESOURCE, DT_VARIANT) or not arg.type:
        return InferenceFact()
    return InferenceFact(datum_type(arg.type, f"{node!r} argument {arg.name!r}"))


def _symbol_name(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in text) or "_"
    return cleaned if not cleaned[0].isdigit() else "_" + cleaned


def load_graph_def(graph_def, outputs: list[str] | None = None, variables: dict[str, np.ndarray] | None = None,
                   inputs: dict[str, str] | None = None, output_names: list[str] | None = None) -> InferenceModel:
    """A GraphDef as an InferenceModel computing ``outputs`` (tensor names; default: the
    tensors nothing consumes). ``variables`` gives the values of ``VarHandleOp`` nodes (a
    SavedModel's checkpoint); ``inputs`` renames placeholders (a signature's input keys)."""
    from . import ops  # noqa: F401 - registers every translation

    sinks = graph_outputs(graph_def)
    if any(node.op in CONTROL_V1 for node in graph_def.node):
        graph_def = _raise_control_flow_v1(graph_def)
        raised = {node.name for node in graph_def.node}
        # what the graph computed, not what raising left unconsumed (a conditional's predicate)
        sinks = [name for name in sinks if name in raised] or graph_outputs(graph_def)
    library = Library(graph_def)
    for function in library.functions.values():
        if any(node.op in CONTROL_V1 for node in function.node_def):
            raise UnsupportedOpError(f"function {function.signature.name!r} holds TensorFlow 1 control flow")
    nodes = {node.name: node for node in graph_def.node}
    outputs = outputs or sinks
    if not outputs:
        raise ModelFormatError("the TensorFlow graph has no outputs (every node's value is consumed or is a constant)")
    roots = []
    for ref in outputs:
        name = ref.split(":")[0]
        if name not in nodes:
            raise ModelFormatError(f"output {ref!r}: the graph has no node {name!r}")
        roots.append(name)
    order = needed_nodes(nodes, roots)
    found = find_unsupported([n for n in order if n.op != "VarHandleOp" or variables is None], library)
    if found:
        raise unsupported_error(found)
    model = InferenceModel()
    scope = Scope(model, library, {})
    scope.input_names = dict(inputs or {})
    for node in order:
        if node.op == "VarHandleOp" and variables is not None:
            shared = node.attr["shared_name"].s.decode() if "shared_name" in node.attr else node.name
            if shared not in variables:
                raise ModelFormatError(f'VarHandleOp node "{node.name}": no value for variable {shared!r} '
                                       "in the checkpoint")
            scope.op_types[node.name] = node.op
            scope.outlets[node.name] = [scope.add_const(node.name, variables[shared])]
    scope.build([n for n in order if n.name not in scope.outlets])
    position = {node.name: index for index, node in enumerate(graph_def.node)}
    model.inputs.sort(key=lambda source: position.get(model.node(source.node).name, -1))
    model.outputs = [scope.outlet(ref) for ref in outputs]
    for position, outlet in enumerate(model.outputs):
        model.outlet_labels[outlet] = (output_names or outputs)[position]
    return model


def _raise_control_flow_v1(graph_def):
    try:
        from .control_v1 import raise_control_flow_v1
    except ImportError:
        ops = sorted({node.op for node in graph_def.node if node.op in CONTROL_V1})
        raise UnsupportedOpError("the graph uses TensorFlow 1 control flow (" + ", ".join(ops) + "), which this "
                                 "tractile cannot raise to If/While", [("tf", op, 0, []) for op in ops]) from None
    return raise_control_flow_v1(graph_def)
