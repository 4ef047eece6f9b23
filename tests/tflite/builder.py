"""Build small TFLite-op models by hand, and check them against the TFLite interpreter.

``GraphBuilder`` wires the core ops TFLite operators translate to into a TypedModel (through
the front end's own translation helpers for operators that become several core ops, with
:meth:`GraphBuilder.translate`); ``check_model`` writes the model with tractile's writer,
loads the file in both tractile and the TFLite interpreter (reference kernels), and asserts
that the three agree on every input set.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from tests.tflite.oracle import assert_float_close, micro_interpreter, reference_interpreter, run_micro, run_reference
from tractile.datum import DatumType
from tractile.fact import QParams, TypedFact
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.ops.conv import transpose_window
from tractile.formats.tflite.registry import Translated
from tractile.formats.tflite.writer import write_model
from tractile.graph import OutletId
from tractile.model import TypedModel
from tractile.ops import binary as core_binary
from tractile.ops.activations import Clip, HardSwish, LeakyRelu, Relu, Sigmoid, Tanh
from tractile.ops.conv import Conv
from tractile.ops.conv_transpose import ConvTranspose
from tractile.ops.io import Const
from tractile.ops.matmul import MatMul
from tractile.ops.pool import AveragePool, LpPool, MaxPool
from tractile.ops.quantized.common import activation_range
from tractile.ops.shape import Flatten
from tractile.ops.smooth import Elu, Gelu
from tractile.ops.window import Window


def q(scale: float, zero: int = 0) -> QParams:
    """Per-tensor quantization."""
    return QParams((float(np.float32(scale)),), (int(zero),), None)


def qc(scales, axis: int, zeros=None) -> QParams:
    """Per-channel quantization along ``axis``."""
    scales = tuple(float(np.float32(s)) for s in scales)
    zeros = tuple(int(z) for z in zeros) if zeros is not None else (0,) * len(scales)
    return QParams(scales, zeros, axis)


#: TFLite's binary op kinds -> the core op classes they translate to
BINARY_KINDS = {"add": core_binary.Add, "sub": core_binary.Sub, "mul": core_binary.Mul, "div": core_binary.Div,
                "squared_difference": core_binary.SquaredDifference, "maximum": core_binary.Max,
                "minimum": core_binary.Min}

#: TFLite's activation kinds -> the core ops they translate to (alpha, output quantization)
ACTIVATION_KINDS = {
    "relu": lambda alpha, quant: Relu(quant=quant), "relu6": lambda alpha, quant: Clip(0.0, 6.0, quant=quant),
    "relu_n1_to_1": lambda alpha, quant: Clip(-1.0, 1.0, quant=quant),
    "relu_0_to_1": lambda alpha, quant: Clip(0.0, 1.0, quant=quant),
    "logistic": lambda alpha, quant: Sigmoid(quant=quant), "tanh": lambda alpha, quant: Tanh(quant=quant),
    "leaky_relu": lambda alpha, quant: LeakyRelu(alpha, quant=quant),
    "hard_swish": lambda alpha, quant: HardSwish(quant=quant), "elu": lambda alpha, quant: Elu(quant=quant),
    "gelu": lambda alpha, quant: Gelu(quant=quant), "gelu_tanh": lambda alpha, quant: Gelu("tanh", quant=quant),
}


@dataclasses.dataclass(frozen=True)
class Window2D:
    """TFLite's window options (padding SAME or VALID, strides and dilations by height and width)."""

    padding: str = "SAME"
    stride_h: int = 1
    stride_w: int = 1
    dilation_h: int = 1
    dilation_w: int = 1

    def core(self, kernel) -> Window:
        """The core window the TFLite front end translates these options to, for a kernel (KH, KW)."""
        return Window.make(tuple(kernel), (self.stride_h, self.stride_w), (self.dilation_h, self.dilation_w), None,
                           "SAME_UPPER" if self.padding == "SAME" else "VALID")


