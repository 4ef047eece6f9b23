"""ONNX RNN, GRU and LSTM (float), batch and streaming (``tl_rnn.h``).

A batch op runs each direction over the whole sequence, its states in the ``Y_h``
(``Y_c``) outputs, which start from ``initial_h`` (``initial_c``) or zeros. A pulsed
model's recurrent op (:class:`~tractile.ops.stream_carried.CarriedStateOp`, forward only)
keeps its states in the context from one push to the next; ``NAME_reset`` restores the
initial states (computed initial states are taken at the stream's first real frame). Frames
that come before the stream's start (its delay) leave the state untouched and give zeros, as
in the interpreter.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...ops.recurrent import GRU, LSTM, RNN, Recurrent
from ...ops.stream_carried import CarriedStateOp
from ..emit import Emit
from ..program import CONST
from ..registry import Unsupported, emitter
from . import host_gemm

HEADER = "tl_rnn.h"
#: activations tl_rnn.h defines (vectorised on 64-bit hosts): the kernels run them over whole gates
BUILT_IN = {"sigmoid": "tl_rnn_sigmoid", "tanh": "tl_rnn_tanh"}

@dataclass
class Strides:
    """Element strides of X, Y and the states for one layout (see tl_rnn.h)."""

    x_step: int
    x_batch: int
    y_step: int
    y_batch: int
    s_batch: int
    y_direction: int
    s_direction: int


def strides(op: Recurrent, steps: int, batch: int, depth: int, hidden: int) -> Strides:
    dirs = op.num_directions
    if op.layout:
        return Strides(depth, steps * depth, dirs * hidden, steps * dirs * hidden, dirs * hidden, hidden, hidden)
    return Strides(batch * depth, depth, dirs * batch * hidden, hidden, hidden, batch * hidden, batch * hidden)


def _named(head: str, tail: str) -> Callable[[str], str]:
    """``head NAME tail`` for the name :meth:`Emit.definition` gives."""
    return lambda name: f"{head} {name}{tail}"


def activation_functions(e: Emit, op: Recurrent, direction: int) -> str:
    """The direction's activations as C functions (each its activation op's C expression) and
    the table of them the kernel calls; the table's name."""
    count = len(op.default_activations)
    names = [BUILT_IN.get(activation.kind) or
             e.definition(f"act{direction}_{index}",
                          _named("static float", f"(float v) {{ return {activation.c_expression()}; }}"))
             for index, activation in enumerate(op.activations[direction * count:(direction + 1) * count])]
    return e.definition(f"activations{direction}",
                        _named("static const tl_rnn_act_fn", f"[{len(names)}] = {{{', '.join(names)}}};"))


class Prepared:
    """The op's constant parameters, checked, and its shapes."""

    def __init__(self, e: Emit, op: Recurrent):
        x = e.input(0)
        if x.dtype != DatumType.F32:
            raise Unsupported(f"{op.name} on {x.dtype} (float32 only)")
        self.w = e.const_input(1, "W").astype(np.float32)
        self.r = e.const_input(2, "R").astype(np.float32)
        slots = {name: 3 + index for index, name in enumerate(op.optional_inputs)}
        self.bias = e.const_input(slots["B"], "B").astype(np.float32) if "B" in slots else None
        self.peep = e.const_input(slots["P"], "P").astype(np.float32) if "P" in slots else None
        self.slots = slots
        if "sequence_lens" in slots:
            lengths = e.const_input(slots["sequence_lens"], "sequence_lens")
            steps = x.shape[1 if op.layout else 0]
            if np.any(np.asarray(lengths) < steps):
                raise Unsupported("sequence_lens shorter than the sequence")
        self.hidden = self.r.shape[2]
        self.depth = self.w.shape[2]
        self.steps, self.batch = (x.shape[1], x.shape[0]) if op.layout else (x.shape[0], x.shape[1])
        self.gates = op.gate_count * self.hidden

    def constants(self, e: Emit, op: Recurrent, d: int, projected: bool = False) -> list:
        """The kernel's constant arguments after x, y, states and scratch, for direction ``d``
        (``projected``: x holds the input products, see :func:`project`)."""
        suffix = f"_{d}" if op.num_directions > 1 else ""
        w = "NULL" if projected else e.constant("W" + suffix, np.ascontiguousarray(self.w[d].T))
        r = e.constant("R" + suffix, pack_recurrent(self.r[d].T, op))
        wb = rb = "NULL"
        if self.bias is not None:
            rb = e.constant("Rb" + suffix, self.bias[d][self.gates:])
            if not projected:
                wb = e.constant("Wb" + suffix, self.bias[d][:self.gates])
        table = activation_functions(e, op, d)
        clip = np.float32(op.clip or 0.0)
        if isinstance(op, GRU):
            return [w, r, wb, rb, table, clip, op.linear_before_reset]
        if isinstance(op, LSTM):
            peep = e.constant("P" + suffix, self.peep[d]) if self.peep is not None else "NULL"
            return [w, r, wb, rb, peep, table, clip, op.input_forget]
        return [w, r, wb, rb, table, clip]


