"""Layered (top-down) layout of a DAG with linear constraints solved by Cassowary (kiwisolver).

The steps are those of a Sugiyama layout, as TFDeploy's visualiser did:

1. **layers**: each item goes one row below the lowest of its predecessors, visiting the
   items in evaluation order (an edge to an earlier item is drawn upwards and does not
   constrain); what depends on no input (constants and their chains) sinks to just above
   its first consumer;
2. **long edges** get one small placeholder per row they cross (one chain per source,
   shared by all its consumers), so they are routed around items rather than through them
   (edges longer than ``MAX_CHAIN_ROWS`` rows run down a lane right of the rows instead);
3. **ordering within rows**: barycentre sweeps, down then up, reduce crossings;
4. **positions**: a Cassowary problem. Required constraints keep the items of a row apart
   and off negative x; soft constraints ask every edge to be vertical (strongly within
   placeholder chains so long edges stay straight, weakly at their ends so the main path
   stays straight too) and everything to sit left.

Rows are stored with the items' x centres; the page stacks rows with the heights the
current collapse state gives (expanded groups are taller) and only shifts columns apart.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import TractileError

#: horizontal gap between neighbours in a row, and width of a long edge's placeholder
GAP = 28.0
PLACEHOLDER_WIDTH = 14.0
#: items solved together, and rows beyond them that take part in their solve
BAND_ITEMS = 120
#: longer edges get no placeholders (they run down a lane beside the rows)
MAX_CHAIN_ROWS = 40
#: how much the ends of a placeholder chain pull (less than node-to-node edges: the main
#: path stays straight and long edges bend around it)
END_LINK = 500.0
LOOK_AHEAD_ROWS = 3


@dataclass
class Item:
    """Something to place: a node or a collapsed group (``order`` is its evaluation position)."""

    key: str
    width: float
    order: float


@dataclass
class LayeredLayout:
    """The solved layout of one set of items.

    ``rows`` lists item keys (placeholders included) left to right, row by row; ``x`` maps
    every key to its centre; ``rank`` maps items to their row; ``chains[source][row]`` is
    the placeholder that the long edges leaving ``source`` pass through in ``row``; edges
    too long for placeholders, and edges going up, run along a lane right of the rows,
    ``lanes[source]`` its index.
    """

    rows: list[list[str]]
    x: dict[str, float]
    rank: dict[str, int]
    chains: dict[str, dict[int, str]] = field(default_factory=dict)
    placeholders: set[str] = field(default_factory=set)
    lanes: dict[str, int] = field(default_factory=dict)

    @property
    def width(self) -> float:
        widths = [self.x[k] for row in self.rows for k in row]
        return max(widths, default=0.0)

    def as_dict(self) -> dict:
        return {"rows": self.rows, "x": {k: round(v, 1) for k, v in self.x.items()},
                "chains": {k: {str(r): d for r, d in v.items()} for k, v in self.chains.items()},
                "placeholders": sorted(self.placeholders), "lanes": self.lanes}


def _kiwi():
    try:
        import kiwisolver
    except ImportError:
        raise TractileError("laying out graphs needs kiwisolver: pip install 'tractile[viz]'") from None
    return kiwisolver


def assign_ranks(items: Sequence[Item], edges: Sequence[tuple[str, str]],
                 anchors: set[str] | None = None) -> dict[str, int]:
    """Rows by evaluation order: each item one row below its lowest predecessor.

    Items that depend on no anchor (a model input, or a value coming from outside the
    group laid out) -- constants and what is computed from them only -- then sink to just
    above their first consumer. ``anchors`` None anchors every item without predecessors.
    """
    order = {item.key: item.order for item in items}
    predecessors: dict[str, list[str]] = {item.key: [] for item in items}
    successors: dict[str, list[str]] = {item.key: [] for item in items}
    for source, target in edges:
        if order[source] < order[target]:
            predecessors[target].append(source)
            successors[source].append(target)
    by_order = sorted(items, key=lambda item: item.order)
    rank: dict[str, int] = {}
    floating: set[str] = set()
    for item in by_order:
        key = item.key
        rank[key] = max((rank[p] + 1 for p in predecessors[key]), default=0)
        anchored = not predecessors[key] if anchors is None else key in anchors
        if not anchored and all(p in floating for p in predecessors[key]):
            floating.add(key)
    for item in reversed(by_order):
        if item.key in floating and successors[item.key]:
            rank[item.key] = min(rank[s] for s in successors[item.key]) - 1
    return rank


def _order_rows(rows: list[list[str]], up: dict[str, list[str]], down: dict[str, list[str]], sweeps: int) -> None:
    """Barycentre heuristic, in place: sort each row by the mean position of its neighbours."""
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        sequence = range(1, len(rows)) if downward else range(len(rows) - 2, -1, -1)
        for index in sequence:
            reference = rows[index - 1] if downward else rows[index + 1]
            position = {key: i for i, key in enumerate(reference)}
            neighbours = up if downward else down
            keys = []
            for i, key in enumerate(rows[index]):
                linked = [position[n] for n in neighbours.get(key, ()) if n in position]
                keys.append((sum(linked) / len(linked) if linked else float(i), i))
            rows[index] = [key for _, key in sorted(zip(keys, rows[index]))]


def layered_layout(items: Sequence[Item], edges: Sequence[tuple[str, str]], gap: float = GAP,
                   sweeps: int = 6, anchors: set[str] | None = None) -> LayeredLayout:
    """Lay ``items`` out in rows; ``edges`` are (source key, target key) pairs between them;
    ``anchors`` are the items fed from outside (see :func:`assign_ranks`)."""
    kiwi = _kiwi()
    widths = {item.key: item.width for item in items}
    order = {item.key: float(item.order) for item in items}
    edges = [(s, t) for s, t in dict.fromkeys(edges) if s != t and s in widths and t in widths]
    rank = assign_ranks(items, edges, anchors)
    consumers: dict[str, list[str]] = {}
    for source, target in edges:
        if rank[source] < rank[target] <= rank[source] + MAX_CHAIN_ROWS:
            consumers.setdefault(source, []).append(target)
    up: dict[str, list[str]] = {}
    down: dict[str, list[str]] = {}
    links: list[tuple[str, str, float]] = []  # (upper, lower, strength of "draw me vertical")

    def link(upper: str, lower: str, strength: float) -> None:
        down.setdefault(upper, []).append(lower)
        up.setdefault(lower, []).append(upper)
        links.append((upper, lower, strength))

    chains: dict[str, dict[int, str]] = {}
    for source, targets in consumers.items():
        deepest = max(rank[t] for t in targets)
        chain: dict[int, str] = {}
        previous = source
        for row in range(rank[source] + 1, deepest):
            key = f"{source}~{row}"
            chain[row] = key
            widths[key] = PLACEHOLDER_WIDTH
            order[key] = order[source] + 0.5
            rank[key] = row
            link(previous, key, kiwi.strength.strong if previous != source else END_LINK)
            previous = key
        for target in targets:
            above = chain.get(rank[target] - 1, source)
            link(above, target, END_LINK if above != source else kiwi.strength.medium)
        if chain:
            chains[source] = chain
    lanes: dict[str, int] = {}
    for source, target in edges:
        too_far = rank[target] > rank[source] + MAX_CHAIN_ROWS
        if (too_far or rank[target] <= rank[source]) and source not in lanes:
            lanes[source] = len(lanes)
    rows: list[list[str]] = [[] for _ in range(max(rank.values(), default=-1) + 1)]
    for key in sorted(rank, key=lambda k: order[k]):
        rows[rank[key]].append(key)
    _order_rows(rows, up, down, sweeps)

    x = _solve_positions(kiwi, rows, widths, links, gap)
    placeholders = {key for chain in chains.values() for key in chain.values()}
    return LayeredLayout(rows, x, {k: v for k, v in rank.items() if k not in placeholders}, chains,
                         placeholders, lanes)


def _solve_positions(kiwi, rows: list[list[str]], widths: dict[str, float],
                     links: list[tuple[str, str, float]], gap: float) -> dict[str, float]:
    """x centres from Cassowary, band by band of rows (a band's solve costs grow fast with its
    size). Rows already placed are constants for the next band, which also looks a few rows
    ahead so that what comes next pulls on the band's last rows."""
    row_of = {key: index for index, row in enumerate(rows) for key in row}
    links_below: dict[int, list[tuple[str, str, float]]] = {}
    for link in links:
        links_below.setdefault(row_of[link[1]], []).append(link)
    placed: dict[str, float] = {}
    start = 0
    while start < len(rows):
        end, size = start, 0
        while end < len(rows) and (size < BAND_ITEMS or end == start):
            size += len(rows[end])
            end += 1
        stop = min(len(rows), end + LOOK_AHEAD_ROWS)
        solver = kiwi.Solver()
        x = {key: kiwi.Variable(key) for row in rows[start:stop] for key in row}
        for row in rows[start:stop]:
            for left, right in zip(row, row[1:]):
                solver.addConstraint(x[right] - x[left] >= (widths[left] + widths[right]) / 2 + gap)
            solver.addConstraint(x[row[0]] >= widths[row[0]] / 2)
            solver.addConstraint((x[row[0]] == widths[row[0]] / 2) | kiwi.strength.weak)
        for index in range(start, stop):
            for upper, lower, strength in links_below.get(index, ()):
                above = placed[upper] if upper in placed else x[upper]
                solver.addConstraint((x[lower] == above) | strength)
        solver.updateVariables()
        for row in rows[start:end]:
            for key in row:
                placed[key] = x[key].value()
        start = end
    return placed


__all__ = ["Item", "LayeredLayout", "layered_layout", "assign_ranks", "GAP", "PLACEHOLDER_WIDTH"]
