"""Translations of the activation operators (both directions): RELU, RELU6, RELU_N1_TO_1,
RELU_0_TO_1, LOGISTIC, TANH, LEAKY_RELU, HARD_SWISH, ELU, GELU, PRELU.

On quantized tensors the core activation carries the output's quantization (``quant``) and
follows TFLite's integer recipe; a ReLU whose output keeps the input's quantization is a
Clip at integer bounds (what the fused activations are too).
"""
from __future__ import annotations

from ....errors import ModelFormatError
from ....fact import TypedFact
from ....ops.activations import Clip, HardSwish, LeakyRelu, PRelu, Relu, Sigmoid, Tanh
from ....ops.quantized.activation import relu_recipe
from ....ops.quantized.common import QUANTIZED, integer_limits
from ....ops.smooth import Elu, Gelu
from ..registry import OpSpec, TflNode, tflite_op, tflite_writer

#: the ReLU family's real bounds (None: unbounded)
RELU_BOUNDS = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}
_SIMPLE = {"LOGISTIC": Sigmoid, "TANH": Tanh, "HARD_SWISH": HardSwish, "ELU": Elu}


def input_quantized(node: TflNode, slot: int = 0) -> bool:
    tensor = node.tensor(slot)
    return tensor.quant is not None and tensor.dtype in QUANTIZED


def output_quant(node: TflNode):
    """The output's quantization for a quantized operator (an error when it has none)."""
    quant = node.output_quant()
    if quant is None:
        raise ModelFormatError(f"{node.where}: a quantized input needs a quantized output")
    return quant


@tflite_op(*RELU_BOUNDS)
def relu(node: TflNode):
    low, high = RELU_BOUNDS[node.opcode]
    if not input_quantized(node):
        return Relu() if node.opcode == "RELU" else Clip(low, high)
    quant = output_quant(node)
    tensor = node.tensor(0)
    if quant == tensor.quant:
        recipe = relu_recipe(TypedFact(tensor.dtype, tensor.shape, qparams=tensor.quant), quant, low, high)
        return Clip(float(recipe.low), float(recipe.high))
    return Relu(quant=quant) if node.opcode == "RELU" else Clip(low, high, quant=quant)


@tflite_op(*_SIMPLE)
def simple(node: TflNode):
    return _SIMPLE[node.opcode](quant=output_quant(node) if input_quantized(node) else None)


@tflite_op("LEAKY_RELU")
def leaky_relu(node: TflNode):
    options = node.options("LeakyReluOptions")
    alpha = float(options.Alpha()) if options is not None else 0.0
    return LeakyRelu(alpha, quant=output_quant(node) if input_quantized(node) else None)


@tflite_op("GELU")
def gelu(node: TflNode):
    options = node.options("GeluOptions")
    approximate = bool(options.Approximate()) if options is not None else False
    return Gelu("tanh" if approximate else "none", quant=output_quant(node) if input_quantized(node) else None)


@tflite_op("PRELU")
def prelu(node: TflNode):
    return PRelu(quant=output_quant(node) if input_quantized(node) else None)


def relu_name(op, fact) -> str | None:
    """The ReLU builtin a Relu or Clip on an output of ``fact`` is (None: none)."""
    low, high = (op.low, op.high) if type(op) is Clip else (0.0, None)
    if type(op) is Clip and (op.dynamic_low or op.dynamic_high):
        return None
    if op.quant is None and fact.qparams is not None and fact.dtype in QUANTIZED:
        # integers clamped as they are: the ReLU whose bounds quantize to these
        type_low, type_high = integer_limits(fact.dtype)
        bounds = (type_low if low is None else low, type_high if high is None else high)
        for name, (real_low, real_high) in RELU_BOUNDS.items():
            recipe = relu_recipe(fact, fact.qparams, real_low, real_high)
            if (recipe.low, recipe.high) == bounds:
                return name
        return None
    return next((name for name, real in RELU_BOUNDS.items() if real == (low, high)), None)


@tflite_writer(Relu, Clip)
def write_relu(op, ctx) -> OpSpec:
    """A core Relu or Clip that is a TFLite ReLU operator (RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1)."""
    name = relu_name(op, ctx.output_fact(0))
    if name is None:
        raise ModelFormatError(f"node {ctx.node.name!r} ({op}) has no TFLite operator")
    return OpSpec(name)


_WRITTEN = {Sigmoid: "LOGISTIC", Tanh: "TANH", HardSwish: "HARD_SWISH", Elu: "ELU", PRelu: "PRELU"}


@tflite_writer(*_WRITTEN)
def write_simple(op, ctx) -> OpSpec:
    if type(op) is Elu and op.alpha != 1.0:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's ELU has alpha 1, not {op.alpha}")
    return OpSpec(_WRITTEN[type(op)])


@tflite_writer(LeakyRelu)
def write_leaky_relu(op: LeakyRelu, ctx) -> OpSpec:
    return OpSpec("LEAKY_RELU", ("LeakyReluOptions", {"Alpha": op.alpha}))


@tflite_writer(Gelu)
def write_gelu(op: Gelu, ctx) -> OpSpec:
    return OpSpec("GELU", ("GeluOptions", {"Approximate": op.approximate == "tanh"}))
