"""Oracles for the TFLite tests: the TFLite interpreter (reference kernels) and TFLite Micro."""
from __future__ import annotations

import numpy as np
import pytest


def reference_interpreter(model: bytes | str, builtin: bool = False):
    """An ai-edge-litert interpreter running TFLite's reference kernels (BUILTIN_REF), or its
    default kernels (``builtin``: for the ops the reference resolver lacks, e.g. CEIL, ELU)."""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    source = {"model_content": model} if isinstance(model, (bytes, bytearray)) else {"model_path": str(model)}
    resolver = litert.OpResolverType.BUILTIN if builtin else litert.OpResolverType.BUILTIN_REF
    interpreter = litert.Interpreter(**source, experimental_op_resolver_type=resolver)
    interpreter.allocate_tensors()
    return interpreter


def run_reference(interpreter, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """One invoke (variable tensors carry over, as in TFLite)."""
    for detail, value in zip(interpreter.get_input_details(), inputs):
        if tuple(detail["shape"]) != value.shape:
            interpreter.resize_tensor_input(detail["index"], value.shape)
            interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def micro_interpreter(model: bytes, arena_size: int | None = None):
    """A TFLite Micro interpreter (the tflite-micro package); ``arena_size`` in bytes (default:
    the package's guess, ten times the model's size, too small for tiny models)."""
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    return runtime.Interpreter.from_bytes(bytes(model), arena_size=arena_size)


def run_micro(interpreter, inputs: list[np.ndarray]) -> list[np.ndarray]:
    for index, value in enumerate(inputs):
        interpreter.set_input(value, index)
    interpreter.invoke()
    outputs, index = [], 0
    while True:
        try:
            outputs.append(np.array(interpreter.get_output(index), copy=True))
        except (IndexError, RuntimeError, ValueError):
            return outputs
        index += 1
        if index > 16:
            return outputs


def random_inputs(facts, rng: np.random.Generator, count: int = 1) -> list[np.ndarray]:
    """Random values over the whole range of each input's type (floats: standard normal)."""
    values = []
    for fact in facts:
        shape = tuple(fact.shape)
        if count > 1:
            shape = (count,) + shape[1:]
        dtype = fact.dtype.np
        if dtype.kind == "f":
            values.append(rng.standard_normal(shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            values.append(rng.integers(info.min, int(info.max) + 1, shape).astype(dtype))
    return values


def assert_float_close(got: np.ndarray, expected: np.ndarray, rtol: float = 1e-5) -> None:
    """Float outputs agree within ``rtol`` relative to the output's magnitude (absolute below 1).

    TFLite sums in float32 in its own order; on outputs near zero the cancellation makes a
    purely relative bound meaningless, so magnitudes below 1 count as 1.
    """
    scale = max(float(np.max(np.abs(expected))), 1.0)
    error = float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64)))) / scale if got.size else 0.0
    assert error <= rtol, f"relative error {error:.3g} > {rtol}"
