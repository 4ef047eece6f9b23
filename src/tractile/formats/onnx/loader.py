"""ONNX ``ModelProto`` to :class:`~tractile.model.InferenceModel`."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ...dim import dim_symbols
from ...errors import ModelFormatError, UnsupportedOpError
from ...fact import InferenceFact, ShapeFactoid
from ...model import InferenceModel
from ..detect import check_model_proto
from .checks import check_function_calls, check_text, sparse_to_dense
from .checks import subgraphs as _subgraphs
from .external import load_external_data, refuse_external_data
from .registry import OnnxNode, Translated, lookup, supported_ops
from .types import (
    _onnx,
    fact_from_type,
    tensor_to_array,
)


class OnnxContext:
    """What translation functions may need beyond their node: opsets, attribute decoding."""

    def __init__(self, opsets: dict[str, int], functions: dict | None = None, base_dir: str | None = None):
        self.opsets = opsets
        self.functions = functions or {}
        self.base_dir = base_dir

    def opset(self, domain: str) -> int:
        return self.opsets.get(domain or "", self.opsets.get("ai.onnx", 1) if not domain else 1)

    def attribute_value(self, attribute, node: OnnxNode) -> Any:
        from onnx import AttributeProto, helper

        if attribute.type == AttributeProto.TENSOR:
            return tensor_to_array(attribute.t, f"{node!r} attribute {attribute.name!r}")
        if attribute.type == AttributeProto.SPARSE_TENSOR:
            return sparse_to_dense(attribute.sparse_tensor, f"{node!r} attribute {attribute.name!r}")
        return helper.get_attribute_value(attribute)


def read_model(source):
    """A ModelProto from a path, bytes or a ModelProto; ModelFormatError if it is not ONNX."""
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        refuse_external_data(source, "a ModelProto")
        return source, None
    try:
        if isinstance(source, (bytes, bytearray, memoryview)):
            proto, base_dir, where = onnx.load_from_string(bytes(source)), None, "the model bytes"
            refuse_external_data(proto, where)
        else:
            path = os.fspath(source)
            proto, where = onnx.load(path, load_external_data=False), path
            base_dir = os.path.dirname(os.path.abspath(path))
            load_external_data(proto, base_dir)
    except ModelFormatError:
        raise
    except (OSError, ValueError) as error:
        raise ModelFormatError(f"{source}: cannot read external data or file: {error}") from None
    except Exception as error:
        raise ModelFormatError(f"{source}: not a valid ONNX model ({type(error).__name__}: {error})") from None
    check_model_proto(proto, where)
    return proto, base_dir


def find_unsupported(graph, context: OnnxContext, found: dict | None = None) -> dict:
    """Every (domain, op type, opset) with neither a translation nor a function body,
    with the node names using it."""
    from .functions import has_function

    found = {} if found is None else found
    for index, node in enumerate(graph.node):
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = context.opset(domain)
        if lookup(domain, node.op_type, opset) is None and not has_function(context, domain, node.op_type, opset):
            label = node.name or (node.output[0] if node.output else f"#{index}")
            found.setdefault((domain, node.op_type, opset), []).append(label)
        for subgraph in _subgraphs(node):
            find_unsupported(subgraph, context, found)
    return found


def unsupported_error(found: dict) -> UnsupportedOpError:
    lines = []
    for (domain, op_type, opset), names in sorted(found.items()):
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        lines.append(f"  {domain or 'ai.onnx'}::{op_type} (opset {opset}) at {shown}")
    supported = ", ".join(supported_ops())
    message = (f"the model uses {len(found)} unsupported op(s):\n" + "\n".join(lines)
               + f"\nsupported ai.onnx ops: {supported}")
    return UnsupportedOpError(message, [(d, o, v, n) for (d, o, v), n in sorted(found.items())])


def load_onnx(source) -> InferenceModel:
    """Load an ONNX model (path, bytes or ModelProto) as an InferenceModel."""
    from . import ops  # noqa: F401 - registers every translation

    proto, base_dir = read_model(source)
    opsets = {("" if o.domain in ("", "ai.onnx") else o.domain): int(o.version) for o in proto.opset_import}
    if not opsets:
        opsets[""] = 1
    check_text(proto.graph, "the main graph")
    functions = {(f.domain, f.name): f for f in proto.functions}
    check_function_calls(functions)
    context = OnnxContext(opsets, functions, base_dir)
    found = find_unsupported(proto.graph, context)
    if found:
        raise unsupported_error(found)
    model = InferenceModel()
    GraphBuilder(model, context).build(proto.graph)
    model.properties["producer"] = f"{proto.producer_name} {proto.producer_version}".strip()
    model.properties["opsets"] = dict(opsets)
    return model


class GraphBuilder:
    """Wires one ONNX GraphProto into a model.

    ``outer`` maps names visible from an enclosing scope to outlets of ``model``;
    ``parent`` is the builder of the enclosing graph when this one builds a subgraph
    (an If branch, a Loop or Scan body): a name the subgraph reads from an enclosing
    scope becomes an extra input of the subgraph's model (listed in ``free_names``),
    which the control-flow node wires from the enclosing graph.
    """

    def __init__(self, model, context: OnnxContext, outer: dict | None = None,
                 parent: GraphBuilder | None = None):
        self.model = model
        self.context = context
        self.outlets: dict[str, Any] = {}
        self.outer = outer or {}
        self.parent = parent
        self.free_names: list[str] = []

    def outlet(self, name: str, node: OnnxNode):
        found = self.outlets.get(name)
        if found is None:
            found = self.resolve_outer(name)
        if found is None:
            raise ModelFormatError(f"{node!r} reads {name!r}, which no node, input or initializer defines")
        return found

    def resolve_outer(self, name: str):
        """The outlet standing for ``name`` defined in an enclosing scope, or None."""
        found = self.outer.get(name)
        if found is not None or self.parent is None or not self.parent.can_see(name):
            return found
        outlet = self.model.add_source(name, InferenceFact())
        self.outlets[name] = outlet
        self.free_names.append(name)
        return outlet

    def can_see(self, name: str) -> bool:
        """Whether ``name`` is defined here or in an enclosing scope."""
        return name in self.outlets or name in self.outer or (self.parent is not None and self.parent.can_see(name))

    def visible_names(self) -> set[str]:
        names = set(self.outlets) | set(self.outer)
        return names | self.parent.visible_names() if self.parent is not None else names

    def subgraph(self, graph) -> tuple[InferenceModel, list[str]]:
        """Build a subgraph into its own model; also return the enclosing names it reads.

        The model's inputs are the subgraph's declared inputs, then one per free name.
        """
        body = InferenceModel()
        body.symbols = self.model.symbols
        builder = GraphBuilder(body, self.context, parent=self)
        builder.build(graph)
        return body, builder.free_names

    def build(self, graph) -> None:
        model = self.model
        self.graph = graph
        nested = self.parent is not None
        initializers = {t.name for t in graph.initializer}
        for value in graph.input:
            if value.name in initializers:
                continue
            fact = fact_from_type(value.type, f"input {value.name!r}",
                                  unknown_dims_as_symbols=None if nested else value.name, named_dims=not nested)
            self.outlets[value.name] = model.add_source(value.name, fact)
        for tensor in graph.initializer:
            self.outlets[tensor.name] = model.add_const(tensor.name, tensor_to_array(tensor, "initializer"))
        for sparse in graph.sparse_initializer:
            self.outlets[sparse.values.name] = model.add_const(sparse.values.name, sparse_to_dense(
                sparse, f"sparse initializer {sparse.values.name!r}"))
        for node_proto in _topological(graph.node, set(self.outlets) | self.visible_names()):
            self.wire(node_proto)
        for node_proto in graph.node:  # remember value names: tools map wires back to the file's tensors
            for name in node_proto.output:
                if name and name in self.outlets:
                    model.outlet_labels.setdefault(self.outlets[name], name)
        outputs = []
        for value in graph.output:
            outlet = self.outlets.get(value.name) or self.resolve_outer(value.name)
            if outlet is None:
                raise ModelFormatError(f"graph output {value.name!r} is not produced by any node")
            outputs.append(outlet)
        model.outputs = outputs
        known_symbols = set()
        for source in model.inputs:
            fact = model.outlet_fact(source)
            if fact.kind is None:
                known_symbols |= dim_symbols(d for d in fact.shape.dims if d is not None)
        for value, outlet in zip(graph.output, outputs):
            model.outlet_labels[outlet] = value.name
            hint = fact_from_type(value.type, f"output {value.name!r}", named_dims=not nested)
            hint = _without_foreign_symbols(_trusted_part(hint, nested), known_symbols)
            model.set_outlet_fact(outlet, _merge_hint(model.outlet_fact(outlet), hint))

    def wire(self, proto) -> None:
        domain = "" if proto.domain in ("", "ai.onnx") else proto.domain
        node = OnnxNode(proto, self.context.opset(domain), self.context)
        node.scope = self
        translate = lookup(domain, proto.op_type, node.opset)
        if translate is None:
            from .functions import expand_function

            expand_function(self, node)
            return
        result = translate(node)
        self.wire_translated(node, result)

    def wire_translated(self, node: OnnxNode, result) -> None:
        """Wire a translation; a ``str`` in ``Translated.inputs`` names a value of this scope."""
        if not isinstance(result, Translated):
            result = Translated(result, [i for i in range(len(node.inputs)) if node.present(i)])
        inputs = []
        for index, item in enumerate(result.inputs):
            if isinstance(item, np.ndarray):
                inputs.append(self.model.add_const(f"{node.name}.const{index}", item))
            elif isinstance(item, str):
                inputs.append(self.outlet(item, node))
            elif 0 <= item < len(node.inputs):
                inputs.append(self.outlet(node.inputs[item], node))
            else:
                raise node.error(f"needs an input {item}, but the node has {len(node.inputs)}")
        outlets = self.model.wire_node(node.name, result.op, inputs)
        for index, name in enumerate(node.outputs):
            if not name:
                continue
            if index >= len(outlets):
                raise node.error(f"output {index} ({name!r}) is not supported by tractile's {result.op.name}")
            self.outlets[name] = outlets[index]


def _trusted_part(hint: InferenceFact, nested: bool) -> InferenceFact:
    """What of a declared output type to believe: exporters often get the shapes of what
    sequences hold wrong, and a subgraph's declared shapes are only checked by its op."""
    if hint.kind is not None:
        element = _trusted_part(hint.element, True) if hint.element is not None else None
        return InferenceFact.container(hint.kind, element, hint.dtype, nothing=element is None)
    return InferenceFact(hint.dtype) if nested else hint


