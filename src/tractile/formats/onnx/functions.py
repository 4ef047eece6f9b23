"""Expansion of ONNX functions into their nodes at load time.

An op with no native translation is expanded into a function body when it has one:
a model-local function (``ModelProto.functions``), or the function the op's schema
defines (static, or built from the input types for context-dependent functions such
as LayerNormalization or SequenceMap). The body's nodes are wired in a scope of their
own (functions do not see the caller's names), with formal inputs bound to the
caller's values and attribute references (``ref_attr_name``) resolved from the
caller's attributes or the function's defaults. Native translations always win:
the loader only calls :func:`expand_function` when the registry has nothing.
"""
from __future__ import annotations

from ...errors import UnsupportedOpError

_SCHEMA_MISSING = object()


def has_function(context, domain: str, op_type: str, opset: int) -> bool:
    """Whether ``op_type`` has a model-local function or a schema function body."""
    if _local_function(context, domain, op_type) is not None:
        return True
    schema = _schema(op_type, opset, domain)
    return schema is not None and (schema.has_function or schema.has_context_dependent_function)


def expand_function(builder, node) -> None:
    """Wire the body of the function ``node`` calls into ``builder``'s model; raise if there is none."""
    from .loader import GraphBuilder, OnnxContext

    function = _local_function(builder.context, node.domain, node.op_type)
    defaults: dict = {}
    if function is None:
        function = _schema_function(builder, node)
        schema = _schema(node.op_type, node.opset, node.domain)
        if function is not None and schema is not None:
            defaults = {name: a.default_value for name, a in schema.attributes.items() if a.default_value.type}
    if function is None:
        raise UnsupportedOpError(f"{node!r}: {node.domain or 'ai.onnx'}::{node.op_type} (opset {node.opset}) "
                                 "is not supported (no translation and no function body)",
                                 [(node.domain, node.op_type, node.opset, [node.name])])
    context = builder.context
    opsets = dict(context.opsets)
    for entry in function.opset_import:
        opsets["" if entry.domain in ("", "ai.onnx") else entry.domain] = int(entry.version)
    scope = GraphBuilder(builder.model, OnnxContext(opsets, context.functions, context.base_dir))
    missing = set()
    for index, formal in enumerate(function.input):
        if node.present(index):
            scope.outlets[formal] = builder.outlet(node.inputs[index], node)
        else:
            missing.add(formal)
    attributes = _call_attributes(function, node, defaults)
    body = [_instantiate(inner, attributes, missing, f"{node.name}/") for inner in function.node]
    scope.value_types = None
    scope.graph = _typed_body_graph(builder, node, function, body)
    for proto in body:
        try:
            scope.wire(proto)
        except UnsupportedOpError as error:
            raise UnsupportedOpError(f"{error} (in the function body of {node!r})", error.ops) from None
    for index, formal in enumerate(function.output):
        if node.output_wanted(index):
            builder.outlets[node.outputs[index]] = scope.outlet(formal, node)


def _local_function(context, domain: str, op_type: str):
    functions = context.functions
    return functions.get((domain, op_type)) or (functions.get(("ai.onnx", op_type)) if not domain else None)


def _schema(op_type: str, opset: int, domain: str):
    import onnx.defs

    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except (onnx.defs.SchemaError, TypeError, OverflowError):  # no such op, or an opset out of range
        return None


def _pick_version(versions, opset: int) -> int:
    below = [v for v in versions if v <= opset]
    return max(below) if below else min(versions)


def _schema_function(builder, node):
    """The FunctionProto the op's schema defines for this node, or None."""
    from onnx import FunctionProto

    schema = _schema(node.op_type, node.opset, node.domain)
    if schema is None:
        return None
    function = FunctionProto()
    if schema.has_function:
        function.ParseFromString(schema.get_function_with_opset_version(
            _pick_version(schema.function_opset_versions, node.opset)))
        return function
    if not schema.has_context_dependent_function:
        return None
    types = []
    for index in range(len(node.inputs)):
        found = _value_type(builder, node.inputs[index]) if node.present(index) else None
        if node.present(index) and found is None:
            raise UnsupportedOpError(
                f"{node!r}: {node.op_type} is expanded into a function built from its input types, and the "
                f"type of input {index} ({node.inputs[index]!r}) is not known at load time",
                [(node.domain, node.op_type, node.opset, [node.name])])
        types.append(found.SerializeToString() if found is not None else b"")
    version = _pick_version(schema.context_dependent_function_opset_versions, node.opset)
    try:
        data = schema.get_context_dependent_function_with_opset_version(
            version, node.proto.SerializeToString(), types)
    except Exception as error:
        raise UnsupportedOpError(f"{node!r}: onnx could not build the function body of {node.op_type}: {error}",
                                 [(node.domain, node.op_type, node.opset, [node.name])]) from None
    if not data:
        return None
    function.ParseFromString(data)
    return function


