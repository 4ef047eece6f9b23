"""A model as one self-contained, interactive HTML page (``tractile dump --html``).

The page draws the graph top-down. Nodes are grouped by name scope (``block3/conv/...``)
into boxes that collapse and expand on a click; clicking a node shows its attributes,
facts and constant inputs. Constants are not drawn as nodes: their summaries are part of
the nodes they feed. Every group's layout is solved here, once, with Cassowary
(:mod:`tractile.tools.layout`); the page only stacks the precomputed rows, so it stays
responsive on graphs of thousands of nodes. Nothing is fetched from the network.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TractileError
from ..graph import OutletId
from ..ops.io import Const
from .html_page import render_page
from .layout import Item, layered_layout

CHAR_WIDTH = 6.9
NODE_MIN_WIDTH, NODE_MAX_WIDTH = 84.0, 250.0
MAX_LABEL_CHARS = int((NODE_MAX_WIDTH - 18) / CHAR_WIDTH)


@dataclass
class PageSummary:
    """What was written: counts of drawn nodes, edges and groups."""

    path: str
    nodes: int
    edges: int
    groups: int
    bytes: int


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return summarize_value(value)
    return str(value)


def summarize_value(value: Any) -> str:
    """A line about a constant: shape, type, statistics and the first values."""
    array = np.asarray(value)
    shape = "x".join(map(str, array.shape)) or "scalar"
    text = f"{shape} {array.dtype}"
    if not array.size:
        return text + " (empty)"
    flat = array.ravel()
    if array.dtype.kind in "fiub":
        numbers = flat.astype(np.float64)
        finite = numbers[np.isfinite(numbers)]
        if finite.size:
            text += f", min {finite.min():.4g} max {finite.max():.4g} mean {finite.mean():.4g}"
        head = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in flat[:6].tolist())
    else:
        head = ", ".join(repr(v)[:24] for v in flat[:4].tolist())
    return text + f": [{head}{', ...' if flat.size > 6 else ''}]"


def _fit(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _width(*texts: str) -> float:
    longest = max(len(_fit(t)) for t in texts)
    return float(min(NODE_MAX_WIDTH, max(NODE_MIN_WIDTH, longest * CHAR_WIDTH + 18)))


#: the deepest scope drawn as nested groups (deeper parts of a name stay in its deepest group)
MAX_SCOPE_DEPTH = 32


def scope_of(node) -> list[str]:
    """The name scope of a node: the ``/``-separated parts of its name but the last (TFLite's
    fused names ``a/b/MatMul;a/b/Relu`` count by their first name), at most MAX_SCOPE_DEPTH."""
    return [part for part in node.name.split(";")[0].split("/")[:-1] if part][:MAX_SCOPE_DEPTH]


class _Group:
    __slots__ = ("path", "children", "groups", "parent", "index")

    def __init__(self, path: tuple[str, ...], parent: _Group | None):
        self.path = path
        self.parent = parent
        self.children: list[int] = []  # node ids directly inside
        self.groups: dict[str, _Group] = {}
        self.index = -1

    def count(self) -> int:
        return len(self.children) + sum(g.count() for g in self.groups.values())


def _group_tree(paths: dict[int, list[str]]) -> tuple[_Group, dict[int, _Group]]:
    """Groups by scope; scopes shared by every node are dropped, one-member groups dissolved."""
    while paths and all(paths.values()) and len({p[0] for p in paths.values()}) == 1:
        paths = {node: path[1:] for node, path in paths.items()}
    root = _Group((), None)
    for node, path in paths.items():
        group = root
        for part in path:
            group = group.groups.setdefault(part, _Group(group.path + (part,), group))
        group.children.append(node)

    def dissolve(group: _Group) -> None:
        for name, child in list(group.groups.items()):
            dissolve(child)
            if child.count() < 2 or (not child.children and len(child.groups) == 1):
                del group.groups[name]
                group.children.extend(child.children)
                for grandchild in child.groups.values():
                    grandchild.parent = group
                    group.groups["/".join(grandchild.path)] = grandchild
    dissolve(root)
    owner: dict[int, _Group] = {}
    stack = [root]
    while stack:
        group = stack.pop()
        for node in group.children:
            owner[node] = group
        stack.extend(group.groups.values())
    return root, owner


def graph_page_data(model, title: str = "model", stage: str = "") -> dict[str, Any]:
    """Everything the page shows, with every group's layout solved."""
    order = model.eval_order() if model.outputs else list(range(len(model.nodes)))
    order += [n.id for n in model.nodes if n.id not in set(order)]
    position = {node_id: index for index, node_id in enumerate(order)}
    outputs = set(model.outputs)
    hidden = {n.id for n in model.nodes
              if isinstance(n.op, Const) and not any(OutletId(n.id, s) in outputs for s in range(len(n.outputs)))}
    shown = [model.nodes[i] for i in order if i not in hidden]
    root, owner = _group_tree({node.id: scope_of(node) for node in shown})
    groups: list[_Group] = []
    stack = [root]
    while stack:
        group = stack.pop(0)
        group.index = len(groups)
        groups.append(group)
        stack.extend(sorted(group.groups.values(), key=lambda g: _natural(g.path[-1])))

    def chain(node_id: int) -> list[_Group]:
        found = []
        group = owner[node_id]
        while group is not None:
            found.append(group)
            group = group.parent
        return found[::-1]

    ancestry = {node.id: chain(node.id) for node in shown}
    nodes, edges = [], []
    for node in shown:
        nodes.append(_node_data(model, node, ancestry[node.id][-1].index, hidden, outputs))
        drawn = [outlet for outlet in node.inputs if outlet.node not in hidden]
        for port, outlet in enumerate(drawn):
            edge = _edge_data(model, outlet, node.id, ancestry)
            edges.append(edge + [outlet.slot, len(model.nodes[outlet.node].outputs), port, len(drawn)])
    first = {}
    for group in reversed(groups):
        first[group.index] = min([position[n] for n in group.children]
                                 + [first[g.index] for g in group.groups.values()], default=0)
    anchors = _anchors(model, shown, ancestry, edges)
    layouts = _layouts(groups, nodes, edges, position, first, anchors)
    return {
        "title": title, "stage": stage, "kind": type(model).__name__,
        "inputs": [model.nodes[o.node].name for o in model.inputs],
        "outputs": [{"name": model.outlet_label(o), "node": o.node} for o in model.outputs],
        "nodes": nodes, "edges": edges,
        "groups": [{"id": g.index, "path": "/".join(g.path), "label": g.path[-1] if g.path else "",
                    "parent": g.parent.index if g.parent else None, "depth": _depth(g),
                    "count": g.count(), "w": _width(g.path[-1] if g.path else "", f"{g.count()} nodes"),
                    "layout": layouts[g.index]} for g in groups],
    }


