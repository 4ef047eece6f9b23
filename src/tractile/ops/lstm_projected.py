"""An LSTM over a sequence with TFLite's options: CIFG (no input gate), peepholes, a projection
of the output, cell and projection clips, batch- or time-major (TFLite's
UNIDIRECTIONAL_SEQUENCE_LSTM; ONNX's LSTM is ``recurrent.Lstm``).

The output and cell states are the op's state: they carry over from one run to the next
(``state.reset()`` restores their initial values), as TFLite's variable tensors do. Float
LSTMs compute in float32; ``quant`` set (the output's quantization, with ``state_q`` and
``hidden_q``) runs TFLite's integer 8x8_16 kernel (``ops.quantized.lstm``, or TFLite Micro's
with ``flavour="micro"``); an int16 input runs TFLite Micro's 16x8 kernel in either flavour
(LiteRT has none); a float input with int8 weights runs LiteRT's hybrid kernel
(``ops.quantized.hybrid_recurrent``). ``lstm_layer_norm.LayerNormLstm`` normalises its gates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .base import Op, expect_inputs
from .quantized.common import cached_recipe, recipe_of, with_recipe, zero_of
from .quantized.hybrid import is_hybrid
from .quantized.lstm import GATES, PEEPHOLE, lstm_quantization, prepare_integer, run_integer

#: TFLite's input slots of UNIDIRECTIONAL_SEQUENCE_LSTM
SLOTS = ("input", "input_to_input", "input_to_forget", "input_to_cell", "input_to_output", "recurrent_to_input",
         "recurrent_to_forget", "recurrent_to_cell", "recurrent_to_output", "cell_to_input", "cell_to_forget",
         "cell_to_output", "input_gate_bias", "forget_gate_bias", "cell_gate_bias", "output_gate_bias",
         "projection_weights", "projection_bias", "output_state", "cell_state", "input_layer_norm",
         "forget_layer_norm", "cell_layer_norm", "output_layer_norm")
STATE_SLOTS = (18, 19)
#: the layer-norm coefficients slot of each gate offset
LAYER_NORM = {0: 20, 1: 21, 2: 22, 3: 23}
#: the cell activations TFLite's LSTM takes (its fused activation codes)
ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT")
FLAVOURS = ("reference", "micro")


def cell_activation(values: np.ndarray, activation: str) -> np.ndarray:
    """A TFLite activation applied in place on a float array (returns it)."""
    if activation == "NONE":
        return values
    if activation == "RELU":
        return np.maximum(values, 0, out=values)
    if activation == "RELU6":
        return np.clip(values, 0, 6, out=values)
    if activation == "RELU_N1_TO_1":
        return np.clip(values, -1, 1, out=values)
    if activation == "TANH":
        return np.tanh(values, out=values)
    return np.signbit(values).astype(values.dtype)


def sigmoid(values: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-values))).astype(np.float32)


@dataclass(frozen=True, eq=False)
class ProjectedLstm(Op):
    """LSTM over a sequence. ``slots``: the TFLite input slots wired (in order, states excluded).

    ``initial_states``: (output state, cell state) initial values; ``state_q`` their
    quantization; ``hidden_q``: the quantization of the hidden intermediate (integer kernel);
    ``quant``: the output's quantization (set: the integer kernel); ``flavour``: the integer
    arithmetic of TFLite's reference kernel or of TFLite Micro's; ``asymmetric_inputs``: how
    the hybrid kernel quantizes its float rows. ``activation``: the cell activation.
    """

    slots: tuple = ()
    activation: str = "TANH"
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    time_major: bool = False
    initial_states: tuple = field(default=(), repr=False)
    state_q: tuple = (None, None)
    hidden_q: QParams | None = None
    quant: QParams | None = None
    flavour: str = "reference"
    asymmetric_inputs: bool = False
    is_stateless = False
    #: whether the gates are layer-normalised (the bias is then added after normalising)
    layer_norm: ClassVar[bool] = False

    def _index(self, slot: int) -> int | None:
        return self.slots.index(slot) if slot in self.slots else None

    def output_facts(self, inputs):
        expect_inputs(inputs, len(self.slots), self)
        if self.activation not in ACTIVATIONS:
            raise AnalysisError(f"unknown LSTM activation {self.activation!r}; expected one of "
                                f"{', '.join(ACTIVATIONS)}")
        for required in (0, 2, 3, 4, 6, 7, 8, 13, 14, 15):
            if required not in self.slots:
                raise AnalysisError(f"LSTM input {SLOTS[required]} is missing")
        self._check_layer_norm()
        x = inputs[0]
        if x.rank != 3:
            raise AnalysisError(f"LSTM input must be 3-d, got {x}")
        recurrent = inputs[self.slots.index(6)]
        n_output = recurrent.shape[1]
        if self._index(16) is not None:
            n_output = inputs[self.slots.index(16)].shape[0]
        if len(self.initial_states) != 2:
            raise AnalysisError("LSTM needs its output and cell state values")
        if self.flavour not in FLAVOURS:
            raise AnalysisError(f"unknown LSTM flavour {self.flavour!r}")
        if not x.dtype.is_float:
            if x.dtype not in (DatumType.I8, DatumType.I16) or self.quant is None:
                raise AnalysisError(f"an integer LSTM needs an int8 or int16 input and a quantized output, got {x}")
            if x.dtype == DatumType.I16:
                self._check_16x8()
        if self.quant is not None or self.is_hybrid(inputs):
            self._recipe(inputs)
        return [TypedFact(x.dtype, (x.shape[0], x.shape[1], n_output), qparams=self.quant)]

    def is_hybrid(self, inputs: list[TypedFact]) -> bool:
        return self.quant is None and is_hybrid(inputs[0], inputs[self.slots.index(2)])

    def _recipe(self, inputs: list[TypedFact]):
        if self.quant is not None:
            return cached_recipe(self, inputs, lambda: lstm_quantization(self, inputs))
        from .quantized.hybrid_recurrent import hybrid_lstm_scales

        return cached_recipe(self, inputs, lambda: hybrid_lstm_scales(self, inputs))

    def prepared(self, inputs):
        if self.quant is not None or self.is_hybrid(inputs):
            return with_recipe(self, self._recipe(inputs))
        return self

    def _check_16x8(self) -> None:
        """TFLite Micro's 16x8 LSTM, the only one there is, takes the plain LSTM only."""
        extra = [SLOTS[slot] for slot in (9, 10, 11, 16, 17, *LAYER_NORM.values()) if slot in self.slots]
        if 1 not in self.slots or 5 not in self.slots or extra or self.layer_norm:
            raise AnalysisError(f"an int16 (16x8) LSTM takes all four gates and no peepholes, projection or "
                                f"layer normalisation (as TFLite Micro), got {', '.join(extra) or 'CIFG'}")

    def _check_layer_norm(self) -> None:
        if any(slot in self.slots for slot in LAYER_NORM.values()):
            raise AnalysisError("layer-norm coefficients given to an LSTM op without layer normalisation")

    def gate_scale(self, offset: int) -> np.float32:
        """The scale of a gate's integer pre-activation: Q3.12, the activations' input."""
        return np.float32(2.0 ** -12)

    def finish_gate_float(self, inputs, offset: int, values: np.ndarray) -> np.ndarray:
        """A float gate's pre-activation, once summed (bias included unless layer-normalised)."""
        return values

    def normalise_gate(self, prepared: dict, gate: str, values: np.ndarray) -> np.ndarray:
        """An integer gate's pre-activation (int16 values, one row per batch), once summed."""
        return values

    def integer_layer_norm(self, recipe, inputs) -> dict:
        """What ``normalise_gate`` needs, prepared once with the weights."""
        return {}

    def weights(self, inputs, slot: int):
        index = self._index(slot)
        return None if index is None else inputs[index]

    def state(self):
        return _LstmState(self)

    def eval(self, inputs):
        return _LstmState(self).eval(inputs)


