"""From a power spectrum to log filterbank features, as TFLite Micro's signal library computes
them: triangular mel channels, their square root, spectral subtraction of a running noise
estimate (state kept from frame to frame), per-channel automatic gain control (PCAN) and a
fixed-point log.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ...fact import TypedFact
from ..base import Op, expect_inputs
from .common import check_range, expect_dtype, expect_rank, known_dim
from .fixed import log32, pcan_shrink, sqrt_rounded, wide_dynamic

I16, I32, U32, U64 = DatumType.I16, DatumType.I32, DatumType.U32, DatumType.U64
M32 = np.uint64(0xFFFFFFFF)
#: PCAN's gain table covers noise estimates of up to 32 bits: 4 entries per bit from bit 2
PCAN_LUT_SIZE = 4 * 32 - 6 + 3


def channel_taps(starts: np.ndarray, weight_starts: np.ndarray, widths: np.ndarray, bins: int, weights: int,
                 where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(spectrum index, weight index, channel) of every tap of the channels, channel by channel;
    an error naming ``where`` when a channel reaches outside the spectrum or the weights."""
    starts, weight_starts, widths = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (starts, weight_starts, widths))
    if (widths < 0).any():
        raise ValueError(f"{where}: a channel width is negative")
    bad = (widths > 0) & ((starts < 0) | (starts + widths > bins) | (weight_starts < 0) |
                          (weight_starts + widths > weights))
    if bad.any():
        channel = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: channel {channel} (start {starts[channel]}, weight start "
                         f"{weight_starts[channel]}, width {widths[channel]}) reaches outside the {bins} bins or "
                         f"the {weights} weights")
    channel = np.repeat(np.arange(widths.size), widths)
    offset = np.arange(channel.size) - np.repeat(np.cumsum(widths) - widths, widths)
    return starts[channel] + offset, weight_starts[channel] + offset, channel


@dataclass(frozen=True)
class FilterBank(Op):
    """Sum the uint32 spectrum into ``num_channels`` overlapping channels (uint64): tap ``j`` of
    channel ``i`` adds ``weights[ws[i] + j] * x[fs[i] + j]`` to channel ``i`` and the unweight
    to channel ``i + 1`` (TFLite Micro's SignalFilterBank; channel 0 of its ``num_channels +
    1`` only collects the first channel's unweights and is dropped). Inputs: spectrum,
    weights, unweights, channel frequency starts, channel weight starts, channel widths."""

    num_channels: int

    def output_facts(self, inputs):
        expect_inputs(inputs, 6, self)
        x, *tables = inputs
        expect_dtype(x, (U32,), self, "the spectrum")
        expect_rank(x, 1, self, "the spectrum")
        names = ("weights", "unweights", "channel frequency starts", "channel weight starts", "channel widths")
        for fact, name in zip(tables, names):
            expect_dtype(fact, (I16,), self, f"the {name}")
            expect_rank(fact, 1, self, f"the {name}")
        if self.num_channels < 1:
            raise AnalysisError(f"{self.name}: num_channels must be at least 1, got {self.num_channels}")
        for fact, name in zip(tables[2:], names[2:]):
            if known_dim(fact, 0, self, f"the {name}") < self.num_channels + 1:
                raise AnalysisError(f"{self.name}: the {name} need {self.num_channels + 1} entries, got {fact}")
        if known_dim(tables[0], 0, self, "the weights") != known_dim(tables[1], 0, self, "the unweights"):
            raise AnalysisError(f"{self.name}: weights {tables[0]} and unweights {tables[1]} differ in length")
        if all(t.konst is not None for t in tables[2:]):
            try:
                self._taps(known_dim(x, 0, self, "the spectrum"), tables[0].shape[0], *(t.konst for t in tables[2:]))
            except ValueError as error:
                raise AnalysisError(str(error)) from None
        return [TypedFact(U64, (self.num_channels,))]

    def _taps(self, bins, weights, starts, weight_starts, widths):
        count = self.num_channels + 1
        return channel_taps(starts[:count], weight_starts[:count], widths[:count], bins, weights, self.name)

    def eval(self, inputs):
        x, weights, unweights, starts, weight_starts, widths = inputs
        try:
            bins, taps_w, channel = self._taps(x.size, weights.size, starts, weight_starts, widths)
        except ValueError as error:
            raise RunError(str(error)) from None
        values = x.astype(np.uint64)[bins]
        weighted = weights.astype(np.int64).astype(np.uint64)[taps_w] * values
        unweighted = unweights.astype(np.int64).astype(np.uint64)[taps_w] * values
        count = self.num_channels + 1
        sums = np.zeros((2, count), dtype=np.uint64)
        np.add.at(sums[0], channel, weighted)
        np.add.at(sums[1], channel, unweighted)
        return [sums[0, 1:] + sums[1, :-1]]


