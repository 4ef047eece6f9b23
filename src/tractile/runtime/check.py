"""Debug check: every value a step produces matches the fact analysis gave its wire."""
from __future__ import annotations

import numpy as np

from ..datum import DatumType
from ..dim import TDim
from ..errors import RunError, node_label


def check_step_outputs(step, results, bindings: dict[str, int]) -> None:
    """Raise a RunError naming the node if a result contradicts its outlet's fact.

    Symbols met for the first time (data-dependent dims) are bound from the result.
    """
    node = step.node
    if len(results) != len(node.outputs):
        raise RunError(f"{node_label(node)}: produced {len(results)} values for {len(node.outputs)} outputs")
    for slot, (outlet, value) in enumerate(zip(node.outputs, results)):
        fact = outlet.fact
        if fact.kind != "tensor":
            from .state import check_container_value

            check_container_value(fact, value, f"{node_label(node)}: output {slot}")
            continue
        if not isinstance(value, np.ndarray):
            raise RunError(f"{node_label(node)}: output {slot} is a {type(value).__name__}, not an array")
        expected = fact.dtype.np
        if value.dtype != expected and not (fact.dtype == DatumType.STRING and value.dtype.kind in "OUS"):
            raise RunError(f"{node_label(node)}: output {slot} has datum type {value.dtype}, fact says {fact}")
        if not fact.has_rank:
            if fact.max_rank is not None and value.ndim > fact.max_rank:
                raise RunError(f"{node_label(node)}: output {slot} has shape {value.shape}, fact says {fact}")
            continue
        if value.ndim != len(fact.shape):
            raise RunError(f"{node_label(node)}: output {slot} has shape {value.shape}, fact says {fact}")
        for axis, (dim, actual) in enumerate(zip(fact.shape, value.shape)):
            if isinstance(dim, TDim):
                unbound = dim.symbols() - bindings.keys()
                if len(unbound) == 1 and len(dim.terms) == 1 and dim.terms[0][1] == 1 \
                        and dim.terms[0][0] == (next(iter(unbound)),):
                    bindings[next(iter(unbound))] = actual
                    continue
                if unbound:
                    continue
                dim = dim.eval(bindings)
            if dim != actual:
                raise RunError(f"{node_label(node)}: output {slot} has shape {value.shape}, fact says {fact} "
                               f"(axis {axis}; bindings {bindings})")