def _call_attributes(function, node, defaults: dict) -> dict:
    """Attribute values a function body may refer to: the caller's, else the defaults
    (the function's own, else the op schema's)."""
    values = dict(defaults)
    values.update({a.name: a for a in function.attribute_proto})
    values.update({a.name: a for a in node.proto.attribute})
    return values


def _instantiate(proto, attributes: dict, missing: set, prefix: str):
    """A copy of a body node with attribute references resolved and absent inputs blanked."""
    from onnx import AttributeProto, NodeProto

    copy = NodeProto()
    copy.CopyFrom(proto)
    copy.name = prefix + (proto.name or (proto.output[0] if proto.output else proto.op_type))
    for index, name in enumerate(copy.input):
        if name in missing:
            copy.input[index] = ""
    kept = []
    for attribute in copy.attribute:
        if attribute.ref_attr_name:
            source = attributes.get(attribute.ref_attr_name)
            if source is None:
                continue
            resolved = AttributeProto()
            resolved.CopyFrom(source)
            resolved.name = attribute.name
            kept.append(resolved)
            continue
        if attribute.type == AttributeProto.GRAPH:
            _resolve_in_graph(attribute.g, attributes)
        elif attribute.type == AttributeProto.GRAPHS:
            for graph in attribute.graphs:
                _resolve_in_graph(graph, attributes)
        kept.append(attribute)
    del copy.attribute[:]
    copy.attribute.extend(kept)
    return copy


def _resolve_in_graph(graph, attributes: dict) -> None:
    nodes = [_instantiate(n, attributes, set(), "") for n in graph.node]
    del graph.node[:]
    graph.node.extend(nodes)


# types known at load time (for context-dependent functions) -------------------------------

def _value_type(builder, name: str):
    """The ONNX TypeProto of ``name`` as far as it is known at load time, or None."""
    scope = builder
    while scope is not None:
        types = getattr(scope, "value_types", None)
        if types is None and scope.parent is None and getattr(scope, "graph", None) is not None:
            types = scope.value_types = _inferred_types(scope)
        if types and types.get(name) is not None:
            return types[name]
        scope = scope.parent
    outlet = builder.outlets.get(name)
    return _type_from_fact(builder.model.outlet_fact(outlet)) if outlet is not None else None


def _typed_body_graph(builder, node, function, body):
    """The body as a GraphProto whose inputs carry the caller's types (for shape inference)."""
    from onnx import TypeProto, helper

    inputs = []
    for index, formal in enumerate(function.input):
        if node.present(index):
            found = _value_type(builder, node.inputs[index])
            inputs.append(helper.make_value_info(formal, found if found is not None else TypeProto()))
    return helper.make_graph(body, f"{node.op_type}_body", inputs, [])


def _inferred_types(builder) -> dict:
    """Types ONNX shape inference finds for every value of the builder's graph (and subgraphs)."""
    import onnx
    from onnx import helper, shape_inference

    graph = _without_weights(builder.graph)
    opsets = [helper.make_opsetid(domain, version) for domain, version in builder.context.opsets.items()]
    model = helper.make_model(graph, opset_imports=opsets, functions=list(builder.context.functions.values()))
    try:
        model = shape_inference.infer_shapes(model)
    except Exception:
        pass
    types: dict = {}

    def collect(g):
        for value in [*g.input, *g.value_info, *g.output]:
            if value.type.WhichOneof("value"):
                types.setdefault(value.name, value.type)
        for tensor in g.initializer:
            types.setdefault(tensor.name, helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims)))
        for node in g.node:
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    collect(attribute.g)

    collect(model.graph)
    return types


def _without_weights(graph):
    """The graph with its initializers turned into typed inputs (inference needs no weights)."""
    from onnx import GraphProto, helper

    light = GraphProto()
    light.name = graph.name
    light.node.extend(graph.node)
    light.input.extend(graph.input)
    light.output.extend(graph.output)
    light.value_info.extend(graph.value_info)
    declared = {value.name for value in graph.input}
    light.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                       for t in graph.initializer if t.name not in declared)
    return light


def _type_from_fact(fact):
    from onnx import helper

    from .types import DATUM_TO_ONNX

    if fact is None or fact.kind is not None or fact.dtype is None:
        return None
    shape = None if fact.shape.open else [d if isinstance(d, int) else None for d in fact.shape.dims]
    return helper.make_tensor_type_proto(DATUM_TO_ONNX[fact.dtype], shape)
