"""A chain of Mul and Add by constants (``((x * a + b) * c + d) ...``) becomes one Mul and
one Add, in one rewrite however long the chain: exporters leave such chains (normalisations,
rescalings), and rewriting them a pair at a time would take a round of passes per link."""
from __future__ import annotations

import numpy as np

from ..graph import OutletId
from ..ops.binary import Add, Mul
from ..patch import ModelPatch


def _affine_link(model, node):
    """(data input, constant, "mul" or "add") of a float Mul/Add by a constant that keeps the
    data's shape; else None."""
    if type(node.op) not in (Add, Mul) or not node.op.is_plain or len(node.inputs) != 2:
        return None
    out = node.outputs[0].fact
    if not out.dtype.is_float:
        return None
    for slot in (0, 1):
        data, other = model.outlet_fact(node.inputs[slot]), model.outlet_fact(node.inputs[1 - slot])
        if other.konst is not None and data.konst is None and data.shape == out.shape:
            if np.ndim(other.konst) > len(out.shape):
                return None
            return node.inputs[slot], np.asarray(other.konst), "mul" if type(node.op) is Mul else "add"
    return None


def fold_affine_chain(model, node) -> ModelPatch | None:
    """At the last link of a chain of at least three affine links, the whole chain as x * s + t."""
    link = _affine_link(model, node)
    if link is None:
        return None
    successors = node.outputs[0].successors
    if len(successors) == 1 and OutletId(node.id, 0) not in model.outputs and \
            _affine_link(model, model.nodes[successors[0].node]) is not None:
        return None  # not the end of the chain
    chain = [(node, link)]
    data = link[0]
    while True:
        producer = model.nodes[data.node]
        above = _affine_link(model, producer)
        if above is None or len(producer.outputs[0].successors) != 1 or data in model.outputs:
            break
        chain.append((producer, above))
        data = above[0]
    if len(chain) < 3:
        return None
    chain.reverse()  # from the data's side down to ``node``
    dtype = node.outputs[0].fact.dtype.np
    windows, folded = _windows(chain, dtype)
    if not any(combined is not None and len(window) > 2 for window, combined in zip(windows, folded)):
        return None  # nothing gets shorter
    patch = ModelPatch(model, f"fold the {len(chain)} Mul/Add by constants ending at {node.name}")
    current = patch.tap(data)
    for window, combined in zip(windows, folded):
        last = window[-1][0]
        if combined is None:  # this stretch overflows when folded: kept as it is
            for member, (_, constant, kind) in window:
                op = Mul() if kind == "mul" else Add()
                current = patch.wire_node(member.name, op, [current, patch.add_const(f"{member.name}.c",
                                                                                    constant)])[0]
            continue
        scale, shift = combined
        current = patch.wire_node(f"{last.name}.scale", Mul(), [current, patch.add_const(f"{last.name}.s", scale)])[0]
        current = patch.wire_node(last.name, Add(), [current, patch.add_const(f"{last.name}.t", shift)])[0]
    patch.shunt(OutletId(node.id, 0), current)
    for member, _ in chain:
        patch.obliterate(member.id)
    return patch


#: links folded together at most: long chains fold in stretches
WINDOW = 64


def _windows(chain, dtype) -> tuple[list, list]:
    """The chain cut into stretches of at most ``WINDOW`` links, each as long as it folds
    without overflowing (a stretch that would overflow ends before the link that would make it
    so, and folds where it can), with each stretch's (scale, shift), or None for a single link
    that overflows alone (kept as it is)."""
    windows: list = []
    folded: list = []
    start = 0
    while start < len(chain):
        scale, shift = np.ones((), dtype), np.zeros((), dtype)
        end = start
        with np.errstate(all="ignore"):
            while end < len(chain) and end - start < WINDOW:
                _, (_, constant, kind) = chain[end]
                if kind == "mul":
                    next_scale, next_shift = scale * constant, shift * constant
                else:
                    next_scale, next_shift = scale, shift + constant
                if not (np.all(np.isfinite(next_scale)) and np.all(np.isfinite(next_shift))):
                    break  # folding further would turn x = 0 into 0 * inf = NaN
                scale, shift, end = next_scale, next_shift, end + 1
        if end == start:  # this link overflows by itself
            windows.append(chain[start:start + 1])
            folded.append(None)
            start += 1
            continue
        windows.append(chain[start:end])
        folded.append((scale.astype(dtype), shift.astype(dtype)))
        start = end
    return windows, folded
