"""An LSTM whose gates are layer-normalised (TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM with inputs 20
to 23), float, hybrid and 8x8_16.

Each gate's pre-activation (input and recurrent products, peephole) is normalised over the
cells of each batch row, scaled by the gate's layer-norm coefficients, and only then given
the gate bias. In float the normalisation is a plain mean / standard deviation (variance
plus 1e-8); the integer kernel is TFLite's ``ApplyLayerNorm`` (``ops.quantized.lstm_layer_norm``).

TFLite Micro's LSTM kernel refuses layer normalisation, so the micro flavour does too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import AnalysisError, UnsupportedOpError
from ..fact import TypedFact
from .lstm_projected import GATES, LAYER_NORM, ProjectedLstm
from .quantized.common import scale_of
from .quantized.lstm_layer_norm import layer_norm_integer, layer_norm_scales


def micro_refusal(where: str) -> UnsupportedOpError:
    """The error for a layer-normalised LSTM asked to run with TFLite Micro's semantics."""
    return UnsupportedOpError(
        f"{where}: TFLite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM refuses layer-normalised LSTMs (inputs 20-23), "
        "so the micro flavour has no semantics to follow; load with flavour='reference'",
        [("tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM", 1, [where])])


@dataclass(frozen=True, eq=False)
class LayerNormLstm(ProjectedLstm):
    """A layer-normalised LSTM (see the module's docstring).

    ``gate_q``: the quantization of the four gate intermediates (input, forget, cell, output),
    whose scales the integer kernel requantizes the gates' products to.
    """

    gate_q: tuple = (None, None, None, None)
    layer_norm: ClassVar[bool] = True

    def _check_layer_norm(self) -> None:
        if self.flavour == "micro":
            raise micro_refusal("a layer-normalised LSTM")
        gates = [offset for offset in range(4) if 1 + offset in self.slots]
        for offset in range(4):
            given = LAYER_NORM[offset] in self.slots
            if given != (offset in gates):
                problem = "extra" if given else "missing"
                raise AnalysisError(f"a layer-normalised LSTM needs the {GATES[offset]} gate's layer-norm "
                                    f"coefficients exactly when it has that gate ({problem})")

    def output_facts(self, inputs: list[TypedFact]):
        self._check_layer_norm()
        if self.quant is not None and len(inputs) == len(self.slots):
            for offset in range(4):
                if 1 + offset in self.slots:
                    quant = self.gate_q[offset] if offset < len(self.gate_q) else None
                    if quant is None or scale_of(quant) <= 0:
                        raise AnalysisError(f"an integer layer-normalised LSTM needs the scale of its "
                                            f"{GATES[offset]} gate intermediate")
                    coefficients = inputs[self.slots.index(LAYER_NORM[offset])].qparams
                    if coefficients is None or scale_of(coefficients) <= 0:
                        raise AnalysisError(f"the {GATES[offset]} layer-norm coefficients need a scale")
        return super().output_facts(inputs)

    def gate_scale(self, offset: int) -> np.float32:
        return np.float32(scale_of(self.gate_q[offset]))

    def finish_gate_float(self, inputs, offset: int, values: np.ndarray) -> np.ndarray:
        coefficients = self.weights(inputs, LAYER_NORM[offset])
        bias = self.weights(inputs, 12 + offset)
        normalised = normalise_float(values) * coefficients
        return (normalised + bias if bias is not None else normalised).astype(np.float32)

    def integer_layer_norm(self, recipe, inputs) -> dict:
        prepared = {}
        for offset, gate in enumerate(GATES):
            coefficients = self.weights(inputs, LAYER_NORM[offset])
            if coefficients is None:
                continue
            bias = self.weights(inputs, 12 + offset)
            bias = bias.astype(np.int64) if bias is not None else np.zeros(coefficients.shape, np.int64)
            requant, guard = layer_norm_scales(scale_of(recipe.q(LAYER_NORM[offset])))
            prepared[gate] = (coefficients.astype(np.int64), bias, requant, guard)
        return prepared

    def normalise_gate(self, prepared: dict, gate: str, values: np.ndarray) -> np.ndarray:
        return layer_norm_integer(values, *prepared["layer_norm"][gate])


def normalise_float(values: np.ndarray) -> np.ndarray:
    """(x - mean) / sqrt(variance + 1e-8) over the last axis, as TFLite's MeanStddevNormalization."""
    values = values.astype(np.float32)
    mean = values.mean(axis=-1, keepdims=True, dtype=np.float32)
    variance = np.square(values - mean).mean(axis=-1, keepdims=True, dtype=np.float32)
    return (values - mean) * (np.float32(1.0) / np.sqrt(variance + np.float32(1e-8)))