#: tl_rnn.h's TL_RNN_PACK: the columns of a block of the packed recurrent weights
PACK = 64


def pack_recurrent(rt: np.ndarray, op: Recurrent) -> np.ndarray:
    """R^T (``[hidden][gates * hidden]``) as tl_rnn.h reads it: per part (GRU: the z and r gates,
    then the candidate's; others: all gates), blocks of ``PACK`` columns, each ``[hidden][width]``."""
    hidden = rt.shape[0]
    parts = [(0, 2 * hidden), (2 * hidden, 3 * hidden)] if isinstance(op, GRU) else [(0, rt.shape[1])]
    blocks = [rt[:, start:min(start + PACK, end)].reshape(-1) for begin, end in parts
              for start in range(begin, end, PACK)]
    return np.ascontiguousarray(np.concatenate(blocks) if blocks else rt.reshape(-1), np.float32)


def kernel_of(op: Recurrent) -> tuple[str, int]:
    """(kernel, scratch blocks of hidden floats)."""
    if isinstance(op, LSTM):
        return "tl_onnx_lstm_f32", 8
    if isinstance(op, GRU):
        return "tl_gru_f32", 7
    if isinstance(op, RNN):
        return "tl_rnn_f32", 2
    raise Unsupported(f"{op.name} has no C kernel")


def project(e: Emit, op: Recurrent, p: Prepared, d: int, into: str) -> None:
    """The input products of every step of direction ``d`` (x W^T + Wb, ``[steps * batch][gates]``
    in x's row order) into ``into``, by the host's float GEMM: one pass over the weights instead
    of one a step."""
    suffix = f"_{d}" if op.num_directions > 1 else ""
    host_gemm.use_gemm(e)
    packed = e.constant("Wp" + suffix, host_gemm.pack_f32(p.w[d]))
    bias = e.constant("Wb" + suffix, p.bias[d][:p.gates]) if p.bias is not None else "NULL"
    e.call("tl_dense_gemm_f32", e.input(0), packed, bias, into, p.steps * p.batch, p.depth, p.gates,
           np.float32(-np.inf), np.float32(np.inf), host_gemm.THREADS)


def offset(pointer: str, elements: int | str) -> str:
    return pointer if elements == 0 else f"{pointer} + {elements}"


