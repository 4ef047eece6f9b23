"""The audio front end's ops (``tl_signal.h``; the FFT in ``tl_fft.h``): TFLite Micro's signal
library. The FFT's tables come from the interpreter's plan (ops/audio/kissfft.py); the noise
estimate and the framing buffers live in the context, and ``NAME_reset`` clears them.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.audio import (
    ApplyWindow,
    Energy,
    FftAutoScale,
    FilterBank,
    FilterBankLog,
    FilterBankSpectralSubtraction,
    FilterBankSquareRoot,
    FrameDelay,
    Framer,
    Irfft,
    OverlapAdd,
    Pcan,
    Rfft,
    Stacker,
)
from ...ops.audio.fixed import LOG_LUT
from ...ops.audio.kissfft import fft_plan
from ..emit import Emit
from ..registry import Unsupported, emitter

HEADER = "tl_signal.h"
_KINDS = {DatumType.I16: "i16", DatumType.I32: "i32", DatumType.F32: "f32"}


def _rows(count: int, last: int) -> int:
    return count // last if last else 0


@emitter(ApplyWindow)
def window(e: Emit) -> None:
    x, y = e.input(0), e.output(0)
    weights = e.const_input(1, "the window")
    e.use(HEADER)
    e.call("tl_window_i16", x, e.constant("window", weights.astype(np.int16)), y, _rows(x.count, weights.size),
           weights.size, e.op.shift)


@emitter(FftAutoScale)
def fft_auto_scale(e: Emit) -> None:
    x = e.input(0)
    e.use(HEADER)
    e.call("tl_fft_auto_scale_i16", x, e.output(0), e.output(1), x.count)


def _fft_tables(e: Emit, plan, kind: str) -> tuple[str, str, str, str]:
    if plan.half >= 1 << 15:
        raise Unsupported(f"an FFT of length {plan.fft_length} (at most {1 << 16})")
    factors = np.array(plan.factors, dtype=np.int32).reshape(-1)
    table = np.float32 if kind == "f32" else np.int32
    direction = "inverse" if plan.inverse else "forward"
    return (e.constant("fft_order", plan.order.astype(np.int16)), e.constant("fft_factors", factors),
            e.constant(f"fft_twiddles_{direction}", plan.twiddles.reshape(-1).astype(table)),
            e.constant(f"fft_super_twiddles_{direction}", plan.super_twiddles.reshape(-1).astype(table)))


@emitter(Rfft, Irfft)
def fft(e: Emit) -> None:
    op = e.op
    x, y = e.input(0), e.output(0)
    kind = _KINDS[x.dtype]
    inverse = isinstance(op, Irfft)
    plan = fft_plan(kind, op.fft_length, inverse)
    order, factors, twiddles, supers = _fft_tables(e, plan, kind)
    length = x.shape[-1]
    rows = _rows(x.count, length)
    float_kind = kind == "f32"
    work = e.scratch("fft_work", DatumType.F32 if float_kind else DatumType.I32, (4 if inverse else 2) * plan.half)
    e.use("tl_fft.h")
    name = ("tl_irfft" if inverse else "tl_rfft") + ("_f32" if float_kind else "_fixed")
    args = [x, y, rows, length, plan.half, order, factors, len(plan.factors), twiddles, supers, work]
    if not float_kind:
        args.append(16 if kind == "i16" else 32)
    e.call(name, *args)


@emitter(Energy)
def energy(e: Emit) -> None:
    y = e.output(0)
    e.use(HEADER)
    e.call("tl_energy_i16", e.input(0), y, y.count, e.op.start_index, e.op.end_index)


@emitter(FilterBank)
def filter_bank(e: Emit) -> None:
    names = ("weights", "unweights", "channel_starts", "channel_weight_starts", "channel_widths")
    tables = [e.constant(name, e.const_input(index, f"the filterbank {name}").astype(np.int16))
              for index, name in enumerate(names, start=1)]
    e.use(HEADER)
    e.call("tl_filter_bank", e.input(0), e.output(0), e.op.num_channels, *tables)


@emitter(FilterBankSquareRoot)
def filter_bank_square_root(e: Emit) -> None:
    x = e.input(0)
    e.use(HEADER)
    status = e.failure("the square root's shift is outside 0..31")
    e.line(f"if (tl_filter_bank_sqrt({e.arg(x)}, {e.arg(e.input(1))}, {e.arg(e.output(0))}, {x.count})) "
           f"return {status};")
    e.set_kernel("tl_filter_bank_sqrt")


@emitter(FilterBankSpectralSubtraction)
def spectral_subtraction(e: Emit) -> None:
    op: FilterBankSpectralSubtraction = e.op
    noise = e.state("noise_estimate", DatumType.U32, op.num_channels)
    smoothing = e.constant("smoothing", np.array([op.smoothing, op.alternate_smoothing], dtype=np.uint32))
    one_minus = e.constant("one_minus_smoothing", np.array([op.one_minus_smoothing,
                                                             op.alternate_one_minus_smoothing], dtype=np.uint32))
    e.use(HEADER)
    e.call("tl_spectral_subtraction", e.input(0), e.output(0), e.output(1), noise, op.num_channels, smoothing,
           one_minus, op.smoothing_bits, f"{op.min_signal_remaining}u", op.spectral_subtraction_bits,
           bool(op.clamping))


@emitter(Pcan)
def pcan(e: Emit) -> None:
    x = e.input(0)
    lut = e.constant("gain_table", e.const_input(2, "the gain table").astype(np.int16))
    e.use(HEADER)
    e.call("tl_pcan", x, e.input(1), lut, e.output(0), x.count, e.op.snr_shift)


@emitter(FilterBankLog)
def filter_bank_log(e: Emit) -> None:
    x = e.input(0)
    e.use(HEADER)
    e.call("tl_filter_bank_log", x, e.output(0), x.count, f"{e.op.output_scale & 0xFFFFFFFF}u",
           e.op.input_correction_bits, e.constant("log_table", LOG_LUT.astype(np.int16)))


@emitter(Framer)
def framer(e: Emit) -> None:
    op: Framer = e.op
    x = e.input(0)
    length = x.shape[-1]
    rows = _rows(x.count, length)
    buffer = e.state("buffer", DatumType.I16, rows * op.capacity)
    count = e.state("count", DatumType.I32, 1,
                    np.array([op.frame_size - op.frame_step if op.prefill else 0], dtype=np.int32))
    e.use(HEADER)
    e.call("tl_framer_i16", x, e.output(0), e.output(1), buffer, count, rows, length // op.frame_step,
           op.frame_size, op.frame_step, op.capacity)


@emitter(Stacker)
def stacker(e: Emit) -> None:
    op: Stacker = e.op
    size = op.num_channels * op.frames
    buffer = e.state("buffer", DatumType.I16, size)
    count = e.state("count", DatumType.I32, 1)
    started = e.state("started", DatumType.I32, 1)
    e.use(HEADER)
    e.call("tl_stacker_i16", e.input(0), e.output(0), e.output(1), buffer, count, started, op.num_channels, size,
           op.left_context, op.step)


@emitter(OverlapAdd)
def overlap_add(e: Emit) -> None:
    x = e.input(0)
    frames, size = x.shape[-2], x.shape[-1]
    rows = _rows(x.count, frames * size)
    buffer = e.state("buffer", x.dtype, rows * size)
    e.use(HEADER)
    name = "tl_overlap_add_f32" if x.dtype == DatumType.F32 else "tl_overlap_add_i16"
    e.call(name, x, e.output(0), buffer, rows, frames, size, e.op.frame_step)


@emitter(FrameDelay)
def frame_delay(e: Emit) -> None:
    x = e.input(0)
    length = x.shape[-1]
    rows = _rows(x.count, length)
    if e.op.delay == 0:
        e.alias(0, 0)
        return
    history = e.state("history", DatumType.I16, rows * e.op.delay)
    e.use(HEADER)
    e.call("tl_frame_delay_i16", x, e.output(0), history, rows, length, e.op.delay)
