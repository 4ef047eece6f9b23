"""ONNX element-wise math, variadic Sum/Mean/Max/Min, and activations."""
from __future__ import annotations

from ....ops import activations as act
from ....ops import binary, smooth, unary
from ....ops.expansion import LegacyBroadcast, VariadicChain
from ..registry import OnnxNode, onnx_op


def legacy_binary(node: OnnxNode, op):
    """Before opset 7, ``broadcast=1`` (with an optional ``axis``) was how a binary op broadcast."""
    if node.opset < 7 and node.int("broadcast", 0):
        return LegacyBroadcast(op, node.int("axis") if node.has("axis") else None)
    return op


for _name in ("Add", "Sub", "Mul", "Div", "Pow"):
    onnx_op(_name, since=1)(lambda node, _op=getattr(binary, _name): legacy_binary(node, _op()))


@onnx_op("Mod", since=10)
def mod(node: OnnxNode):
    fmod = node.int("fmod", 0)
    if fmod not in (0, 1):
        raise node.error(f"fmod must be 0 or 1, got {fmod}")
    return binary.Mod(bool(fmod))


@onnx_op("BitShift", since=11)
def bit_shift(node: OnnxNode):
    direction = node.string("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise node.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    return binary.BitShift(left=direction == "LEFT")


_UNARY_SINCE = {
    "Abs": 1, "Neg": 1, "Exp": 1, "Log": 1, "Sqrt": 1, "Reciprocal": 1, "Floor": 1, "Ceil": 1,
    "Round": 11, "Sign": 9, "Erf": 9, "Sin": 7, "Cos": 7, "Tan": 7, "Asin": 7, "Acos": 7, "Atan": 7,
    "Sinh": 9, "Cosh": 9, "Asinh": 9, "Acosh": 9, "Atanh": 9,
}
for _name, _since in _UNARY_SINCE.items():
    onnx_op(_name, since=_since)(lambda node, _op=getattr(unary, _name): _op())

_VARIADIC = {"Sum": lambda: VariadicChain(binary.Add()), "Max": lambda: VariadicChain(binary.Max()),
             "Min": lambda: VariadicChain(binary.Min()), "Mean": binary.VariadicMean}


def _variadic(node: OnnxNode):
    if node.input_count == 0 or not all(node.present(i) for i in range(node.input_count)):
        raise node.error("needs at least one input, and no empty input names")
    return _VARIADIC[node.op_type]()


for _name in _VARIADIC:
    onnx_op(_name, since=1)(_variadic)

# activations --------------------------------------------------------------------------------------
onnx_op("Relu", since=1)(lambda node: act.Relu())
onnx_op("Sigmoid", since=1)(lambda node: act.Sigmoid())
onnx_op("Tanh", since=1)(lambda node: act.Tanh())
onnx_op("LeakyRelu", since=1)(lambda node: act.LeakyRelu(node.float("alpha", 0.01)))
onnx_op("ThresholdedRelu", since=10)(lambda node: act.ThresholdedRelu(node.float("alpha", 1.0)))
onnx_op("HardSigmoid", since=1)(lambda node: act.HardSigmoid(node.float("alpha", 0.2), node.float("beta", 0.5)))
onnx_op("HardSwish", since=14)(lambda node: act.HardSwish())
onnx_op("Shrink", since=9)(lambda node: act.Shrink(node.float("bias", 0.0), node.float("lambd", 0.5)))
onnx_op("PRelu", since=1)(lambda node: LegacyBroadcast(act.PRelu(), channel_slope=True) if node.opset < 7
                                 else act.PRelu())
onnx_op("Elu", since=1)(lambda node: smooth.Elu(node.float("alpha", 1.0)))
onnx_op("Celu", since=12)(lambda node: smooth.Celu(node.float("alpha", 1.0)))
onnx_op("Softplus", since=1)(lambda node: smooth.Softplus())
onnx_op("Softsign", since=1)(lambda node: smooth.Softsign())
onnx_op("Mish", since=18)(lambda node: smooth.Mish())
onnx_op("Swish", since=24)(lambda node: smooth.Swish(node.float("alpha", 1.0)))


@onnx_op("Selu", since=1)
def selu(node: OnnxNode):
    defaults = smooth.Selu()
    return smooth.Selu(node.float("alpha", defaults.alpha), node.float("gamma", defaults.gamma))


@onnx_op("Gelu", since=20)
def gelu(node: OnnxNode):
    approximate = node.string("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise node.error(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return smooth.Gelu(approximate)


@onnx_op("Clip", since=1)
def clip_v1(node: OnnxNode):
    return act.Clip(node.float("min", None), node.float("max", None))


@onnx_op("Clip", since=11)
def clip_v11(node: OnnxNode):
    return act.Clip(dynamic_low=node.present(1), dynamic_high=node.present(2))