@emitter(RNN, GRU, LSTM)
def recurrent(e: Emit) -> None:
    op: Recurrent = e.op
    p = Prepared(e, op)
    kernel, blocks = kernel_of(op)
    s = strides(op, p.steps, p.batch, p.depth, p.hidden)
    e.use("tl_exp.h")
    e.use(HEADER)
    e.uses_math()
    states = [e.output(1 + k) for k in range(len(op.state_names))]
    for name, state in zip(op.state_names, states):
        given = e.input(p.slots[name]) if name in p.slots else None
        if given is not None and given.storage == CONST:
            e.line(f"tl_rnn_load_f32({e.arg(state)}, {e.arg(given)}, {state.count});")
        elif given is not None:
            e.line(f"memcpy({e.arg(state)}, {e.arg(given)}, {state.nbytes});")
        else:
            e.line(f"memset({e.arg(state)}, 0, {state.nbytes});")
    scratch = e.scratch("gates", DatumType.F32, blocks * p.hidden)
    e.set_kernel(kernel)
    projected = None
    x_step, x_batch = s.x_step, s.x_batch
    if host_gemm.applies(e) and p.depth and p.steps * p.batch > 1:
        projected = e.scratch("projected", DatumType.F32, p.steps * p.batch * p.gates)
        x_step, x_batch = s.x_step // p.depth * p.gates, s.x_batch // p.depth * p.gates
    for d in range(op.num_directions):
        reverse = d == 1 or op.direction == "reverse"
        pointers = [offset(e.arg(t), d * s.s_direction) for t in states]
        if projected is not None:
            project(e, op, p, d, projected)
        e.call(kernel, projected or e.input(0), offset(e.arg(e.output(0)), d * s.y_direction), *pointers, scratch,
               *p.constants(e, op, d, projected is not None), p.steps, p.batch, p.depth, p.hidden, reverse, x_step,
               x_batch, s.y_step, s.y_batch, s.s_batch)


@emitter(CarriedStateOp)
def carried_state(e: Emit) -> None:
    op: CarriedStateOp = e.op
    inner = op.inner
    if not isinstance(inner, (RNN, GRU, LSTM)) or op.source != 0 or tuple(op.outputs) != (0,):
        raise Unsupported(f"streaming {inner.name} (the compiler streams ONNX RNN, GRU and LSTM)")
    if inner.direction != "forward":
        raise Unsupported(f"a {inner.direction} {inner.name} in a stream")
    p = Prepared(e, inner)
    kernel, blocks = kernel_of(inner)
    s = strides(inner, p.steps, p.batch, p.depth, p.hidden)
    e.use("tl_exp.h")
    e.use(HEADER)
    e.uses_math()
    states, loads = [], []
    for name in inner.state_names:
        given = e.input(p.slots[name]) if name in p.slots else None
        initial = np.zeros(p.batch * p.hidden, np.float32)
        if given is not None and given.value is not None:
            initial = np.asarray(given.value, np.float32).reshape(-1)
        state = e.state(name.replace("initial_", ""), DatumType.F32, initial.size, initial)
        if given is not None and given.value is None:  # computed: taken at the stream's first real frame
            loads.append(f"memcpy({state}, {e.arg(given)}, {given.nbytes});")
        states.append(state)
    scratch = e.scratch("gates", DatumType.F32, blocks * p.hidden)
    x, y = e.arg(e.input(0)), e.arg(e.output(0))
    tail = [p.depth, p.hidden, 0, s.x_step, s.x_batch, s.y_step, s.y_batch, s.s_batch]
    skip = "0"
    e.line("{")
    if op.delay > 0:
        position = e.state("position", DatumType.I32, 1)
        skip = "skip"
        e.line(f"  const int32_t skip = tl_stream_skip({position}, {op.delay}, {p.steps});")
        e.line(f"  tl_rnn_zero_steps({y}, skip, {p.batch}, {p.hidden}, {s.y_step}, {s.y_batch});")
    if loads:
        started = e.state("started", DatumType.I32, 1)
        e.line(f"  if (!*{started} && {skip} < {p.steps}) {{")
        e.line(f"    *{started} = 1;")
        for line in loads:
            e.line(f"    {line}")
        e.line("  }")
    if op.delay > 0:
        e.call(kernel, f"{x} + skip * {s.x_step}", f"{y} + skip * {s.y_step}", *states, scratch,
               *p.constants(e, inner, 0), f"{p.steps} - skip", p.batch, *tail)
    else:
        e.call(kernel, x, y, *states, scratch, *p.constants(e, inner, 0), p.steps, p.batch, *tail)
    e.line("}")
