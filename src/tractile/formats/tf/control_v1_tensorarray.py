"""TensorArrayV3 and its ops turned into TensorList ops (see ``control_v1``).

A TensorArray is a resource handle plus a float *flow* that orders its reads and writes. A
TensorList is a variant value, so each array op takes the list where it took the flow, returns
the next list where it returned the next flow, and the handle wires (through Enter, Switch...)
disappear. ``TensorArrayV3`` becomes ``TensorListReserve`` under the same name: its output 0 is the
list, what read the flow (output 1) reads that. A scatter of ``range(0, n)`` into a fresh array is
``TensorListFromTensor``, a gather of ``range(0, size)`` is ``TensorListStack``; other index sets
use ``TensorListScatterIntoExistingList`` and ``TensorListGather``.
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOpError
from .control_v1_graph import DT_INT32, DT_RESOURCE, DT_VARIANT, PASS_THROUGH, Graph, canonical, split_ref, tensor

DT_INT64 = 9
#: ops that make a new list value; the flow they stand for must change type to variant downstream
LIST_MAKERS = {"TensorListReserve", "TensorListSetItem", "TensorListFromTensor", "TensorListScatterIntoExistingList",
               "TensorListSplit"}


def tensor_arrays_to_lists(graph: Graph, node_cls) -> set[str]:
    """Rewrite every TensorArray of ``graph`` as a TensorList value; returns the nodes it added or
    changed that may end up unused (constants, reserved lists a scatter replaced)."""
    nodes = graph.nodes
    arrays = [name for name, node in nodes.items() if node.op == "TensorArrayV3"]
    users = [name for name, node in nodes.items() if node.op.startswith("TensorArray") and node.op != "TensorArrayV3"]
    if not arrays and not users:
        return set()
    handles = _handle_nodes(graph, arrays)
    added: set[str] = set()

    def shape_const(owner: str, shape) -> str:
        dims = -1 if shape is None or shape.unknown_rank else [d.size for d in shape.dim]
        name = graph.unique_name(f"{owner}/element_shape")
        nodes[name] = _int_const(node_cls, name, dims, DT_INT32)
        added.add(name)
        return name

    for name in users:
        node = nodes[name]
        array = _source_array(graph, node.input[0], arrays, name)
        rewrite = REWRITES.get(node.op)
        if rewrite is None:
            raise UnsupportedOpError(f"{node.op} (node {name!r}) has no TensorList equivalent tractile knows",
                                     [("", node.op, 0, [name])])
        rewrite(graph, node, nodes[array], shape_const, added, node_cls)
    graph.remove([name for name in users if nodes[name].op == "TensorArrayCloseV3"], control_to=None)
    graph.remove(handles, control_to=None)
    for name in arrays:
        node = nodes[name]
        size = canonical(node.input[0])
        dtype, shape = node.attr["dtype"].type, node.attr["element_shape"].shape
        controls = [i for i in node.input if i.startswith("^")]
        node.op = "TensorListReserve"
        node.attr.clear()
        node.attr["element_dtype"].type, node.attr["shape_type"].type = dtype, DT_INT32
        del node.input[:]
        node.input.extend([shape_const(name, shape), size] + controls)
        for other in nodes.values():
            for k, ref in enumerate(other.input):
                if canonical(ref) == tensor(name, 1):
                    other.input[k] = tensor(name)
    _flows_to_variant(graph)
    return added | set(arrays)


def _handle_nodes(graph: Graph, arrays: list[str]) -> set[str]:
    """The nodes that forward a TensorArray handle (Enter, Switch, Identity... of output 0)."""
    handles: set[str] = set()
    sources = {tensor(a) for a in arrays}
    changed = True
    while changed:
        changed = False
        for name, node in graph.nodes.items():
            if name in handles or node.op not in PASS_THROUGH or not node.input:
                continue
            source, index = split_ref(node.input[0])
            if tensor(source, index) in sources or (source in handles and index >= 0):
                handles.add(name)
                changed = True
    return handles


def _source_array(graph: Graph, ref: str, arrays: list[str], where: str) -> str:
    seen = set()
    while True:
        source, _ = split_ref(ref)
        node = graph.nodes.get(source)
        if node is None or source in seen:
            break
        if source in arrays:
            return source
        if node.op not in PASS_THROUGH:
            break
        seen.add(source)
        ref = node.input[0]
    raise UnsupportedOpError(f"node {where!r}: its TensorArray handle does not come from a TensorArrayV3")


def _int_const(node_cls, name: str, values, dtype: int):
    node = node_cls()
    node.name, node.op = name, "Const"
    node.attr["dtype"].type = dtype
    proto = node.attr["value"].tensor
    proto.dtype = dtype
    if isinstance(values, list):
        proto.tensor_shape.dim.add().size = len(values)
    else:
        values = [values]
    (proto.int64_val if dtype == DT_INT64 else proto.int_val).extend(values)
    return node


def _const_int(graph: Graph, ref: str) -> int | None:
    node = graph.nodes.get(split_ref(ref)[0])
    if node is None or node.op != "Const":
        return None
    proto = node.attr["value"].tensor
    if proto.int_val:
        return int(proto.int_val[0])
    if proto.int64_val:
        return int(proto.int64_val[0])
    if proto.tensor_content and proto.dtype in (DT_INT32, DT_INT64):
        return int(np.frombuffer(proto.tensor_content, np.int32 if proto.dtype == DT_INT32 else np.int64)[0])
    return None


def _range_limit(graph: Graph, ref: str) -> str | None:
    """The limit of ``ref`` when it is ``Range(0, limit, 1)``."""
    node = graph.nodes.get(split_ref(ref)[0])
    if node is None or node.op != "Range":
        return None
    start, limit, delta = graph.data_inputs(node)
    if _const_int(graph, start) == 0 and _const_int(graph, delta) == 1:
        return limit
    return None


def _become(node, op: str, inputs: list[str], **attrs) -> None:
    controls = [i for i in node.input if i.startswith("^")]
    node.op = op
    del node.input[:]
    node.input.extend(inputs + controls)
    kept = {k: node.attr[k].type for k in ("T", "dtype") if k in node.attr}
    node.attr.clear()
    for key, value in attrs.items():
        if key == "num_elements":
            node.attr[key].i = value
        else:
            node.attr[key].type = kept.get(value, value) if isinstance(value, str) else value


def _write(graph, node, array, shape_const, added, node_cls) -> None:
    _, index, value, flow = node.input[:4]
    _become(node, "TensorListSetItem", [flow, index, value], element_dtype="T")


def _read(graph, node, array, shape_const, added, node_cls) -> None:
    _, index, flow = node.input[:3]
    shape = shape_const(node.name, array.attr["element_shape"].shape)
    _become(node, "TensorListGetItem", [flow, index, shape], element_dtype="dtype")


def _scatter(graph, node, array, shape_const, added, node_cls) -> None:
    _, indices, value, flow = node.input[:4]
    if canonical(flow) == tensor(array.name, 1) and _range_limit(graph, indices) is not None:
        shape = shape_const(node.name, array.attr["element_shape"].shape)
        _become(node, "TensorListFromTensor", [value, shape], element_dtype="T", shape_type=DT_INT32)
    else:
        _become(node, "TensorListScatterIntoExistingList", [flow, value, indices], element_dtype="T")


def _gather(graph, node, array, shape_const, added, node_cls) -> None:
    _, indices, flow = node.input[:3]
    shape = node.attr["element_shape"].shape
    if shape.unknown_rank:
        shape = array.attr["element_shape"].shape
    shape_name = shape_const(node.name, shape)
    limit = _range_limit(graph, indices)
    limit_node = graph.nodes.get(split_ref(limit)[0]) if limit else None
    whole = limit is not None and (
        (limit_node is not None and limit_node.op == "TensorArraySizeV3"
         and canonical(limit_node.input[1]) == canonical(flow))
        or (canonical(limit) == canonical(array.input[0]) and not array.attr["dynamic_size"].b))
    if whole:
        _become(node, "TensorListStack", [flow, shape_name], element_dtype="dtype", num_elements=-1)
    else:
        _become(node, "TensorListGather", [flow, indices, shape_name], element_dtype="dtype")


def _size(graph, node, array, shape_const, added, node_cls) -> None:
    _become(node, "TensorListLength", [node.input[1]])


def _concat(graph, node, array, shape_const, added, node_cls) -> None:
    shape = shape_const(node.name, array.attr["element_shape"].shape)
    leading = graph.unique_name(f"{node.name}/leading_dims")
    graph.nodes[leading] = _int_const(node_cls, leading, [], DT_INT64)
    added.add(leading)
    _become(node, "TensorListConcatV2", [node.input[1], shape, leading], element_dtype="dtype", shape_type=DT_INT32)


def _split(graph, node, array, shape_const, added, node_cls) -> None:
    _, value, lengths = node.input[:3]
    shape = shape_const(node.name, array.attr["element_shape"].shape)
    _become(node, "TensorListSplit", [value, shape, lengths], element_dtype="T", shape_type=DT_INT32)


def _close(graph, node, array, shape_const, added, node_cls) -> None:
    """Removed with the handles."""


REWRITES = {"TensorArrayWriteV3": _write, "TensorArrayReadV3": _read, "TensorArrayScatterV3": _scatter,
            "TensorArrayGatherV3": _gather, "TensorArraySizeV3": _size, "TensorArrayConcatV3": _concat,
            "TensorArraySplitV3": _split, "TensorArrayCloseV3": _close}


def _flows_to_variant(graph: Graph) -> None:
    """Give the nodes that forward a list (Enter, Merge, Switch, Exit...) the variant type."""
    lists = {name for name, node in graph.nodes.items() if node.op in LIST_MAKERS}
    changed = True
    while changed:
        changed = False
        for name, node in graph.nodes.items():
            if name in lists or node.op not in PASS_THROUGH:
                continue
            if any(split_ref(i)[0] in lists and split_ref(i)[1] >= 0 for i in node.input[:2]):
                if node.attr["T"].type == DT_RESOURCE:
                    continue
                node.attr["T"].type = DT_VARIANT
                lists.add(name)
                changed = True
