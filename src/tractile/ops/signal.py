"""Signal processing: DFT, STFT, the Hann / Hamming / Blackman windows and MelWeightMatrix.

Complex values travel as real tensors whose last axis holds (real, imaginary); a real
signal may have a last axis of 1. Transforms run on NumPy's FFT in f32 (f64 for f64
inputs) and cast back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..dim import TDim, fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import run_scalar, scalar_value, widened
from .base import Op, check_alloc, expect_inputs


def _optional_scalar(fact: TypedFact, what: str):
    """``(given, value)`` of a scalar input that an empty tensor marks as absent (value None if unknown)."""
    if fact.rank == 1 and fact.shape[0] == 0:
        return False, None
    return True, scalar_value(fact, what)


def _run_optional(value: np.ndarray, what: str) -> int | None:
    return None if value.size == 0 else int(run_scalar(value, what))


def _as_complex(x: np.ndarray) -> np.ndarray:
    """The signal held by a (..., 1) real or (..., 2) complex tensor, as NumPy values without that axis."""
    work = widened(x)
    return work[..., 0] if x.shape[-1] == 1 else work[..., 0] + 1j * work[..., 1]


def _as_pairs(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.stack([values.real, values.imag], axis=-1).astype(dtype)


@dataclass(frozen=True)
class DFT(Op):
    """ONNX DFT: inputs x (..., 1 or 2), dft_length (scalar; empty: default) and axis (scalar).

    ``onesided`` keeps the ``n // 2 + 1`` first bins of a forward transform; an inverse
    ``onesided`` transform reads such half spectra and returns a real (..., n, 1) signal.
    """

    inverse: bool = False
    onesided: bool = False

    def _length(self, size, requested):
        """Output length along the axis for an input length ``size`` (ints or TDims)."""
        length = requested if requested is not None else 2 * (size - 1) if self.inverse and self.onesided else size
        return length // 2 + 1 if self.onesided and not self.inverse else length

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        x, dft_length, axis = inputs
        if x.rank < 2 or not x.dtype.is_float or (isinstance(x.shape[-1], int) and x.shape[-1] not in (1, 2)):
            raise AnalysisError(f"DFT input must be a float (..., 1 or 2) tensor, got {x}")
        if not axis.dtype.is_integer or not dft_length.dtype.is_integer:
            raise AnalysisError(f"DFT axis and dft_length must be integers, got {axis} and {dft_length}")
        given, length = _optional_scalar(dft_length, "DFT dft_length")
        if isinstance(length, int) and length <= 0:
            raise AnalysisError(f"DFT dft_length {length} must be positive")
        axis_value = scalar_value(axis, "DFT axis")
        dims = list(x.shape)
        dims[-1] = 1 if self.inverse and self.onesided else 2
        if axis_value is not None and not isinstance(axis_value, TDim):
            signal_axis = self.signal_axis(int(axis_value), x.rank, AnalysisError)
            known = length is not None or not given
            dims[signal_axis] = self._length(x.shape[signal_axis], length) if known else fresh_symbol()
            return [TypedFact(x.dtype, dims)]
        for candidate in range(x.rank - 1):  # the axis is known only at run time
            if given and length is None:
                dims[candidate] = fresh_symbol()
            elif self._length(dims[candidate], length) != dims[candidate]:
                dims[candidate] = fresh_symbol()
        return [TypedFact(x.dtype, dims)]

    @staticmethod
    def signal_axis(axis: int, rank: int, error=RunError) -> int:
        """``axis`` as an index into the input, where the last (complex) axis is not allowed."""
        if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
            raise error(f"DFT axis {axis} is out of range for an input of rank {rank} (last axis excluded)")
        return axis % rank

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)

    def eval(self, inputs):
        x, dft_length, axis = inputs
        axis = self.signal_axis(int(run_scalar(axis, "DFT axis")), x.ndim)
        if x.shape[-1] not in (1, 2):
            raise RunError(f"DFT input's last axis must be 1 (real) or 2 (complex), got shape {x.shape}")
        requested = _run_optional(dft_length, "DFT dft_length")
        if requested is not None and requested <= 0:
            raise RunError(f"DFT dft_length {requested} must be positive")
        length = requested if requested is not None else (
            2 * (x.shape[axis] - 1) if self.inverse and self.onesided else x.shape[axis])
        if length <= 0:
            raise RunError(f"DFT of length {length} along axis {axis} of an input of shape {x.shape}")
        shape = list(x.shape)
        shape[axis] = self._length(x.shape[axis], requested)
        check_alloc(shape[:-1] + [2], np.complex128, "DFT output")
        signal = _as_complex(x)
        if self.inverse and self.onesided:
            return [np.fft.irfft(signal, n=length, axis=axis)[..., None].astype(x.dtype)]
        spectrum = np.fft.ifft(signal, n=length, axis=axis) if self.inverse else np.fft.fft(signal, n=length, axis=axis)
        if self.onesided and not self.inverse:
            spectrum = np.take(spectrum, np.arange(length // 2 + 1), axis=axis)
        return [_as_pairs(spectrum, x.dtype)]


@dataclass(frozen=True)
class STFT(Op):
    """ONNX STFT: signal (B, L, 1 or 2), frame_step, window (1-d; empty: none), frame_length
    (scalar; empty: from the window, else L) → (B, frames, bins, 2)."""

    onesided: bool = True

    def output_facts(self, inputs):
        expect_inputs(inputs, 4, self)
        signal, step, window, frame_length = inputs
        if signal.rank != 3 or not signal.dtype.is_float or (isinstance(signal.shape[2], int)
                                                             and signal.shape[2] not in (1, 2)):
            raise AnalysisError(f"STFT signal must be a float (batch, length, 1 or 2) tensor, got {signal}")
        if window.rank != 1:
            raise AnalysisError(f"STFT window must be 1-d, got {window}")
        step_value = scalar_value(step, "STFT frame_step")
        given, length = _optional_scalar(frame_length, "STFT frame_length")
        has_window = window.shape[0] != 0
        if not given:
            length = window.shape[0] if has_window else signal.shape[1]
        elif length is not None and has_window and isinstance(window.shape[0], int) and window.shape[0] != length:
            raise AnalysisError(f"STFT window has {window.shape[0]} samples but frame_length is {length}")
        for what, item in (("frame_step", step_value), ("frame_length", length)):
            if isinstance(item, int) and item <= 0:
                raise AnalysisError(f"STFT {what} {item} must be positive")
        if length is None or step_value is None:
            frames = fresh_symbol()
        else:
            frames = (signal.shape[1] - length) // step_value + 1
        bins = fresh_symbol() if length is None else length // 2 + 1 if self.onesided else length
        return [TypedFact(signal.dtype, (signal.shape[0], frames, bins, 2))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(outputs[0].rank, 4)
        s.equals(outputs[0].shape[0], inputs[0].shape[0])

    def eval(self, inputs):
        signal, step, window, frame_length = inputs
        step = int(run_scalar(step, "STFT frame_step"))
        length = _run_optional(frame_length, "STFT frame_length")
        if length is None:
            length = window.shape[0] if window.size else signal.shape[1]
        if window.size and window.shape[0] != length:
            raise RunError(f"STFT window has {window.shape[0]} samples but frame_length is {length}")
        if step <= 0 or not 0 < length <= signal.shape[1]:
            raise RunError(f"STFT frame_step {step} and frame_length {length} do not fit a signal of "
                           f"{signal.shape[1]} samples")
        count = (signal.shape[1] - length) // step + 1
        check_alloc((signal.shape[0], count, length, 2), np.complex128, "STFT frames")
        starts = np.arange(count) * step
        frames = _as_complex(signal)[:, starts[:, None] + np.arange(length)[None, :]]
        if window.size:
            frames = frames * widened(window).astype(frames.real.dtype)
        spectrum = np.fft.fft(frames, n=length, axis=-1)
        if self.onesided:
            spectrum = spectrum[..., :length // 2 + 1]
        return [_as_pairs(spectrum, signal.dtype)]


@dataclass(frozen=True)
class CosineWindow(Op):
    """A generalized cosine window of ``size`` (scalar input) samples:
    ``w[n] = Σ_k (-1)^k a_k cos(2πkn / N)`` with N = size (``periodic``) or size - 1."""

    periodic: bool = True
    dtype: DatumType = DatumType.F32
    coefficients: ClassVar[tuple[float, ...]] = ()

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if not inputs[0].dtype.is_integer:
            raise AnalysisError(f"{self.name} size must be an integer, got {inputs[0]}")
        size = scalar_value(inputs[0], f"{self.name} size")
        if isinstance(size, int) and size < 0:
            raise AnalysisError(f"{self.name} size {size} must not be negative")
        return [TypedFact(self.dtype, (fresh_symbol() if size is None else size,))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, self.dtype)
        s.equals(outputs[0].rank, 1)

    def eval(self, inputs):
        size = int(run_scalar(inputs[0], f"{self.name} size"))
        if size < 0:
            raise RunError(f"{self.name} size {size} must not be negative")
        check_alloc((size,), np.float64, self.name)
        period = size if self.periodic else size - 1
        if period <= 0:
            return [np.ones(size, dtype=self.dtype.np)]
        phase = 2 * np.pi * np.arange(size) / period
        window = sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(self.coefficients))
        return [np.asarray(window).astype(self.dtype.np)]


class HannWindow(CosineWindow):
    """Hann window: 0.5 - 0.5 cos(2πn/N)."""

    coefficients = (0.5, 0.5)


class HammingWindow(CosineWindow):
    """Hamming window with ONNX's coefficients 25/46 and 21/46."""

    coefficients = (25 / 46, 21 / 46)


