"""The pass driver: applies node rewrites until none applies, checking the graph each time."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import AnalysisError, UnknownRankError, with_node_context
from ..graph import Node
from ..patch import ModelPatch, _Obliterated

if TYPE_CHECKING:
    from ..model import TypedModel

#: a node pass looks at one node and may return a patch
NodePass = Callable[["TypedModel", Node], "ModelPatch | None"]


def run_passes(model, passes: Sequence[tuple[str, NodePass]], max_rounds: int = 32,
               trace: list | None = None):
    """Run ``passes`` over a compacted copy of ``model`` until a round changes nothing.

    Each round visits the nodes in evaluation order with every pass. A patch is
    applied at once, then the wiring of the nodes it touched is checked, so a faulty
    rewrite is caught where it happens; the whole graph (cycles included) once a round. ``trace``, if
    given, collects ``(pass, node, label)``.
    """
    model = model.compact()
    for _ in range(max_rounds):
        applied = 0
        order: list[int] = []
        order_applied = -1
        for pass_name, rewrite in passes:
            if order_applied != applied:  # the order changes only when a patch applies
                order, order_applied = model.eval_order(), applied
            for node_id in order:
                node = model.nodes[node_id]
                if isinstance(node.op, _Obliterated):
                    continue
                try:
                    patch = rewrite(model, node)
                except UnknownRankError:
                    patch = None  # a rewrite that needs a rank does not apply to a run-time rank
                except AnalysisError as error:
                    raise with_node_context(error, node, model.node_input_facts(node_id)) from None
                if patch is None:
                    continue
                model.check_nodes(patch.apply(model))  # the whole graph is checked once per round
                applied += 1
                if trace is not None:
                    trace.append((pass_name, node.name, patch.label))
        if not applied:
            break  # the model is as the last compaction left it
        model.check_consistency()
        model = model.compact()
    return model


def op_declutter(model, node: Node) -> ModelPatch | None:
    """The op's own ``declutter`` hook."""
    return node.op.declutter(model, node)


def op_optimize(model, node: Node) -> ModelPatch | None:
    """The op's own ``optimize`` hook."""
    return node.op.optimize(model, node)
