"""ONNX recurrent ops: RNN, GRU, LSTM (every opset: older ones only lack attributes)."""
from __future__ import annotations

from ....errors import AnalysisError
from ....ops.recurrent import GRU, LSTM, RNN, Recurrent
from ....ops.recurrent_activations import RnnActivation
from ..registry import OnnxNode, Translated, onnx_op


def _activations(node: OnnxNode, op_class: type[Recurrent], directions: int) -> tuple[RnnActivation, ...]:
    """The node's activations with their alphas and betas, consumed in order by the functions that
    take them (defaults where the lists run out)."""
    names = node.strings("activations", ())
    if not names:
        names = op_class.default_activations * directions
    elif len(names) == len(op_class.default_activations) and directions == 2:
        names = tuple(names) * 2
    alphas = list(node.floats("activation_alpha", ()))
    betas = list(node.floats("activation_beta", ()))
    activations = []
    for name in names:
        try:
            default = RnnActivation.make(name)
        except AnalysisError as error:
            raise node.error(str(error)) from None
        alpha = alphas.pop(0) if default.takes_alpha and alphas else None
        beta = betas.pop(0) if default.takes_beta and betas else None
        activations.append(RnnActivation.make(name, alpha, beta))
    return tuple(activations)


def _translate(node: OnnxNode, op_class: type[Recurrent], **extra) -> Translated:
    direction = node.string("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    present = [i for i in range(3, 3 + len(op_class.optional_names)) if node.present(i)]
    for index in range(3):
        if not node.present(index):
            raise node.error(f"input {index} ({'XWR'[index]}) is required")
    clip = node.float("clip", None)
    try:
        op = op_class(hidden_size=node.int("hidden_size", None), direction=direction,
                      layout=node.int("layout", 0), activations=_activations(node, op_class, directions),
                      clip=clip, optional_inputs=tuple(op_class.optional_names[i - 3] for i in present),
                      **extra)
    except AnalysisError as error:
        raise node.error(error.message) from None
    return Translated(op, [0, 1, 2, *present])


@onnx_op("RNN", since=1)
def rnn(node: OnnxNode):
    return _translate(node, RNN)


@onnx_op("GRU", since=1)
def gru(node: OnnxNode):
    return _translate(node, GRU, linear_before_reset=bool(node.int("linear_before_reset", 0)))


@onnx_op("LSTM", since=1)
def lstm(node: OnnxNode):
    return _translate(node, LSTM, input_forget=bool(node.int("input_forget", 0)))