@dataclass(frozen=True)
class FilterBankSquareRoot(Op):
    """The rounded square root (uint32) of uint64 channels, shifted right by the int32 scalar
    input (TFLite Micro's SignalFilterBankSquareRoot; the shift must be 0..31)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, shift = inputs
        expect_dtype(x, (U64,), self, "the channels")
        expect_rank(x, 1, self, "the channels")
        expect_dtype(shift, (I32,), self, "the shift")
        expect_rank(shift, 0, self, "the shift")
        return [TypedFact(U32, x.shape)]

    def eval(self, inputs):
        x, shift = inputs
        bits = int(np.asarray(shift).reshape(-1)[0])
        if not 0 <= bits <= 31:
            raise RunError(f"{self.name}: the shift must be in 0..31, got {bits}")
        return [(sqrt_rounded(x) >> bits).astype(np.uint32)]


@dataclass(frozen=True)
class FilterBankSpectralSubtraction(Op):
    """Subtract a running noise estimate from uint32 channels (TFLite Micro's
    SignalFilterBankSpectralSubtraction). The estimate, kept from call to call and zero after a
    reset, is a low-pass filter of each channel (``smoothing`` / ``one_minus_smoothing`` on even
    channels, the ``alternate_`` pair on odd ones, in Q``spectral_subtraction_bits``); at least
    ``min_signal_remaining`` of the signal stays. Outputs: the channels, and the estimate."""

    num_channels: int
    smoothing: int
    one_minus_smoothing: int
    alternate_smoothing: int
    alternate_one_minus_smoothing: int
    smoothing_bits: int
    min_signal_remaining: int
    spectral_subtraction_bits: int
    clamping: bool = False
    is_stateless: ClassVar[bool] = False

    @property
    def nboutputs(self) -> int:
        return 2

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, (U32,), self, "the channels")
        expect_rank(x, 1, self, "the channels")
        if known_dim(x, 0, self, "the channels") != self.num_channels:
            raise AnalysisError(f"{self.name}: num_channels is {self.num_channels} but the channels are {x}")
        for name in ("smoothing", "one_minus_smoothing", "alternate_smoothing", "alternate_one_minus_smoothing",
                     "min_signal_remaining"):
            check_range(getattr(self, name), 0, 0xFFFFFFFF, self, name)
        check_range(self.smoothing_bits, 0, 31, self, "smoothing_bits")
        check_range(self.spectral_subtraction_bits, 0, 63, self, "spectral_subtraction_bits")
        return [TypedFact(U32, x.shape), TypedFact(U32, x.shape)]

    def state(self) -> NoiseEstimate:
        return NoiseEstimate(self)

    def eval(self, inputs):
        return NoiseEstimate(self).eval(inputs)


class NoiseEstimate:
    """The per-channel noise estimate of a :class:`FilterBankSpectralSubtraction`."""

    def __init__(self, op: FilterBankSpectralSubtraction):
        self.op = op
        odd = np.arange(op.num_channels) % 2 == 1
        self.smoothing = np.where(odd, op.alternate_smoothing, op.smoothing).astype(np.uint64)
        self.one_minus = np.where(odd, op.alternate_one_minus_smoothing, op.one_minus_smoothing).astype(np.uint64)
        self.noise = np.zeros(op.num_channels, dtype=np.uint64)

    def reset(self) -> None:
        self.noise[:] = 0

    def memory_bytes(self) -> int:
        return self.op.num_channels * 4

    def eval(self, inputs):
        op = self.op
        x = inputs[0].astype(np.uint64)
        bits = np.uint64(op.spectral_subtraction_bits)
        scaled = (x << np.uint64(op.smoothing_bits)) & M32
        noise = ((scaled * self.smoothing + self.noise * self.one_minus) >> bits) & M32
        estimate = np.minimum(noise, scaled)
        self.noise = estimate.copy() if op.clamping else noise
        floor = ((x * np.uint64(op.min_signal_remaining)) >> bits) & M32
        subtracted = (scaled - estimate) >> np.uint64(op.smoothing_bits)
        return [np.maximum(subtracted, floor).astype(np.uint32), self.noise.astype(np.uint32)]


@dataclass(frozen=True)
class FilterBankLog(Op):
    """``output_scale * ln(x << input_correction_bits)`` in int16 (saturated; 0 where the shifted
    value is 0 or 1) with TFLite Micro's fixed-point log (SignalFilterBankLog)."""

    input_correction_bits: int
    output_scale: int

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        expect_dtype(inputs[0], (U32,), self, "the channels")
        expect_rank(inputs[0], 1, self, "the channels")
        check_range(self.input_correction_bits, 0, 31, self, "input_correction_bits")
        check_range(self.output_scale, -(1 << 31), (1 << 32) - 1, self, "output_scale")
        return [TypedFact(I16, inputs[0].shape)]

    def eval(self, inputs):
        scaled = (inputs[0].astype(np.int64) << self.input_correction_bits) & 0xFFFFFFFF
        logs = log32(np.maximum(scaled, 2), self.output_scale)
        return [np.where(scaled > 1, np.minimum(logs, 32767), 0).astype(np.int16)]