class BlackmanWindow(CosineWindow):
    """Blackman window: 0.42 - 0.5 cos(2πn/N) + 0.08 cos(4πn/N)."""

    coefficients = (0.42, 0.5, 0.08)


@dataclass(frozen=True)
class MelWeightMatrix(Op):
    """ONNX MelWeightMatrix: inputs num_mel_bins, dft_length, sample_rate, lower and upper edge (Hz)
    → (dft_length // 2 + 1, num_mel_bins) triangular filters on the mel scale, peaking at 1."""

    dtype: DatumType = DatumType.F32

    def output_facts(self, inputs):
        expect_inputs(inputs, 5, self)
        names = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
        for index, (fact, what) in enumerate(zip(inputs, names)):
            scalar_value(fact, f"MelWeightMatrix {what}")
            if (index < 3 and not fact.dtype.is_integer) or (index >= 3 and not fact.dtype.is_float):
                raise AnalysisError(f"MelWeightMatrix {what} has the wrong type: {fact}")
        mels, dft_length = scalar_value(inputs[0], "num_mel_bins"), scalar_value(inputs[1], "dft_length")
        for what, item in (("num_mel_bins", mels), ("dft_length", dft_length)):
            if isinstance(item, int) and item <= 0:
                raise AnalysisError(f"MelWeightMatrix {what} {item} must be positive")
        bins = fresh_symbol() if dft_length is None else dft_length // 2 + 1
        return [TypedFact(self.dtype, (bins, fresh_symbol() if mels is None else mels))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, self.dtype)
        s.equals(outputs[0].rank, 2)

    def eval(self, inputs):
        mels, dft_length, rate = (int(run_scalar(v, "MelWeightMatrix input")) for v in inputs[:3])
        low, high = (float(run_scalar(v, "MelWeightMatrix edge")) for v in inputs[3:])
        if mels <= 0 or dft_length <= 0 or rate <= 0:
            raise RunError(f"MelWeightMatrix num_mel_bins {mels}, dft_length {dft_length} and sample_rate {rate} "
                           f"must be positive")
        bins = dft_length // 2 + 1
        check_alloc((bins, mels), np.float64, "MelWeightMatrix")
        low_mel, high_mel = (2595 * np.log10(1 + hz / 700) for hz in (low, high))
        # mels + 2 band edges stepping by (high - low) / (mels + 2): ONNX's definition
        edges_mel = low_mel + np.arange(mels + 2) * ((high_mel - low_mel) / (mels + 2))
        edges_hz = 700 * (10 ** (edges_mel / 2595) - 1)
        edges = np.floor((dft_length + 1) * edges_hz / rate).astype(np.int64)
        left, center, right = edges[:-2], edges[1:-1], edges[2:]
        j = np.arange(bins)[:, None]
        rise = np.where(center > left, (j - left) / np.maximum(center - left, 1), 1.0)
        fall = (right - j) / np.maximum(right - center, 1)
        matrix = np.where((j >= left) & (j <= center), rise, 0.0)
        matrix = np.where((j >= center) & (j < right), fall, matrix)
        return [matrix.astype(self.dtype.np)]
