"""From samples to a power spectrum, as TFLite Micro's signal library computes it: a fixed-point
window, the block scaling before an FFT, the real FFT and its inverse, the energy of each bin.

Complex spectra travel as real tensors whose last axis interleaves (real, imaginary).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import TypedFact
from ..base import Op, expect_inputs
from .common import check_range, expect_dtype, expect_rank, known_dim
from .fixed import msb, wrap
from .kissfft import fft_plan, irfft, rfft, supported_length

I16, I32, U32, F32 = DatumType.I16, DatumType.I32, DatumType.U32, DatumType.F32
FFT_TYPES = (I16, I32, F32)
_KINDS = {I16: "i16", I32: "i32", F32: "f32"}


@dataclass(frozen=True)
class ApplyWindow(Op):
    """Multiply int16 samples by an int16 window (Q``shift``) along the last axis, shift right
    by ``shift`` and saturate to int16 (TFLite Micro's SignalWindow)."""

    shift: int

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, w = inputs
        expect_dtype(x, (I16,), self, "the samples")
        expect_dtype(w, (I16,), self, "the window")
        expect_rank(w, 1, self, "the window")
        check_range(self.shift, 0, 31, self, "shift")
        if known_dim(x, -1, self, "the samples") != known_dim(w, 0, self, "the window"):
            raise AnalysisError(f"{self.name}: the window {w} does not match the samples' last axis {x}")
        return [TypedFact(I16, x.shape)]

    def eval(self, inputs):
        x, w = inputs
        raw = (x.astype(np.int64) * w.astype(np.int64)) >> self.shift
        return [np.clip(raw, -32768, 32767).astype(np.int16)]


@dataclass(frozen=True)
class FftAutoScale(Op):
    """Scale int16 samples up by the largest power of two that keeps them in range; also give
    that power (TFLite Micro's SignalFftAutoScale: its MaxAbs16 wraps -32768 to itself)."""

    @property
    def nboutputs(self) -> int:
        return 2

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        expect_dtype(inputs[0], (I16,), self, "the samples")
        expect_rank(inputs[0], 1, self, "the samples")
        return [TypedFact(I16, inputs[0].shape), TypedFact(I32, ())]

    def eval(self, inputs):
        x = inputs[0]
        bits = auto_scale_bits(x)
        return [wrap(x.astype(np.int64) << bits, 16).astype(np.int16), np.array(bits, dtype=np.int32)]


def auto_scale_bits(x: np.ndarray) -> int:
    """FftAutoScale's shift: 15 minus the bit length of MaxAbs16, at least 0."""
    if x.size and (x == -32768).any():
        largest = 0
        for value in x.tolist():  # MaxAbs16 step by step: -(-32768) wraps to -32768
            if value > largest:
                largest = value
            elif -value > largest:
                largest = int(wrap(-value, 16))
    else:
        largest = int(np.abs(x.astype(np.int64)).max(initial=0))
    bits = 15 - int(msb(np.array([largest & 0xFFFFFFFF]))[0])
    return max(bits, 0)


class _Fft(Op):
    fft_length: int

    def _check_length(self) -> None:
        why = supported_length(self.fft_length)
        if why is not None:
            raise AnalysisError(f"{self.name}: {why}")

    def _rows(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)


@dataclass(frozen=True)
class Rfft(_Fft):
    """The real FFT of the last axis, zero-padded to ``fft_length``: ``fft_length / 2 + 1``
    complex bins interleaved as (real, imaginary). int16 and int32 run kissfft's fixed-point
    transform (scaled by 1 / ``fft_length``, rounded as TFLite Micro rounds); float32 is exact
    up to float rounding (TFLite Micro's SignalRfft)."""

    fft_length: int

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, FFT_TYPES, self, "the samples")
        self._check_length()
        length = known_dim(x, -1, self, "the samples")
        if length > self.fft_length:
            raise AnalysisError(f"{self.name}: {length} samples do not fit an FFT of length {self.fft_length}")
        return [TypedFact(x.dtype, tuple(x.shape[:-1]) + (self.fft_length + 2,))]

    def eval(self, inputs):
        x = inputs[0]
        rows = self._rows(x)
        padded = np.zeros((rows.shape[0], self.fft_length), dtype=x.dtype)
        padded[:, :rows.shape[1]] = rows
        kind = _KINDS[DatumType.from_numpy(x.dtype)]
        spectrum = rfft(fft_plan(kind, self.fft_length, False), padded)
        return [spectrum.reshape(x.shape[:-1] + (self.fft_length + 2,)).astype(x.dtype)]


@dataclass(frozen=True)
class Irfft(_Fft):
    """The inverse of :class:`Rfft` on the first ``fft_length / 2 + 1`` complex bins of the last
    axis, giving ``fft_length`` samples. Fixed point keeps kissfft's scaling (each butterfly
    divides by its radix); float32 divides by ``fft_length`` (TFLite Micro's SignalIrfft)."""

    fft_length: int

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, FFT_TYPES, self, "the spectrum")
        self._check_length()
        length = known_dim(x, -1, self, "the spectrum")
        if length % 2 or length < self.fft_length + 2:
            raise AnalysisError(f"{self.name}: the spectrum needs {self.fft_length // 2 + 1} (real, imaginary) "
                                f"pairs on its last axis, got {x}")
        return [TypedFact(x.dtype, tuple(x.shape[:-1]) + (self.fft_length,))]

    def eval(self, inputs):
        x = inputs[0]
        rows = self._rows(x)
        bins = self.fft_length // 2 + 1
        spectrum = rows.reshape(rows.shape[0], -1, 2)[:, :bins]
        kind = _KINDS[DatumType.from_numpy(x.dtype)]
        samples = irfft(fft_plan(kind, self.fft_length, True), spectrum)
        if kind == "f32":
            samples = samples / np.float32(self.fft_length)
        return [samples.reshape(x.shape[:-1] + (self.fft_length,)).astype(x.dtype)]


@dataclass(frozen=True)
class Energy(Op):
    """The energy ``re² + im²`` (uint32, wrapping as TFLite Micro's int32 sum does) of the int16
    complex bins ``start_index`` to ``end_index`` (excluded); the other bins give 0, where TFLite
    Micro's SignalEnergy leaves its output unwritten."""

    start_index: int
    end_index: int

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, (I16,), self, "the spectrum")
        expect_rank(x, 1, self, "the spectrum")
        length = known_dim(x, 0, self, "the spectrum")
        if length % 2:
            raise AnalysisError(f"{self.name}: the spectrum must hold (real, imaginary) pairs, got {x}")
        check_range(self.start_index, 0, length // 2, self, "start_index")
        check_range(self.end_index, self.start_index, length // 2, self, "end_index")
        return [TypedFact(U32, (length // 2,))]

    def eval(self, inputs):
        pairs = inputs[0].astype(np.int64).reshape(-1, 2)
        out = np.zeros(pairs.shape[0], dtype=np.uint32)
        bins = pairs[self.start_index:self.end_index]
        out[self.start_index:self.end_index] = ((bins * bins).sum(axis=1) & 0xFFFFFFFF).astype(np.uint32)
        return [out]

