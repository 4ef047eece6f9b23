"""TFLite Micro's integer LSTM (8x8_16), which rounds differently from TFLite's reference kernel,
and its 16x8 LSTM (int16 activations and states, int64 biases and accumulators), the only one.

TFLite Micro builds each gate from two FULLY_CONNECTED products (input with the gate bias,
hidden state without), each requantized to int16 and saturated before their saturating sum;
its sigmoid and tanh interpolate a 256-entry table of sigmoid(i/24) instead of gemmlowp's
fixed-point functions; the cell and hidden updates are element-wise MULs whose multipliers
come from the scales in double precision (saturating, where the reference wraps). All
multipliers are TFLite's ``QuantizeMultiplier`` of the real scales.
"""
from __future__ import annotations

import numpy as np

from ...errors import AnalysisError
from .common import scale_of
from .fixedpoint import Requantizer, multiply_by_quantized_multiplier_64
from .output import clip_inplace

#: sigmoid(i / 24) in unsigned Q0.16 for i in 0..255 (TFLite's int16 LOGISTIC/TANH table)
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535], dtype=np.int64)


def _scaled(values: np.ndarray, left_shift: int) -> np.ndarray:
    """The table input: values times 3 * 2^left_shift, or times 3 with a rounding right shift."""
    values = values.astype(np.int64)
    if left_shift >= 0:
        return values * (3 << left_shift)
    return (values * 3 + (1 << (-left_shift - 1))) >> -left_shift


def _interpolate(magnitude: np.ndarray, fraction_bits: int) -> np.ndarray:
    index = np.minimum(magnitude >> fraction_bits, 254)
    low = SIGMOID_TABLE[index]
    return (low << fraction_bits) + (magnitude & ((1 << fraction_bits) - 1)) * (SIGMOID_TABLE[index + 1] - low)


def table_sigmoid(values: np.ndarray) -> np.ndarray:
    """Q3.12 int16 to Q0.15 sigmoid, as TFLite Micro's int16 LOGISTIC."""
    scaled = _scaled(values, 0)
    magnitude = np.abs(scaled)
    result = np.where(magnitude >> 9 >= 255, 0x7FFF << 10, _interpolate(magnitude, 9))
    result = np.where(scaled >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return result >> 10


def table_tanh(values: np.ndarray, left_shift: int) -> np.ndarray:
    """int16 to Q0.15 tanh, as TFLite Micro's int16 TANH (input Q3.12 when ``left_shift`` is 0)."""
    scaled = _scaled(values, left_shift)
    magnitude = np.abs(scaled)
    result = np.where(magnitude >> 8 >= 255, 0xFFFF << 8, _interpolate(magnitude, 8))
    result = np.where(scaled >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    return result >> 8


def micro_parameters(op, recipe, prepared: dict) -> dict:
    """Requantizers derived as TFLite Micro's Prepare does, per gate and for the updates
    (``recipe``: the LSTM's ``LstmQuantization``)."""
    if len(prepared["gates"]) != 4 or prepared["peepholes"] or "projection" in prepared:
        raise AnalysisError("TFLite Micro's integer LSTM needs all four gates, no peepholes, no projection")
    x_scale, h_scale = np.float32(scale_of(recipe.x)), np.float32(scale_of(op.state_q[0]))
    c_scale = float(np.float32(scale_of(op.state_q[1])))
    gate_scale = float(np.float32(2.0 ** -12))
    rx, rh = [], []
    for offset in range(4):
        rx.append(float(np.float32(x_scale * np.float32(scale_of(recipe.q(1 + offset))))) / gate_scale)
        rh.append(float(np.float32(h_scale * np.float32(scale_of(recipe.q(5 + offset))))) / gate_scale)
    units = prepared["units"]
    return {
        "rx": Requantizer(np.repeat(rx, units)), "rh": Requantizer(np.repeat(rh, units)),
        "forget_cell": Requantizer([2.0 ** -15]),
        "input_cell": Requantizer([2.0 ** -30 / c_scale]),
        "hidden": Requantizer([2.0 ** -30 / float(h_scale)]),
        "cell_clip": int(min(max(op.cell_clip / c_scale, -32768.0), 32767.0)) if op.cell_clip > 0 else 0,
    }


def _fully_connected(requantizer: Requantizer, accumulators: np.ndarray, wide: bool) -> np.ndarray:
    """A gate's FULLY_CONNECTED product requantized to int16: int32 accumulators (int8
    activations) or int64 ones with TFLite's 64-bit multiplier (int16 activations, 16x8)."""
    if wide:
        scaled = multiply_by_quantized_multiplier_64(accumulators, requantizer.multipliers, requantizer.shifts)
    else:
        scaled = requantizer(accumulators)
    return clip_inplace(scaled, -32768, 32767)


def run_micro(state, prepared: dict, micro: dict, sequence: np.ndarray, h_zero: int,
              cell_scale: int) -> list[np.ndarray]:
    """All time steps from the state's (h, c); updates them; the output of each step: int8
    (8x8_16), or int16 when the activations are int16 (TFLite Micro's 16x8 LSTM)."""
    steps, batch = sequence.shape[0], sequence.shape[1]
    wide = sequence.dtype == np.int16
    dtype = sequence.dtype.type
    low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    units = prepared["units"]
    columns = {gate: slice(i * units, (i + 1) * units) for i, gate in enumerate(prepared["gates"])}
    projected = (sequence.reshape(steps * batch, -1).astype(np.float64) @ prepared["wx"]).astype(np.int64)
    projected += prepared["bx"]
    x_parts = _fully_connected(micro["rx"], projected, wide).reshape(steps, batch, -1)
    h = state.h.reshape(batch, -1).astype(np.int64)
    c = state.c.reshape(batch, -1).astype(np.int64)
    outputs = []
    for step in range(steps):
        recurrent = (h.astype(np.float64) @ prepared["wh"]).astype(np.int64) + prepared["bh"]
        values = clip_inplace(x_parts[step] + _fully_connected(micro["rh"], recurrent, wide), -32768, 32767)
        forget = table_sigmoid(values[:, columns["forget"]])
        input_gate = table_sigmoid(values[:, columns["input"]])
        cell_gate = table_tanh(values[:, columns["cell"]], 0)
        output_gate = table_sigmoid(values[:, columns["output"]])
        kept = clip_inplace(micro["forget_cell"](forget * c), -32768, 32767)
        added = clip_inplace(micro["input_cell"](input_gate * cell_gate), -32768, 32767)
        c = clip_inplace(kept + added, -32768, 32767)
        if micro["cell_clip"] > 0:
            c = clip_inplace(c, -micro["cell_clip"], micro["cell_clip"])
        product = table_tanh(c, 15 + cell_scale - 3) * output_gate
        h = clip_inplace(micro["hidden"](product) + h_zero, low, high)
        outputs.append(h.astype(dtype))
    state.h = h.astype(state.h.dtype).reshape(state.h.shape)
    state.c = c.astype(state.c.dtype).reshape(state.c.shape)
    return outputs
