"""Constant folding, with TFDeploy's size heuristic."""
from __future__ import annotations

import numpy as np

from ..graph import Node
from ..infer.analyse import FOLD_ALLOWANCE
from ..ops.io import Const, Source
from ..patch import ModelPatch


def fold_budget(input_values: list[np.ndarray]) -> int:
    """Elements a folded result may hold: never much more than the constants it reads."""
    return max(2 * sum(int(v.size) for v in input_values), FOLD_ALLOWANCE)


def fold_constants(model, node: Node) -> ModelPatch | None:
    """Replace a stateless node whose inputs are all constant by its (not too large) result."""
    op = node.op
    if isinstance(op, (Const, Source)) or not op.is_stateless or op.is_random or not node.inputs:
        return None
    values = []
    for outlet in node.inputs:
        konst = model.outlet_fact(outlet).konst
        if konst is None:
            return None
        values.append(konst)
    budget = fold_budget(values)
    for outlet in node.outputs:
        shape = outlet.fact.concrete_shape()
        if shape is None or int(np.prod(shape, dtype=np.int64)) > budget:
            return None
    results = op.eval(values)
    return ModelPatch.replace_by_const(model, node, [np.asarray(r) for r in results], f"fold {node.name}")