def _without_foreign_symbols(hint: InferenceFact, known: set[str]) -> InferenceFact:
    """Forget declared output dims over symbols no input has: exporters name derived dims
    freely (``Addy_dim_1``), and analysis knows better what they are."""
    if hint.kind is not None or hint.shape.open:
        return hint
    dims = tuple(None if d is not None and not dim_symbols([d]) <= known else d for d in hint.shape.dims)
    return InferenceFact(hint.dtype, ShapeFactoid(dims, False), hint.value)


def _merge_hint(fact: InferenceFact, hint: InferenceFact) -> InferenceFact:
    from ...errors import AnalysisError
    from ...fact_unify import unify

    try:
        return unify(fact, hint)
    except AnalysisError:
        return fact


def _read_names(node) -> set[str]:
    """Every name a node reads: its inputs and what its subgraphs read from outside."""
    names = {name for name in node.input if name}
    for graph in _subgraphs(node):
        defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
        defined |= {t.values.name for t in graph.sparse_initializer}
        inner: set[str] = {v.name for v in graph.output}
        for inner_node in graph.node:
            defined.update(n for n in inner_node.output if n)
            inner |= _read_names(inner_node)
        names |= inner - defined
    return names


def _topological(nodes, available: set[str]):
    """ONNX nodes in an order where each reads only defined names (files are usually sorted)."""
    pending = list(nodes)
    defined = set(available)
    reads = {id(node): _read_names(node) if any(True for _ in _subgraphs(node)) else set(node.input)
             for node in pending}
    ordered = []
    while pending:
        progress = []
        rest = []
        for node in pending:
            if all(not name or name in defined for name in reads[id(node)]):
                progress.append(node)
                defined.update(n for n in node.output if n)
            else:
                rest.append(node)
        if not progress:
            ordered.extend(rest)  # names defined in an outer scope, or missing: reported when wired
            break
        ordered.extend(progress)
        pending = rest
    return ordered
