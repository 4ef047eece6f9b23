"""Layout changes: an NHWC op put on an NCHW wire between an entrance and an exit, then the exits
moved down and cancelled against the next entrances, so that neighbouring NHWC ops share one
NHWC stretch with nothing transposed between them.

One mechanism serves two callers: the quantized ONNX islands that ``passes.qdq`` and
``passes.qlinear`` build around quantized convolutions and pools (run in ``declutter``, on
quantized wires only: :func:`cancel_quantized`, :func:`sink_quantized`, :func:`nhwc_max_pool`),
and the compiler's channels-last choice (``compile.layout``), which makes every float NCHW
convolution and pool NHWC and runs :func:`cancel_layout` and :func:`sink_layout` on every wire.

An entrance is an Unsqueeze of the height (1-D tensors) and a Transpose to NHWC; an exit is the
Transpose back and a Squeeze. An exit moves down through what is indifferent to the layout —
element-wise ops (their constants re-laid), Concat, the stream ops Delay and PulseMask (their
axis renumbered), a float global pool (which becomes a mean or max over the NHWC pixels) — when
every reader of it cancels it or takes it down too, so no copy stays behind. A Transpose that
only moves size-1 axes becomes a Reshape (which costs nothing in C).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..datum import DatumType
from ..fact import TypedFact
from ..graph import Node, OutletId
from ..ops.activations import Clip
from ..ops.array import Concat, Transpose
from ..ops.binary import BinaryOp
from ..ops.pool import GlobalPool, MaxPool
from ..ops.quantized.common import quantized_fact
from ..ops.reduce import Reduce
from ..ops.shape import Reshape, Squeeze, Unsqueeze
from ..ops.stream import Delay, PulseMask
from ..ops.unary import UnaryOp
from ..patch import ModelPatch

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)

@dataclass(frozen=True)
class Scope:
    """Where the rewrites apply: the wires whose facts ``wires`` accepts; Squeeze and Unsqueeze
    (the 1-D entrances and exits) too with ``squeezes``."""

    wires: Callable[[TypedFact], bool]
    squeezes: bool = True


#: the compiler's layout choice: every wire
EVERYWHERE = Scope(lambda fact: True)
#: the quantized ONNX islands in declutter: Transposes on quantized wires
QUANTIZED = Scope(quantized_fact, squeezes=False)


def axes_const(*axes: int) -> np.ndarray:
    """Constant axes (Squeeze, Unsqueeze, Pad) as the ops take them."""
    return np.asarray(axes, np.int64)


def enter(patch: ModelPatch, name: str, x: OutletId, flat: bool = False) -> OutletId:
    """The NCHW wire ``x`` (NCW when ``flat``) in NHWC (a height of 1 for NCW)."""
    if flat:
        x = patch.wire_node(f"{name}.unsqueeze", Unsqueeze(), [x, patch.add_const(f"{name}.h", axes_const(2))])[0]
    return patch.wire_node(f"{name}.nhwc_in", Transpose(TO_NHWC), [x])[0]


def leave(patch: ModelPatch, name: str, y: OutletId, flat: bool = False) -> OutletId:
    """The NHWC wire ``y`` back in NCHW (NCW when ``flat``)."""
    y = patch.wire_node(f"{name}.nchw_out", Transpose(TO_NCHW), [y])[0]
    if flat:
        y = patch.wire_node(f"{name}.squeeze", Squeeze(), [y, patch.add_const(f"{name}.h.1", axes_const(2))])[0]
    return y


def nhwc(patch: ModelPatch, name: str, op, x: OutletId, others: list[OutletId], flat: bool = False) -> OutletId:
    """``op`` (an NHWC op) applied to the NCHW wire ``x`` (NCW when ``flat``) between an entrance
    and an exit; ``others`` are its further inputs."""
    return leave(patch, name, patch.wire_node(name, op, [enter(patch, name, x, flat), *others])[0], flat)


def constant_axes(model, node: Node) -> tuple[int, ...] | None:
    """The sorted axes of a Squeeze or Unsqueeze with constant axes (normalised)."""
    if len(node.inputs) < 2:
        return None
    value = model.outlet_fact(node.inputs[1]).konst
    if value is None:
        return None
    rank = model.outlet_fact(node.inputs[0]).rank + (len(value.reshape(-1)) if isinstance(node.op, Unsqueeze) else 0)
    return tuple(sorted(int(a) % rank for a in value.reshape(-1)))


# exits cancelled with entrances -----------------------------------------------------------------
def cancel_layout(model, node: Node, scope: Scope = EVERYWHERE) -> ModelPatch | None:
    """Two Transposes composed (gone when they undo each other), an identity Transpose dropped,
    an Unsqueeze undoing a Squeeze dropped, a Transpose of size-1 axes made a Reshape."""
    op = node.op
    if not (isinstance(op, Transpose) or isinstance(op, Unsqueeze) and scope.squeezes) \
            or not scope.wires(model.outlet_fact(node.inputs[0])):
        return None
    source = model.nodes[node.inputs[0].node]
    if isinstance(op, Unsqueeze):
        axes = constant_axes(model, node)
        if isinstance(source.op, Squeeze) and axes is not None and axes == constant_axes(model, source):
            return _shunt_to(model, node, source.inputs[0], "squeeze and unsqueeze cancelled")
        return None
    rank = model.outlet_fact(node.inputs[0]).rank
    perm = op._perm(rank)
    if isinstance(source.op, Transpose):
        inner = source.op._perm(rank)
        composed = tuple(inner[axis] for axis in perm)
        if composed == tuple(range(rank)):
            return _shunt_to(model, node, source.inputs[0], "transposes cancelled")
        return ModelPatch.replace_single_op(model, node, source.inputs, Transpose(composed), "transposes composed")
    if perm == tuple(range(rank)):
        return ModelPatch.shunt_one_op(model, node, "identity transpose")
    return _reshape_if_units(model, node, perm)


def _shunt_to(model, node: Node, outlet: OutletId, label: str) -> ModelPatch:
    patch = ModelPatch(model, f"{node.name}: {label}")
    patch.shunt(OutletId(node.id, 0), patch.tap(outlet))
    patch.obliterate(node.id)
    return patch


def _reshape_if_units(model, node: Node, perm: tuple) -> ModelPatch | None:
    """A Transpose whose axes of size above 1 keep their order only reshapes."""
    x, y = model.outlet_fact(node.inputs[0]), node.outputs[0].fact
    if not all(isinstance(d, int) for d in y.shape):
        return None
    moved = [axis for axis in perm if x.shape[axis] != 1]
    if moved != sorted(moved):
        return None
    patch = ModelPatch(model, f"{node.name}: a transpose of size-1 axes reshapes")
    shape = patch.add_const(f"{node.name}.shape", np.asarray(y.shape, np.int64))
    patch.shunt(OutletId(node.id, 0), patch.wire_node(node.name, Reshape(), [patch.tap(node.inputs[0]), shape])[0])
    patch.obliterate(node.id)
    return patch


# exits moved down through ops indifferent to the layout -----------------------------------------
class _Exit:
    """A Transpose, or a Squeeze with constant axes, that may have been put after a node."""

    def __init__(self, model, node: Node, axes: tuple[int, ...] = ()):
        self.source = node.inputs[0]
        self.before = model.outlet_fact(self.source)
        self.transpose = isinstance(node.op, Transpose)
        self.perm: tuple[int, ...] = node.op._perm(self.before.rank) if self.transpose else ()
        self.axes = axes

    @property
    def key(self) -> tuple:
        return (self.transpose, self.perm, self.axes, self.before.rank)

    def source_axis(self, axis: int) -> int:
        """The axis of the exit's input that its output axis ``axis`` is."""
        if self.transpose:
            return self.perm[axis]
        return [a for a in range(self.before.rank) if a not in self.axes][axis]

    def undo(self, value: np.ndarray, rank: int) -> np.ndarray:
        """The constant that, through this exit, broadcasts as ``value`` on a ``rank``-d output."""
        value = value.reshape((1,) * (rank - value.ndim) + value.shape)
        if self.transpose:
            return value.transpose(np.argsort(self.perm))
        return np.expand_dims(value, self.axes)

    def wire(self, patch: ModelPatch, name: str, outlet: OutletId) -> OutletId:
        if self.transpose:
            return patch.wire_node(name, Transpose(self.perm), [outlet])[0]
        return patch.wire_node(name, Squeeze(), [outlet, patch.add_const(f"{name}.axes", axes_const(*self.axes))])[0]


