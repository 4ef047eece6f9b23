"""ONNX LSTM and GRU (forward, float, default activations) and their streaming form, the
pulsed ``CarriedStateOp`` whose state lives in the context; kernels in ``tl_rnn.h``."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.recurrent import GRU, LSTM, Recurrent
from ...pulse.recurrent import CarriedStateOp
from ..emit import Emit
from ..program import CTensor
from ..registry import Unsupported, emitter

HEADER = "tl_rnn.h"


def check_lowerable(op: Recurrent, x: CTensor) -> None:
    if not isinstance(op, (LSTM, GRU)):
        raise Unsupported(f"{op.name} (LSTM and GRU are compiled)")
    if x.dtype != DatumType.F32 or op.direction != "forward":
        raise Unsupported(f"a {op.direction} {op.name} on {x.dtype} (forward float32 is compiled)")
    defaults = {"LSTM": ("sigmoid", "tanh", "tanh"), "GRU": ("sigmoid", "tanh")}[op.name]
    if tuple(a.kind for a in op.activations) != defaults or op.clip is not None:
        raise Unsupported(f"{op.name} with other activations or a clip")
    if "sequence_lens" in op.optional_inputs or "P" in op.optional_inputs or getattr(op, "input_forget", False):
        raise Unsupported(f"{op.name} with sequence_lens, peepholes or input_forget")


def weights(e: Emit, op: Recurrent) -> tuple[str, str, str, str]:
    """Transposed W and R, and the W and R halves of B (NULL when absent)."""
    w, r = e.const_input(1, "W")[0], e.const_input(2, "R")[0]
    optional = dict(zip(op.optional_inputs, range(3, 3 + len(op.optional_inputs))))
    wb = rb = "NULL"
    if "B" in optional:
        bias = e.const_input(optional["B"], "B")[0].astype(np.float32)
        half = bias.size // 2
        wb, rb = e.constant("wb", bias[:half]), e.constant("rb", bias[half:])
    return (e.constant("wt", np.ascontiguousarray(w.T.astype(np.float32))),
            e.constant("rt", np.ascontiguousarray(r.T.astype(np.float32))), wb, rb)


def initial_state(e: Emit, op: Recurrent, name: str, target: str, count: int) -> str:
    """C that sets ``target`` (count floats) to the op's initial state ``name`` (zeros if absent)."""
    if name in op.optional_inputs:
        source = e.input(3 + op.optional_inputs.index(name))
        source.used = True
        return f"memcpy({target}, {source.var}, {count} * sizeof(float));"
    return f"memset({target}, 0, {count} * sizeof(float));"


def run_kernel(e: Emit, op: Recurrent, x: str, y: str, h: str, c: str | None, steps, batch: int, inputs: int,
               hidden: int) -> None:
    wt, rt, wb, rb = weights(e, op)
    if isinstance(op, LSTM):
        e.line(f"tl_onnx_lstm_f32({x}, {wt}, {rt}, {wb}, {rb}, {h}, {c}, {y}, "
               f"{e.scratch('x_gates', DatumType.F32, 4 * hidden)}, {e.scratch('h_gates', DatumType.F32, 4 * hidden)}, "
               f"{steps}, {batch}, {inputs}, {hidden}, {op.layout});")
        e.set_kernel("tl_onnx_lstm_f32")
    else:
        e.line(f"tl_onnx_gru_f32({x}, {wt}, {rt}, {wb}, {rb}, {h}, {y}, "
               f"{e.scratch('x_gates', DatumType.F32, 3 * hidden)}, {e.scratch('h_gates', DatumType.F32, 3 * hidden)}, "
               f"{e.scratch('reset_h', DatumType.F32, hidden)}, {steps}, {batch}, {inputs}, {hidden}, {op.layout}, "
               f"{int(op.linear_before_reset)});")
        e.set_kernel("tl_onnx_gru_f32")


@emitter(Recurrent)
def recurrent(e: Emit) -> None:
    op: Recurrent = e.op
    x = e.input(0)
    check_lowerable(op, x)
    steps, batch = (x.shape[1], x.shape[0]) if op.layout else (x.shape[0], x.shape[1])
    inputs, hidden = x.shape[2], e.const_input(2, "R").shape[2]
    e.use(HEADER)
    e.use("tl_common.h")
    e.uses_math()
    h = e.scratch("h", DatumType.F32, batch * hidden)
    c = e.scratch("c", DatumType.F32, batch * hidden) if isinstance(op, LSTM) else None
    e.line(initial_state(e, op, "initial_h", h, batch * hidden))
    if c is not None:
        e.line(initial_state(e, op, "initial_c", c, batch * hidden))
    y = e.output(0)
    x.used = y.used = True
    run_kernel(e, op, x.var, y.var, h, c, steps, batch, inputs, hidden)
    for slot, state in ((1, h), (2, c)):
        if state is not None and slot < len(e.node.outputs):
            target = e.output(slot)
            target.used = True
            e.line(f"memcpy({target.var}, {state}, {batch * hidden} * sizeof(float));")


@emitter(CarriedStateOp)
def carried_recurrent(e: Emit) -> None:
    """A streamed LSTM/GRU: h and c carried in the context from push to push; the first
    ``delay`` frames (before the stream started) are skipped and give zeros."""
    op: CarriedStateOp = e.op
    inner = op.inner
    x, y = e.input(0), e.output(0)
    if not isinstance(inner, Recurrent) or op.source != 0 or op.outputs != (0,):
        raise Unsupported(f"streaming {inner.name}")
    check_lowerable(inner, x)
    steps, batch = (x.shape[1], x.shape[0]) if inner.layout else (x.shape[0], x.shape[1])
    inputs, hidden = x.shape[2], e.const_input(2, "R").shape[2]
    if op.delay and inner.layout and batch > 1:
        raise Unsupported("a late batch-first stream of several sequences")
    e.use(HEADER)
    e.use("tl_common.h")
    e.uses_math()
    h = e.state("h", DatumType.F32, batch * hidden)
    c = e.state("c", DatumType.F32, batch * hidden) if isinstance(inner, LSTM) else None
    started = e.state("started", DatumType.I32, 1)
    x.used = y.used = True
    e.line("{")
    if op.delay:
        position = e.state("position", DatumType.I32, 1)
        e.line(f"  const int32_t skip = {position}[0] >= {op.delay} ? 0 : ({op.delay} - {position}[0] < {steps} ? "
               f"{op.delay} - {position}[0] : {steps});\n"
               f"  {position}[0] = {position}[0] < (1 << 30) ? {position}[0] + {steps} : {position}[0];\n"
               f"  memset({y.var}, 0, (size_t)skip * {batch * hidden} * sizeof(float));\n"
               f"  if (skip < {steps}) {{")
        x_at, y_at, count = f"{x.var} + skip * {batch * inputs}", f"{y.var} + skip * {batch * hidden}", \
            f"{steps} - skip"
    else:
        e.line("  {")
        x_at, y_at, count = x.var, y.var, str(steps)
    e.line(f"    if (!{started}[0]) {{\n      {started}[0] = 1;")
    e.line("      " + initial_state(e, inner, "initial_h", h, batch * hidden))
    if c is not None:
        e.line("      " + initial_state(e, inner, "initial_c", c, batch * hidden))
    e.line("    }")
    run_kernel(e, inner, x_at, y_at, h, c, count, batch, inputs, hidden)
    e.line("  }\n}")