#: TFLite's pool kinds -> the core op classes they translate to
POOL_KINDS = {"average": AveragePool, "max": MaxPool, "l2": LpPool}


class BuilderNode:
    """What the front end's translation helpers see of an operator (``TflNode``'s wiring part)."""

    def __init__(self, model: TypedModel, name: str):
        self.model, self.name, self.where = model, name, f"node {name!r}"
        self.constants = 0

    def outlet(self, item):
        if isinstance(item, OutletId):
            return item
        value, quant = item if isinstance(item, tuple) else (item, None)
        self.constants += 1
        return self.model.wire_node(f"{self.name}.c{self.constants}", Const(np.asarray(value), quant), [])[0]

    def wire(self, suffix, op, inputs):
        name = self.name if suffix is None else f"{self.name}.{suffix}"
        return op.wire_typed(self.model, name, [self.outlet(i) for i in inputs])

    def fact(self, item):
        return self.model.outlet_fact(self.outlet(item))


class GraphBuilder:
    """Wire TFLite ops into a TypedModel (one per subgraph)."""

    def __init__(self, name: str = "main"):
        self.model = TypedModel()
        self.model.properties["tflite_subgraph"] = name

    def input(self, name: str, dtype: str | DatumType, shape, quant: QParams | None = None):
        return self.model.add_source(name, TypedFact(DatumType(dtype), tuple(shape), qparams=quant))

    def const(self, name: str, value, dtype: str | DatumType | None = None, quant: QParams | None = None):
        value = np.asarray(value, dtype=DatumType(dtype).np if dtype is not None else None)
        return self.model.wire_node(name, Const(value, quant), [])[0]

    def op(self, name: str, op, inputs, outputs: int = 1):
        """Wire the core ``op`` (its quantization is in its input facts and its ``quant``)."""
        produced = op.wire_typed(self.model, name, list(inputs))
        for index, outlet in enumerate(produced):
            self.model.outlet_labels[outlet] = name if len(produced) == 1 else f"{name}:{index}"
        return produced[0] if len(produced) == 1 else produced

    def binary(self, name: str, kind: str, inputs, quant: QParams | None = None, activation: str = "NONE",
               pot_scale_int16: bool = True):
        """A core arithmetic op (``kind`` as TFLite names it, lower case) with TFLite's fused
        ``activation`` wired after it as the loader does (a Clip in the quantized domain)."""
        op = BINARY_KINDS[kind](quant=quant, pot_scale_int16=pot_scale_int16)
        return self.activated(name, op, inputs, quant, activation)

    def activated(self, name: str, op, inputs, quant: QParams | None, activation: str):
        """``op`` followed by TFLite's fused ``activation`` as the loader wires it (a Clip in the
        quantized domain when ``quant`` is set)."""
        y = self.op(name if activation == "NONE" else f"{name}.pre", op, inputs)
        return y if activation == "NONE" else self.fused_activation(name, y, activation, quant)

    def fused_activation(self, name: str, y, activation: str, quant: QParams | None):
        """TFLite's fused ``activation`` on ``y`` as the loader wires it (a Clip in the quantized
        domain; None when it changes nothing)."""
        fact = self.model.outlet_fact(y)
        if quant is not None:
            low, high = activation_range(activation, quant, fact.dtype)
            act = Clip(float(low), float(high))
        else:
            act = {"RELU": Relu(), "RELU6": Clip(0.0, 6.0), "RELU_N1_TO_1": Clip(-1.0, 1.0), "TANH": Tanh()}[activation]
        return self.op(name, act, [y])

    def dense(self, name: str, x, weights, bias=None, quant: QParams | None = None, activation: str = "NONE",
              flavour: str = "reference", asymmetric: bool = False):
        """A FULLY_CONNECTED as the loader translates it: a core MatMul by the (units, depth)
        weights transposed, the input flattened to rows first when it is not (rows, depth)."""
        depth = self.model.outlet_fact(weights).shape[1]
        fact = self.model.outlet_fact(x)
        if not (fact.rank == 2 and fact.shape[1] == depth):
            total, axis = 1, fact.rank
            while total != depth:
                axis -= 1
                total *= fact.shape[axis]
            x = self.op(f"{name}.flatten", Flatten(axis), [x])
        op = MatMul(has_bias=bias is not None, transpose_b=True, quant=quant, flavour=flavour,
                    asymmetric_inputs=asymmetric)
        inputs = [x, weights] + ([bias] if bias is not None else [])
        y = self.op(name if activation == "NONE" else f"{name}.pre", op, inputs)
        return y if activation == "NONE" else self.fused_activation(name, y, activation, quant)

    def conv(self, name: str, inputs, window: Window2D, quant: QParams | None = None, activation: str = "NONE"):
        """TFLite's CONV_2D: x (N,H,W,C), weights (O,KH,KW,C/groups), optional bias (O)."""
        x, w = (self.model.outlet_fact(i) for i in inputs[:2])
        op = Conv(window.core(w.shape[1:3]), int(x.shape[3]) // int(w.shape[3]), data_format="NHWC",
                  kernel_format="OHWI", quant=quant)
        return self.activated(name, op, inputs, quant, activation)

    def depthwise(self, name: str, inputs, window: Window2D, quant: QParams | None = None, activation: str = "NONE"):
        """TFLite's DEPTHWISE_CONV_2D: x (N,H,W,C), constant weights (1,KH,KW,C*M) (wired as
        [KH,KW,1,C*M], as the loader does), optional bias (C*M)."""
        x = self.model.outlet_fact(inputs[0])
        source = self.model.nodes[inputs[1].node]
        value, quant_w = source.op.value, source.op.qparams
        hwio = self.model.wire_node(f"{source.name}.hwio", Const(value.reshape(value.shape[1:3] + (1, value.shape[3])),
                                                                 quant_w), [])[0]
        op = Conv(window.core(value.shape[1:3]), int(x.shape[3]), data_format="NHWC", kernel_format="HWIO",
                  quant=quant)
        return self.activated(name, op, [inputs[0], hwio, *inputs[2:]], quant, activation)

    def transpose_conv(self, name: str, inputs, window: Window2D, out_shape, quant: QParams | None = None,
                       activation: str = "NONE", shape_input: bool = False):
        """TFLite's TRANSPOSE_CONV: x (N,H,W,I), weights (O,KH,KW,I), optional bias (O), then the
        output shape's input when ``shape_input`` (else ``out_shape``, a constant)."""
        x, w = (self.model.outlet_fact(i) for i in inputs[:2])
        core = window.core(w.shape[1:3])
        if shape_input:
            op = ConvTranspose(core, data_format="NHWC", kernel_format="OHWI", quant=quant, shape_input=True)
        else:
            explicit, extra = transpose_window(core, x.shape, w.shape, out_shape)
            op = ConvTranspose(explicit, output_padding=extra, data_format="NHWC", kernel_format="OHWI", quant=quant)
        return self.activated(name, op, inputs, quant, activation)

    def pool(self, name: str, kind: str, x, window: Window2D, filter_h: int, filter_w: int,
             quant: QParams | None = None, activation: str = "NONE"):
        """TFLite's AVERAGE_POOL_2D, MAX_POOL_2D or L2_POOL_2D (``kind`` average, max or l2)."""
        core = window.core((filter_h, filter_w))
        if kind == "l2":
            op = LpPool(core, 2, data_format="NHWC", mean=True)
        elif kind == "max":
            op = MaxPool(core, data_format="NHWC")
        else:
            op = AveragePool(core, data_format="NHWC", quant=quant)
        return self.activated(name, op, [x], quant, activation)
    def activation(self, name: str, kind: str, x, quant: QParams | None = None, alpha: float = 0.0):
        """The core op of TFLite activation ``kind`` (lower case) with the output quantization ``quant``."""
        return self.op(name, ACTIVATION_KINDS[kind](alpha, quant), [x])
    def translate(self, name: str, translation, *args):
        """Wire what ``translation(node, *args)`` (a front-end helper) gives: its outputs, or a
        :class:`Translated` op and inputs."""
        node = BuilderNode(self.model, name)
        result = translation(node, *args)
        if isinstance(result, Translated):
            result = result.op.wire_typed(self.model, name, [node.outlet(i) for i in result.slots])
        for index, outlet in enumerate(result):
            self.model.outlet_labels[outlet] = name if len(result) == 1 else f"{name}:{index}"
        return result[0] if len(result) == 1 else result

    def outputs(self, *outlets) -> TypedModel:
        self.model.outputs = list(outlets)
        return self.model