def _exit_node(model, outlet: OutletId, scope: Scope) -> _Exit | None:
    node = model.nodes[outlet.node]
    if isinstance(node.op, Transpose):
        return _Exit(model, node)
    if isinstance(node.op, Squeeze) and scope.squeezes:
        axes = constant_axes(model, node)
        return None if axes is None else _Exit(model, node, axes)
    return None


def _absorbs(model, node: Node, exit_: _Exit, scope: Scope) -> bool:
    """Whether ``node``, reading ``exit_``, cancels it (an entrance) or takes it below itself."""
    if isinstance(node.op, Transpose) and exit_.transpose:
        perm = node.op._perm(exit_.before.rank)
        return tuple(exit_.perm[axis] for axis in perm) == tuple(range(exit_.before.rank))
    if isinstance(node.op, Unsqueeze) and not exit_.transpose:
        return constant_axes(model, node) == exit_.axes
    data = _carried(model, node, scope)
    found = [_exit_node(model, node.inputs[slot], scope) for slot in data]
    return bool(found) and all(e is not None and e.key == exit_.key for e in found)


def _exit_of(model, outlet: OutletId, scope: Scope) -> _Exit | None:
    """The exit giving ``outlet`` when everything reading it cancels it or takes it below itself
    (so moving it down leaves no copy behind)."""
    exit_ = _exit_node(model, outlet, scope)
    if exit_ is None or outlet in model.outputs:
        return None
    readers = model.outlet_successors(outlet)
    if len(readers) == 1 or all(_absorbs(model, model.nodes[inlet.node], exit_, scope) for inlet in readers):
        return exit_
    return None


