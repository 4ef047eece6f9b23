"""Audio front-end ops: TFLite Micro's signal library (windowing, fixed-point real FFT, energy,
mel filterbank, noise reduction, automatic gain control, log) and its framing ops with memory."""
from .filterbank import FilterBank, FilterBankLog, FilterBankSpectralSubtraction, FilterBankSquareRoot, Pcan
from .framing import FrameDelay, Framer, OverlapAdd, Stacker
from .spectral import ApplyWindow, Energy, FftAutoScale, Irfft, Rfft

__all__ = ["ApplyWindow", "FftAutoScale", "Rfft", "Irfft", "Energy", "FilterBank", "FilterBankSquareRoot",
           "FilterBankSpectralSubtraction", "FilterBankLog", "Pcan", "Framer", "Stacker", "OverlapAdd",
           "FrameDelay"]
