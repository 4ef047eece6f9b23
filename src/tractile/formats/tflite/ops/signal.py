"""Translations of TFLite Micro's signal library (custom operators ``Signal*``, both directions).

Their options are FlexBuffers maps, which TFLite Micro reads by position in key order: the
writer gives exactly the keys TFLite Micro reads, so positions and names agree.
"""
from __future__ import annotations

from ....errors import ModelFormatError
from ....ops.audio import (
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
from ..reader import tensor_type_code
from ..registry import OpSpec, TflNode, tflite_op, tflite_writer

#: custom options read as integers, per operator, and the core op field each one sets
_SUBTRACTION = {"num_channels": "num_channels", "smoothing": "smoothing", "one_minus_smoothing": "one_minus_smoothing",
                "alternate_smoothing": "alternate_smoothing",
                "alternate_one_minus_smoothing": "alternate_one_minus_smoothing", "smoothing_bits": "smoothing_bits",
                "min_signal_remaining": "min_signal_remaining",
                "spectral_subtraction_bits": "spectral_subtraction_bits"}
_STACKER = {"num_channels": "num_channels", "stacker_left_context": "left_context",
            "stacker_right_context": "right_context", "stacker_step": "step"}


def _ints(node: TflNode, *keys: str) -> list[int]:
    options = node.custom_options()
    values = []
    for key in keys:
        value = options.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelFormatError(f"{node.where}: custom option {key!r} should be an integer, got {value!r}")
        values.append(int(value))
    return values


def _flag(node: TflNode, key: str) -> bool:
    value = node.custom_options().get(key, False)
    if not isinstance(value, (bool, int)):
        raise ModelFormatError(f"{node.where}: custom option {key!r} should be a boolean, got {value!r}")
    return bool(value)


@tflite_op("CUSTOM:SignalWindow")
def window(node: TflNode):
    return ApplyWindow(*_ints(node, "shift"))


@tflite_writer(ApplyWindow)
def write_window(op: ApplyWindow, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalWindow", custom_options={"shift": op.shift})


@tflite_op("CUSTOM:SignalFftAutoScale")
def fft_auto_scale(node: TflNode):
    return FftAutoScale()


@tflite_writer(FftAutoScale)
def write_fft_auto_scale(op: FftAutoScale, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalFftAutoScale", custom_options={})


@tflite_op("CUSTOM:SignalRfft")
def rfft(node: TflNode):
    return Rfft(*_ints(node, "fft_length"))


@tflite_op("CUSTOM:SignalIrfft")
def irfft(node: TflNode):
    return Irfft(*_ints(node, "fft_length"))


@tflite_writer(Rfft, Irfft)
def write_fft(op: Rfft | Irfft, ctx) -> OpSpec:
    name = "CUSTOM:SignalRfft" if isinstance(op, Rfft) else "CUSTOM:SignalIrfft"
    return OpSpec(name, custom_options={"T": tensor_type_code(ctx.input_dtype(0)), "fft_length": op.fft_length})


@tflite_op("CUSTOM:SignalEnergy")
def energy(node: TflNode):
    start, end = _ints(node, "start_index", "end_index")
    return Energy(start, end)


@tflite_writer(Energy)
def write_energy(op: Energy, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalEnergy", custom_options={"end_index": op.end_index, "start_index": op.start_index})


@tflite_op("CUSTOM:SignalFilterBank")
def filter_bank(node: TflNode):
    return FilterBank(*_ints(node, "num_channels"))


@tflite_writer(FilterBank)
def write_filter_bank(op: FilterBank, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalFilterBank", custom_options={"num_channels": op.num_channels})


@tflite_op("CUSTOM:SignalFilterBankSquareRoot")
def filter_bank_square_root(node: TflNode):
    return FilterBankSquareRoot()


@tflite_writer(FilterBankSquareRoot)
def write_filter_bank_square_root(op: FilterBankSquareRoot, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalFilterBankSquareRoot", custom_options={})


@tflite_op("CUSTOM:SignalFilterBankSpectralSubtraction")
def spectral_subtraction(node: TflNode):
    values = dict(zip(_SUBTRACTION.values(), _ints(node, *_SUBTRACTION)))
    return FilterBankSpectralSubtraction(**values, clamping=_flag(node, "clamping"))


@tflite_writer(FilterBankSpectralSubtraction)
def write_spectral_subtraction(op: FilterBankSpectralSubtraction, ctx) -> OpSpec:
    options: dict = {key: getattr(op, field) for key, field in _SUBTRACTION.items()}
    options["clamping"] = bool(op.clamping)
    return OpSpec("CUSTOM:SignalFilterBankSpectralSubtraction", custom_options=options)


@tflite_op("CUSTOM:SignalPCAN")
def pcan(node: TflNode):
    return Pcan(*_ints(node, "snr_shift"))


@tflite_writer(Pcan)
def write_pcan(op: Pcan, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalPCAN", custom_options={"snr_shift": op.snr_shift})


@tflite_op("CUSTOM:SignalFilterBankLog")
def filter_bank_log(node: TflNode):
    return FilterBankLog(*_ints(node, "input_correction_bits", "output_scale"))


@tflite_writer(FilterBankLog)
def write_filter_bank_log(op: FilterBankLog, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalFilterBankLog", custom_options={"input_correction_bits": op.input_correction_bits,
                                                                 "output_scale": op.output_scale})


@tflite_op("CUSTOM:SignalFramer")
def framer(node: TflNode):
    size, step = _ints(node, "frame_size", "frame_step")
    return Framer(size, step, _flag(node, "prefill"))


@tflite_writer(Framer)
def write_framer(op: Framer, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalFramer", custom_options={"frame_size": op.frame_size, "frame_step": op.frame_step,
                                                          "prefill": bool(op.prefill)})


@tflite_op("CUSTOM:SignalStacker")
def stacker(node: TflNode):
    return Stacker(**dict(zip(_STACKER.values(), _ints(node, *_STACKER))))


@tflite_writer(Stacker)
def write_stacker(op: Stacker, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalStacker", custom_options={key: getattr(op, field) for key, field in _STACKER.items()})


@tflite_op("CUSTOM:SignalOverlapAdd")
def overlap_add(node: TflNode):
    return OverlapAdd(*_ints(node, "frame_step"))


@tflite_writer(OverlapAdd)
def write_overlap_add(op: OverlapAdd, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalOverlapAdd", custom_options={"T": tensor_type_code(ctx.input_dtype(0)),
                                                              "frame_step": op.frame_step})


@tflite_op("CUSTOM:SignalDelay")
def delay(node: TflNode):
    return FrameDelay(*_ints(node, "delay_length"))


@tflite_writer(FrameDelay)
def write_delay(op: FrameDelay, ctx) -> OpSpec:
    return OpSpec("CUSTOM:SignalDelay", custom_options={"delay_length": op.delay})
