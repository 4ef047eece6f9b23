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

from tests.tflite.oracle import assert_float_close, reference_interpreter, run_reference
from tractile.datum import DatumType
from tractile.fact import QParams, TypedFact
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.registry import Translated
from tractile.formats.tflite.writer import write_model
from tractile.graph import OutletId
from tractile.model import TypedModel
from tractile.ops import binary as core_binary
from tractile.ops.activations import Clip, Relu, Tanh
from tractile.ops.io import Const
from tractile.ops.quantized.common import activation_range
from tractile.ops.tfl.common import TflOp


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

    def op(self, name: str, op, inputs, out_q=None, out_dtype=None, outputs: int = 1):
        """Wire ``op``: ``out_q`` (one QParams or a list) and ``out_dtype`` describe its outputs."""
        facts = [self.model.outlet_fact(i) for i in inputs]
        if isinstance(op, TflOp):
            out_q = tuple(out_q) if isinstance(out_q, (list, tuple)) else (out_q,) * outputs
            out_dtype = tuple(out_dtype) if isinstance(out_dtype, (list, tuple)) else (out_dtype,) * outputs
            op = dataclasses.replace(op, in_q=tuple(f.qparams for f in facts), out_q=out_q,
                                     out_dtypes=tuple(DatumType(d) if d is not None else None for d in out_dtype))
        produced = op.wire_typed(self.model, name, list(inputs))
        for index, outlet in enumerate(produced):
            self.model.outlet_labels[outlet] = name if len(produced) == 1 else f"{name}:{index}"
        return produced[0] if len(produced) == 1 else produced

    def binary(self, name: str, kind: str, inputs, quant: QParams | None = None, activation: str = "NONE",
               pot_scale_int16: bool = True):
        """A core arithmetic op (``kind`` as TFLite names it, lower case) with TFLite's fused
        ``activation`` wired after it as the loader does (a Clip in the quantized domain)."""
        op = BINARY_KINDS[kind](quant=quant, pot_scale_int16=pot_scale_int16)
        y = self.op(name if activation == "NONE" else f"{name}.pre", op, inputs)
        if activation == "NONE":
            return y
        fact = self.model.outlet_fact(y)
        if quant is not None:
            low, high = activation_range(activation, quant, fact.dtype)
            act = Clip(float(low), float(high))
        else:
            act = {"RELU": Relu(), "RELU6": Clip(0.0, 6.0), "RELU_N1_TO_1": Clip(-1.0, 1.0), "TANH": Tanh()}[activation]
        return self.op(name, act, [y])

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


def check_model(model: TypedModel, input_sets, rtol: float = 1e-5) -> list[list[np.ndarray]]:
    """Assert tractile (as built and as reloaded) and TFLite agree on every input set.

    The input sets run in sequence through one state each (variables persist, as in one
    TFLite interpreter). Integer outputs must be identical; float outputs agree within
    ``rtol``. Returns tractile's outputs for each input set.
    """
    data = write_model(model)
    loaded = load_tflite(data).into_optimized()
    built = model.into_optimized() if hasattr(model, "into_optimized") else model
    interpreter = reference_interpreter(data)
    built_state, loaded_state = built.state(), loaded.state()
    results = []
    for inputs in input_sets:
        inputs = [np.asarray(v) for v in inputs]
        expected = run_reference(interpreter, inputs)
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