def _natural(text: str) -> list:
    """Sort key putting ``block2`` before ``block10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)]


def _depth(group: _Group) -> int:
    depth = 0
    while group.parent is not None:
        depth += 1
        group = group.parent
    return depth


def _node_data(model, node, group: int, hidden: set[int], outputs: set[OutletId]) -> dict[str, Any]:
    try:
        attributes = _jsonable(node.op.attributes()) if hasattr(node.op, "attributes") else {}
    except Exception:
        attributes = {}
    inputs = []
    for outlet in node.inputs:
        item = {"fact": str(model.outlet_fact(outlet)), "wire": model.outlet_label(outlet)}
        if outlet.node in hidden:
            item["const"] = summarize_value(model.nodes[outlet.node].op.value)
        else:
            item["from"] = outlet.node
        inputs.append(item)
    node_outputs = []
    for slot, outlet in enumerate(node.outputs):
        wire = OutletId(node.id, slot)
        node_outputs.append({"fact": str(outlet.fact), "wire": model.outlet_label(wire),
                             "to": sorted({i.node for i in outlet.successors}), "output": wire in outputs})
    if isinstance(node.op, Const):
        attributes = {"value": summarize_value(node.op.value)}
    label = node.name.split(";")[0].rsplit("/", 1)[-1]
    return {"id": node.id, "name": node.name, "label": _fit(label), "op": node.op.name, "group": group,
            "attrs": attributes, "inputs": inputs, "outputs": node_outputs, "w": _width(label, node.op.name)}


def _edge_data(model, outlet: OutletId, target: int, ancestry: dict[int, list]) -> list:
    """[source, target, fact, lowest common group, source's item there, target's item there]
    (the caller appends the source's output slot and count, the target's port and count)."""
    above, below = ancestry[outlet.node], ancestry[target]
    depth = 0
    while depth < min(len(above), len(below)) and above[depth] is below[depth]:
        depth += 1
    common = above[depth - 1]
    source_item = f"g{above[depth].index}" if depth < len(above) else f"n{outlet.node}"
    target_item = f"g{below[depth].index}" if depth < len(below) else f"n{target}"
    return [outlet.node, target, str(model.outlet_fact(outlet)), common.index, source_item, target_item]


def _anchors(model, shown: list, ancestry: dict[int, list], edges: list[list]) -> dict[int, set[str]]:
    """Per group, its items that hold a model input or are fed from outside the group."""
    from ..ops.io import Source

    anchors: dict[int, set[str]] = {}

    def anchor_path(node_id: int, below: int) -> None:
        chain = ancestry[node_id]
        for depth in range(below, len(chain)):
            item = f"g{chain[depth + 1].index}" if depth + 1 < len(chain) else f"n{node_id}"
            anchors.setdefault(chain[depth].index, set()).add(item)

    for node in shown:
        if isinstance(node.op, Source):
            anchor_path(node.id, 0)
    for edge in edges:
        chain = ancestry[edge[1]]
        common = next(depth for depth, group in enumerate(chain) if group.index == edge[3])
        anchor_path(edge[1], common + 1)
    return anchors


def _layouts(groups: list[_Group], nodes: list[dict], edges: list[list], position: dict[int, int],
             first: dict[int, int], anchors: dict[int, set[str]]) -> dict[int, dict]:
    widths = {f"n{n['id']}": n["w"] for n in nodes}
    by_group: dict[int, list[tuple[str, str]]] = {}
    for edge in edges:
        by_group.setdefault(edge[3], []).append((edge[4], edge[5]))
    layouts = {}
    for group in groups:
        items = [Item(f"n{n}", widths[f"n{n}"], position[n]) for n in group.children]
        items += [Item(f"g{g.index}", _width(g.path[-1], f"{g.count()} nodes"), first[g.index])
                  for g in group.groups.values()]
        layout = layered_layout(items, by_group.get(group.index, []), anchors=anchors.get(group.index, set()))
        layouts[group.index] = layout.as_dict()
    return layouts


def render_html(data: dict[str, Any]) -> str:
    """The page: the template with its style, script and ``data`` inlined."""
    return render_page("graph.html", data, str(data.get("title", "model")),
                       {"/*__STYLE__*/": "graph.css", "/*__GEOMETRY__*/": "geometry.js", "/*__SCRIPT__*/": "graph.js"})


def write_html(model, path: str | Path, title: str | None = None, stage: str = "") -> PageSummary:
    """Write the interactive page of ``model`` to ``path``."""
    data = graph_page_data(model, title or str(path), stage)
    page = render_html(data)
    try:
        Path(path).write_text(page, encoding="utf-8")
    except OSError as error:
        raise TractileError(f"cannot write {path}: {error.strerror or error}") from None
    return PageSummary(str(path), len(data["nodes"]), len(data["edges"]), len(data["groups"]) - 1,
                       len(page.encode("utf-8")))


__all__ = ["graph_page_data", "render_html", "write_html", "summarize_value", "scope_of", "PageSummary"]
