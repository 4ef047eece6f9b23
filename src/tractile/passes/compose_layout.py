"""Chains of Transposes and Reshapes composed into one copy.

A run of Transpose and Reshape nodes (each result read only by the next) with two Transposes or
more moves every element once when composed: the Reshapes are cut into the axes they have in
common (the *fine* axes: a Reshape only groups fine axes, a Transpose reorders the groups), and
the chain becomes a Reshape of its input to the fine axes, one Transpose of them and a Reshape to
the chain's shape. The compiler's channels-last choice makes such chains: the exit from NHWC after
the last pool, a flatten, and the transpose to time-major before a recurrent layer (a CRNN).

When the chain's result is read only as the input of a product that sums over its last axis with
constant weights (a float RNN, GRU or LSTM's ``X``, a float MatMul's ``a``), the order of the fine
axes within that last axis is free: they keep the order they have in the chain's input and the
weights are permuted to match, so that the copy moves runs as long as possible (the float sums are
then taken in another order: the compiler's rewrite, not the interpreter's).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..datum import DatumType
from ..graph import Node, OutletId
from ..ops.array import Transpose
from ..ops.matmul import MatMul
from ..ops.recurrent import Recurrent
from ..ops.shape import Reshape
from ..patch import ModelPatch


@dataclass
class FineAxes:
    """Axes of size above 1 that every step of a chain only groups or reorders: ``sizes`` by id,
    ``source`` their order in the chain's input, ``groups`` the ids each axis of the current tensor
    is made of (empty for an axis of size 1), outer first."""

    sizes: dict[int, int] = field(default_factory=dict)
    source: list[int] = field(default_factory=list)
    groups: list[list[int]] = field(default_factory=list)

    @classmethod
    def of_shape(cls, shape) -> FineAxes:
        fine = cls()
        for dim in shape:
            fine.groups.append([fine._new(dim)] if dim > 1 else [])
        fine.source = [axis for group in fine.groups for axis in group]
        return fine

    def _new(self, size: int) -> int:
        self.sizes[len(self.sizes)] = size
        return len(self.sizes) - 1

    def transpose(self, perm) -> None:
        self.groups = [self.groups[axis] for axis in perm]

    def reshape(self, shape) -> bool:
        """Regroup to ``shape``, cutting fine axes where its axes need it; False when they cannot
        be cut so (a product of sizes that no fine axis boundary matches)."""
        flat = [axis for group in self.groups for axis in group]
        groups: list[list[int]] = []
        at = 0
        for dim in shape:
            group: list[int] = []
            need = dim
            while need > 1:
                if at == len(flat):
                    return False
                axis = flat[at]
                size = self.sizes[axis]
                if need % size == 0:
                    group.append(axis)
                    need //= size
                    at += 1
                elif size % need == 0:
                    outer, inner = self._new(need), self._new(size // need)
                    flat[at:at + 1] = [outer, inner]
                    where = self.source.index(axis)
                    self.source[where:where + 1] = [outer, inner]
                    group.append(outer)
                    need = 1
                    at += 1
                else:
                    return False
            groups.append(group)
        if at != len(flat):
            return False
        self.groups = groups
        return True

    def order(self) -> list[int]:
        return [axis for group in self.groups for axis in group]

    def merged(self) -> tuple[list[int], tuple[int, ...]]:
        """The source shape with the fine axes adjacent in both orders merged, and the
        permutation of it the current tensor is."""
        order = self.order()
        runs: list[list[int]] = []
        for axis in order:
            if runs and self.source.index(axis) == self.source.index(runs[-1][-1]) + 1:
                runs[-1].append(axis)
            else:
                runs.append([axis])
        by_source = sorted(runs, key=lambda run: self.source.index(run[0]))
        shape = [int(np.prod([self.sizes[a] for a in run])) for run in by_source]
        return shape, tuple(by_source.index(run) for run in runs)


def _chain(model, node: Node) -> list[Node] | None:
    """The Transposes and Reshapes ending at ``node`` (a Transpose), first to last, with two
    Transposes or more and each result but the last read only by the next."""
    chain = [node]
    while True:
        source = model.nodes[chain[0].inputs[0].node]
        if not isinstance(source.op, (Transpose, Reshape)) or len(source.outputs) != 1 \
                or OutletId(source.id, 0) in model.outputs \
                or len(model.outlet_successors(OutletId(source.id, 0))) != 1:
            break
        if isinstance(source.op, Reshape) and model.outlet_fact(source.inputs[1]).konst is None:
            break
        chain.insert(0, source)
    while chain and not isinstance(chain[0].op, Transpose):
        chain.pop(0)
    if sum(isinstance(n.op, Transpose) for n in chain) < 2:
        return None
    facts = [model.outlet_fact(chain[0].inputs[0])] + [n.outputs[0].fact for n in chain]
    if not all(isinstance(d, int) for fact in facts for d in fact.shape) \
            or any(fact.qparams is not None and fact.qparams.axis is not None for fact in facts):
        return None  # symbolic dims, or a quantization per channel of an axis the reshapes would cut
    return chain


def _contraction(model, outlet: OutletId):
    """(node, weight slot, the weight's contracted axis) when ``outlet`` is read only as the
    input of a float product summing over its last axis with constant weights."""
    readers = model.outlet_successors(outlet)
    if len(readers) != 1 or readers[0].slot != 0 or outlet in model.outputs \
            or model.outlet_fact(outlet).dtype != DatumType.F32:
        return None
    node = model.nodes[readers[0].node]
    op = node.op
    if isinstance(op, Recurrent) and model.outlet_fact(node.inputs[1]).konst is not None:
        return node, 1, 2
    if isinstance(op, MatMul) and op.quant is None and not op.transpose_a and model.outlet_fact(outlet).rank >= 2:
        b = model.outlet_fact(node.inputs[1])
        if b.konst is not None and b.dtype == DatumType.F32 and b.qparams is None and b.rank >= 2:
            return node, 1, b.rank - 1 if op.transpose_b else b.rank - 2
    return None


def compose_layout(model, node: Node) -> ModelPatch | None:
    """A chain of Transposes and Reshapes ending at ``node`` as one Transpose between Reshapes."""
    if not isinstance(node.op, Transpose):
        return None
    chain = _chain(model, node)
    if chain is None:
        return None
    fine = FineAxes.of_shape(model.outlet_fact(chain[0].inputs[0]).shape)
    for link in chain:
        if isinstance(link.op, Transpose):
            fine.transpose(link.op._perm(len(fine.groups)))
        elif not fine.reshape(link.outputs[0].fact.shape):
            return None
    end = OutletId(node.id, 0)
    contraction = _contraction(model, end)
    weights = None
    if contraction is not None and len(fine.groups[-1]) > 1:
        before = fine.groups[-1]
        after = sorted(before, key=fine.source.index)
        if after != before:
            index = np.arange(int(np.prod([fine.sizes[a] for a in before]))).reshape([fine.sizes[a] for a in before])
            weights = index.transpose([before.index(a) for a in after]).reshape(-1)
            fine.groups[-1] = after
    shape, perm = fine.merged()
    patch = ModelPatch(model, f"{node.name}: {len(chain)} transposes and reshapes in one copy")
    x = patch.tap(chain[0].inputs[0])
    if list(model.outlet_fact(chain[0].inputs[0]).shape) != shape:
        x = patch.wire_node(f"{node.name}.fine", Reshape(), [x, patch.add_const(f"{node.name}.fine.shape",
                                                                               np.asarray(shape, np.int64))])[0]
    if perm != tuple(range(len(perm))):
        x = patch.wire_node(node.name, Transpose(perm), [x])[0]
    out = node.outputs[0].fact.shape
    if list(patch.outlet_fact(x).shape) != list(out):
        x = patch.wire_node(f"{node.name}.shape", Reshape(), [x, patch.add_const(f"{node.name}.shape.value",
                                                                                 np.asarray(out, np.int64))])[0]
    if weights is None:
        patch.shunt(end, x)
    else:
        reader, slot, axis = contraction
        w = model.outlet_fact(reader.inputs[slot])
        permuted = np.ascontiguousarray(np.take(w.konst, weights, axis=axis))
        inputs = [patch.tap(o) for o in reader.inputs]
        inputs[0] = x
        inputs[slot] = patch.add_const(f"{reader.name}.w.permuted", permuted)
        made = patch.wire_node(reader.name, reader.op, inputs)
        for at, outlet in enumerate(made):
            patch.shunt(OutletId(reader.id, at), outlet)
        patch.obliterate(reader.id)
    for link in chain:
        patch.obliterate(link.id)
    return patch