def _carried(model, node: Node, scope: Scope) -> list[int]:
    """The data inputs of an op the layout does not matter to (none when it matters)."""
    op = node.op
    facts = model.node_input_facts(node.id)
    if len(node.outputs) != 1 or not scope.wires(node.outputs[0].fact) \
            or any(f.qparams is not None and f.qparams.axis is not None for f in facts):
        return []
    if isinstance(op, UnaryOp) and not (isinstance(op, Clip) and (op.dynamic_low or op.dynamic_high)):
        return [0]
    if isinstance(op, (BinaryOp, Concat)):
        return [slot for slot, fact in enumerate(facts) if fact.konst is None]
    if isinstance(op, (Delay, PulseMask)):
        return [0]
    if isinstance(op, GlobalPool) and op.mode in ("avg", "max") and facts[0].dtype == DatumType.F32:
        return [0]
    return []


def sink_layout(model, node: Node, scope: Scope = EVERYWHERE) -> ModelPatch | None:
    """An op indifferent to the layout whose data inputs all leave the same exit runs before it."""
    data = _carried(model, node, scope)
    if not data:
        return None
    exits = [_exit_of(model, node.inputs[slot], scope) for slot in data]
    first = exits[0]
    if first is None or any(e is None or e.key != first.key for e in exits):
        return None
    rank = node.outputs[0].fact.rank
    op = node.op
    if isinstance(op, GlobalPool):
        if not first.transpose or first.perm != TO_NCHW:
            return None
        op = Reduce("mean" if op.mode == "avg" else "max", (1, 2), keepdims=True)
    elif isinstance(op, Concat):
        op = replace(op, axis=first.source_axis(op.axis % rank))
    elif isinstance(op, Delay):
        op = replace(op, axis=first.source_axis(op.axis), shape=None if op.shape is None else _delay_shape(op, first))
    elif isinstance(op, PulseMask):
        op = replace(op, axis=first.source_axis(op.axis))
    sources = {slot: e.source for slot, e in zip(data, exits) if e is not None}
    patch = ModelPatch(model, f"{node.name}: the layout moves below it")
    inputs = []
    for slot, outlet in enumerate(node.inputs):
        fact = model.outlet_fact(outlet)
        if slot in sources:
            inputs.append(patch.tap(sources[slot]))
        elif isinstance(op, (BinaryOp, Concat)):
            inputs.append(patch.add_const(f"{node.name}.c{slot}", first.undo(fact.konst, rank), fact.qparams))
        else:
            inputs.append(patch.tap(outlet))
    y = patch.wire_node(node.name, op, inputs)[0]
    patch.shunt(OutletId(node.id, 0), first.wire(patch, f"{node.name}.layout", y))
    patch.obliterate(node.id)
    return patch


def _delay_shape(op: Delay, exit_: _Exit) -> tuple[int, ...]:
    """A Delay's buffer shape as seen before the exit."""
    assert op.shape is not None
    shape = [1] * exit_.before.rank
    for axis, dim in enumerate(op.shape):
        shape[exit_.source_axis(axis)] = dim
    return tuple(shape)


# the quantized ONNX islands (declutter) ---------------------------------------------------------
def cancel_quantized(model, node: Node) -> ModelPatch | None:
    """:func:`cancel_layout` on the Transposes of quantized wires."""
    return cancel_layout(model, node, QUANTIZED)


def sink_quantized(model, node: Node) -> ModelPatch | None:
    """:func:`sink_layout` of the Transposes on quantized wires."""
    return sink_layout(model, node, QUANTIZED)


def nhwc_max_pool(model, node: Node) -> ModelPatch | None:
    """A 2-d NCHW MaxPool on a quantized wire that a Transpose to NCHW makes pools in NHWC, so
    that the Transposes around it cancel with that one."""
    op = node.op
    if not isinstance(op, MaxPool) or op.data_format != "NCHW" or op.with_indices or op.activation is not None:
        return None
    fact = model.outlet_fact(node.inputs[0])
    source = model.nodes[node.inputs[0].node]
    if fact.rank != 4 or not quantized_fact(fact) or not isinstance(source.op, Transpose) \
            or source.op._perm(4) != TO_NCHW:
        return None
    patch = ModelPatch(model, f"pool {node.name} in NHWC")
    patch.shunt(OutletId(node.id, 0), nhwc(patch, node.name, replace(op, data_format="NHWC"),
                                           patch.tap(node.inputs[0]), []))
    patch.obliterate(node.id)
    return patch