@dataclass(frozen=True)
class Pcan(Op):
    """Per-channel energy normalization (TFLite Micro's SignalPCAN): each uint32 channel times
    the gain its noise estimate reads from the int16 gain table (a piecewise quadratic of the
    estimate's magnitude, at least 125 entries), shifted right by ``snr_shift``, then
    compressed. Inputs: channels, noise estimates, gain table."""

    snr_shift: int

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        x, noise, lut = inputs
        expect_dtype(x, (U32,), self, "the channels")
        expect_dtype(noise, (U32,), self, "the noise estimates")
        expect_dtype(lut, (I16,), self, "the gain table")
        for fact, what in ((x, "the channels"), (noise, "the noise estimates"), (lut, "the gain table")):
            expect_rank(fact, 1, self, what)
        channels = known_dim(x, 0, self, "the channels")
        if known_dim(noise, 0, self, "the noise estimates") < channels:
            raise AnalysisError(f"{self.name}: {noise} has fewer noise estimates than the {channels} channels")
        if known_dim(lut, 0, self, "the gain table") < PCAN_LUT_SIZE:
            raise AnalysisError(f"{self.name}: the gain table needs {PCAN_LUT_SIZE} entries, got {lut}")
        check_range(self.snr_shift, 0, 63, self, "snr_shift")
        return [TypedFact(U32, x.shape)]

    def eval(self, inputs):
        x, noise, lut = inputs
        gain = wide_dynamic(noise[:x.size].astype(np.int64), lut).astype(np.uint64) & M32
        snr = ((x.astype(np.uint64) * gain) >> np.uint64(self.snr_shift)) & M32
        return [(pcan_shrink(snr.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32)]