class _LstmState:
    def __init__(self, op: ProjectedLstm):
        self.op = op
        self.prepared = None
        self.reset()

    def reset(self) -> None:
        self.h = np.array(self.op.initial_states[0], copy=True)
        self.c = np.array(self.op.initial_states[1], copy=True)

    def eval(self, inputs):
        x = inputs[0]
        sequence = x if self.op.time_major else np.swapaxes(x, 0, 1)
        if x.dtype.kind != "f":
            outputs = self._run_integer(inputs, sequence)
        elif inputs[self.op.slots.index(2)].dtype == np.int8:
            from .quantized.hybrid_recurrent import run_hybrid_lstm

            outputs = run_hybrid_lstm(self, recipe_of(self.op), inputs, sequence)
        else:
            outputs = self._run_float(inputs, sequence)
        out = np.stack(outputs, axis=0)
        return [out if self.op.time_major else np.ascontiguousarray(np.swapaxes(out, 0, 1))]

    def _run_float(self, inputs, sequence):
        op = self.op
        w = op.weights
        gates = [offset for offset in range(4) if w(inputs, 1 + offset) is not None]
        units = w(inputs, 5 + gates[0]).shape[0]
        columns = {offset: slice(i * units, (i + 1) * units) for i, offset in enumerate(gates)}
        wx = np.concatenate([w(inputs, 1 + offset).T for offset in gates], axis=1)
        wh = np.ascontiguousarray(np.concatenate([w(inputs, 5 + offset).T for offset in gates], axis=1))
        biases = [w(inputs, 12 + offset) for offset in gates]
        steps, batch = sequence.shape[0], sequence.shape[1]
        projected = sequence.reshape(steps * batch, -1) @ wx
        if not op.layer_norm and any(bias is not None for bias in biases):
            projected += np.concatenate([bias if bias is not None else np.zeros(units, np.float32)
                                         for bias in biases])
        projected = projected.reshape(steps, batch, -1)
        peepholes = {offset: w(inputs, PEEPHOLE[offset]) for offset in gates if offset in PEEPHOLE}
        peepholes = {k: v for k, v in peepholes.items() if v is not None}
        h = self.h.reshape(batch, -1).astype(np.float32)
        c = self.c.reshape(batch, -1).astype(np.float32)
        projection, projection_bias = w(inputs, 16), w(inputs, 17)
        cifg = 0 not in columns
        outputs = []
        for step in range(steps):
            values = h @ wh
            values += projected[step]
            for offset in (0, 1):
                if offset in peepholes:
                    values[:, columns[offset]] += peepholes[offset] * c
            for offset in columns if op.layer_norm else ():
                if offset != 3:
                    values[:, columns[offset]] = op.finish_gate_float(inputs, offset, values[:, columns[offset]])
            forget = sigmoid(values[:, columns[1]])
            input_gate = 1.0 - forget if cifg else sigmoid(values[:, columns[0]])
            cell_gate = cell_activation(values[:, columns[2]].copy(), op.activation)
            c = forget * c + input_gate * cell_gate
            if op.cell_clip > 0:
                c = np.clip(c, -op.cell_clip, op.cell_clip)
            output_values = values[:, columns[3]]
            if 3 in peepholes:
                output_values = output_values + peepholes[3] * c
            output_values = op.finish_gate_float(inputs, 3, output_values)
            h = sigmoid(output_values) * cell_activation(c.copy(), op.activation)
            if projection is not None:
                h = h @ projection.T
                if projection_bias is not None:
                    h = h + projection_bias
                if op.proj_clip > 0:
                    h = np.clip(h, -op.proj_clip, op.proj_clip)
            h = h.astype(np.float32)
            outputs.append(h)
        self.h, self.c = h.reshape(self.h.shape), c.reshape(self.c.shape)
        return outputs

    def _run_integer(self, inputs, sequence):
        op = self.op
        recipe = recipe_of(op)
        if self.prepared is None or self.prepared[0] is not inputs[op.slots.index(2)]:
            self.prepared = (inputs[op.slots.index(2)], prepare_integer(op, recipe, inputs))
        p = self.prepared[1]
        if op.flavour == "micro" or sequence.dtype == np.int16:  # 16x8: only TFLite Micro has it
            from .quantized.lstm_micro import micro_parameters, run_micro

            if "micro" not in p:
                p["micro"] = micro_parameters(op, recipe, p)
            return run_micro(self, p, p["micro"], sequence, zero_of(op.state_q[0]), recipe.params["cell_scale"])
        return run_integer(self, recipe, p, sequence)


__all__ = ["ProjectedLstm", "SLOTS", "STATE_SLOTS", "LAYER_NORM", "GATES", "cell_activation", "sigmoid"]