def random_values(fact, rng, low=None, high=None) -> np.ndarray:
    shape = tuple(int(d) for d in fact.shape)
    dtype = fact.dtype.np
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 3).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    return rng.integers(low, int(high) + 1, shape).astype(dtype)


def check_model(model: TypedModel, input_sets, rtol: float = 1e-5, oracle: str = "reference") -> list[list[np.ndarray]]:
    """Assert tractile (as built and as reloaded) and TFLite agree on every input set.

    The input sets run in sequence through one state each (variables persist, as in one
    TFLite interpreter). Integer outputs must be identical; float outputs agree within
    ``rtol``. ``oracle``: LiteRT's "reference" kernels, its default ("builtin") kernels, or
    TFLite "micro". Returns tractile's outputs for each input set.
    """
    data = write_model(model)
    loaded = load_tflite(data).into_optimized()
    built = model.into_optimized() if hasattr(model, "into_optimized") else model
    if oracle == "micro":
        interpreter, run_oracle = micro_interpreter(data, 1 << 20), run_micro
    else:
        interpreter, run_oracle = reference_interpreter(data, builtin=oracle == "builtin"), run_reference
    built_state, loaded_state = built.state(), loaded.state()
    results = []
    for inputs in input_sets:
        inputs = [np.asarray(v) for v in inputs]
        expected = run_oracle(interpreter, inputs)
        ours = built_state.run(inputs)
        again = loaded_state.run(inputs)
        assert len(ours) == len(expected)
        for index, (a, b, reference) in enumerate(zip(ours, again, expected)):
            assert a.dtype == reference.dtype, f"output {index}: {a.dtype} vs TFLite {reference.dtype}"
            assert a.shape == reference.shape, f"output {index}: shape {a.shape} vs TFLite {reference.shape}"
            np.testing.assert_array_equal(a, b, err_msg=f"output {index}: round trip differs")
            if a.dtype.kind == "f":
                assert_float_close(a, reference, rtol)
            else:
                np.testing.assert_array_equal(a, reference, err_msg=f"output {index} differs from TFLite")
        results.append(ours)
    assert results, "no input sets"
    return results


def all_pairs(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) pair of an 8-bit type, as two flat arrays."""
    info = np.iinfo(DatumType(dtype).np)
    values = np.arange(info.min, int(info.max) + 1)
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.reshape(-1).astype(info.dtype), b.reshape(-1).astype(info.dtype)


def every_value(dtype: str) -> np.ndarray:
    info = np.iinfo(DatumType(dtype).np)
    return np.arange(info.min, int(info.max) + 1).astype(info.dtype)


def assert_ties(real: np.ndarray) -> None:
    """Some ideal (real-valued) results fall exactly halfway between two integers."""
    real = np.asarray(real, dtype=np.float64)
    assert np.any(real - np.floor(real) == 0.5), "the inputs do not exercise rounding ties"


def assert_saturates(output: np.ndarray, low: int, high: int) -> None:
    """The output reaches both clamp bounds."""
    assert output.min() == low and output.max() == high, \
        f"the output spans [{output.min()}, {output.max()}], not the clamp [{low}, {high}]"
