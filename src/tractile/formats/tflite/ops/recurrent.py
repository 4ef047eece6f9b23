"""Translations of UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF onto the core ProjectedLstm / LayerNormLstm
and Svdf, whose states (TFLite's variable tensors) are op state written back as variables."""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....errors import ModelFormatError
from ....fact import QParams
from ....ops.lstm_layer_norm import LayerNormLstm, micro_refusal
from ....ops.lstm_projected import LAYER_NORM, STATE_SLOTS, ProjectedLstm
from ....ops.quantized.common import QUANTIZED
from ....ops.svdf import Svdf
from ..reader import buffer_value
from ..registry import OpSpec, TflNode, Translated, activation_code, activation_name, tflite_op, tflite_writer


@tflite_op("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(node: TflNode):
    options = node.options("UnidirectionalSequenceLSTMOptions")
    if len(node.inputs) not in (20, 24):
        raise ModelFormatError(f"{node.where}: expected 20 or 24 inputs, got {len(node.inputs)}")
    for slot in STATE_SLOTS:
        if not node.present(slot):
            raise ModelFormatError(f"{node.where}: state input {slot} is missing")
    slots = tuple(s for s in range(len(node.inputs)) if node.present(s) and s not in STATE_SLOTS)
    hidden_q = None
    intermediates = node.operator.intermediates
    if len(intermediates) == 5 and intermediates[4] >= 0:
        hidden_q = node.subgraph.tensors[intermediates[4]].quant
    # as TFLite decides: layer-normalised when the forget gate's coefficients are given
    layer_norm = len(node.inputs) == 24 and node.present(LAYER_NORM[1])
    extra: dict = {}
    if layer_norm:
        if node.flavour == "micro":
            raise micro_refusal(node.where)
        extra["gate_q"] = tuple(node.subgraph.tensors[intermediates[i]].quant
                                if len(intermediates) == 5 and intermediates[i] >= 0 else None for i in range(4))
    else:  # TFLite ignores other coefficients then
        slots = tuple(slot for slot in slots if slot not in LAYER_NORM.values())
    kind = LayerNormLstm if layer_norm else ProjectedLstm
    op = kind(
        slots=slots,
        activation=activation_name(options.FusedActivationFunction()) if options is not None else "TANH",
        cell_clip=float(options.CellClip()) if options is not None else 0.0,
        proj_clip=float(options.ProjClip()) if options is not None else 0.0,
        time_major=bool(options.TimeMajor()) if options is not None else False,
        initial_states=(_reset_value(node, 18), _reset_value(node, 19)),
        state_q=(node.tensor(18).quant, node.tensor(19).quant), hidden_q=hidden_q, quant=_output_quant(node),
        flavour=node.flavour, asymmetric_inputs=bool(options.AsymmetricQuantizeInputs()) if options is not None
        else False, **extra)
    return Translated(op, list(slots))


def _output_quant(node: TflNode):
    return node.output_quant() if node.tensor(0).dtype in QUANTIZED and node.tensor(0).quant is not None else None


def _reset_value(node: TflNode, slot: int):
    """A state's value before the first run: TFLite and TFLite Micro reset an int8 variable to
    its zero point (the real 0) when the file gives it no buffer, and any other to zeros."""
    value = node.variable_value(slot)
    tensor = node.tensor(slot)
    if buffer_value(node.loader.info, tensor, node.where) is None and value.dtype == np.int8 \
            and tensor.quant is not None and len(tensor.quant.zero_point) == 1 and tensor.quant.zero_point[0]:
        value = np.full_like(value, tensor.quant.zero_point[0])
    return value


@tflite_writer(ProjectedLstm, LayerNormLstm)
def write_lstm(op: ProjectedLstm, ctx) -> OpSpec:
    inputs = []
    for slot in range(24):
        if slot in op.slots:
            inputs.append(op.slots.index(slot))
        elif slot in STATE_SLOTS:
            which = STATE_SLOTS.index(slot)
            value = np.asarray(op.initial_states[which])
            quant = op.state_q[which]
            if quant is not None and len(quant.zero_point) == 1 and np.all(value == quant.zero_point[0]):
                value = np.zeros_like(value)  # no buffer: readers reset the state to its zero point
            inputs.append(ctx.variable(value, ("output_state", "cell_state")[which], quant))
        else:
            inputs.append(None)
    intermediates = []
    if op.hidden_q is not None:
        intermediates = [_gate_intermediate(op, ctx, i) for i in range(4)]
        intermediates.append(ctx.scratch("effective_hidden_scale", DatumType.I8, op.hidden_q))
    fields = {"FusedActivationFunction": activation_code(op.activation), "CellClip": op.cell_clip,
              "ProjClip": op.proj_clip, "TimeMajor": op.time_major, "AsymmetricQuantizeInputs": op.asymmetric_inputs}
    return OpSpec("UNIDIRECTIONAL_SEQUENCE_LSTM", ("UnidirectionalSequenceLSTMOptions", fields), inputs,
                  intermediates)


def _gate_intermediate(op: ProjectedLstm, ctx, offset: int):
    """A gate's intermediate tensor: TFLite reads the scales of all four when the LSTM is
    layer-normalised (a CIFG one's unused input gate gets Q3.12)."""
    if not isinstance(op, LayerNormLstm):
        return ctx.scratch(f"intermediate_{offset}", DatumType.F32)
    quant = op.gate_q[offset] if offset < len(op.gate_q) else None
    return ctx.scratch(f"intermediate_{offset}", DatumType.I16, quant or QParams((2.0 ** -12,), (0,), None))


@tflite_op("SVDF")
def svdf(node: TflNode):
    options = node.options("SVDFOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing SVDFOptions")
    if not node.present(4):
        raise ModelFormatError(f"{node.where}: the state input is missing")
    slots = [0, 1, 2] + ([3] if node.present(3) else [])
    op = Svdf(rank=options.Rank(), activation=activation_name(options.FusedActivationFunction()),
              has_bias=node.present(3), initial_state=_reset_value(node, 4), state_q=node.tensor(4).quant,
              quant=_output_quant(node), asymmetric_inputs=bool(options.AsymmetricQuantizeInputs()))
    return Translated(op, slots)


@tflite_writer(Svdf)
def write_svdf(op: Svdf, ctx) -> OpSpec:
    inputs = [0, 1, 2, 3 if op.has_bias else None, ctx.variable(op.initial_state, "state", op.state_q)]
    fields = {"Rank": op.rank, "FusedActivationFunction": activation_code(op.activation),
              "AsymmetricQuantizeInputs": op.asymmetric_inputs}
    return OpSpec("SVDF", ("SVDFOptions", fields), inputs)
