"""Helpers of the compiler's tests: compile a model, run it beside the interpreter, compare.

Every emitter is tested differentially: the compiled C and the op's NumPy ``eval`` are two
implementations of one specification, so integer outputs must be identical and float
outputs within 1e-5 (relative). Generated sources are also built alone with gcc and clang
under ``-std=c99 -Wall -Wextra -Werror``.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tractile.compile import CSource, compile_model, generate
from tractile.datum import DatumType
from tractile.fact import QParams, TypedFact
from tractile.model import TypedModel
from tractile.ops.io import Const

WARNING_FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wshadow", "-Wvla"]


def needs_cc() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler (install gcc)")


def compiled(model, cache_dir: Path, name: str = "model", **options):
    """``model`` compiled and built for this machine (cached under ``cache_dir``)."""
    needs_cc()
    return compile_model(model, name=name, cache_dir=cache_dir, **options)


def random_input(fact: TypedFact, rng: np.random.Generator) -> np.ndarray:
    """A random tensor over the whole range of an integer type, or standard normal floats."""
    shape = tuple(int(d) for d in fact.shape)
    if fact.dtype.is_float:
        return rng.standard_normal(shape).astype(fact.dtype.np)
    if fact.dtype == DatumType.BOOL:
        return rng.integers(0, 2, shape).astype(np.bool_)
    info = np.iinfo(fact.dtype.np)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True).astype(fact.dtype.np)


def assert_same_outputs(expected: list[np.ndarray], actual: list[np.ndarray], rtol: float = 1e-5,
                        atol: float = 1e-6, what: str = "") -> None:
    assert len(expected) == len(actual)
    for index, (want, got) in enumerate(zip(expected, actual)):
        assert got.shape == want.shape and got.dtype == want.dtype, f"{what} output {index}: {got.shape} {got.dtype}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{what} output {index}")
        else:
            if not np.array_equal(got, want):
                where = np.argwhere(got != want)[0]
                raise AssertionError(f"{what} output {index} differs first at {tuple(where)}: compiled "
                                     f"{got[tuple(where)]}, interpreter {want[tuple(where)]} "
                                     f"({int((got != want).sum())} of {got.size} differ)")


def check_against_interpreter(model, cache_dir: Path, runs: int = 5, seed: int = 0, inputs=None,
                              rtol: float = 1e-5, atol: float = 1e-6, name: str = "model", stateful: bool = False):
    """Compile ``model``, run it and the interpreter on random (or given) inputs; outputs must agree.

    With ``stateful``, one interpreter state and one compiled context carry their state over
    the runs (as TFLite's variable tensors do). Returns the compiled model.
    """
    cm = compiled(model, cache_dir, name=name)
    rng = np.random.default_rng(seed)
    state = model.state() if stateful else None
    batches = inputs if inputs is not None else [[random_input(f, rng) for f in cm.input_facts] for _ in range(runs)]
    for index, values in enumerate(batches):
        expected = (state.run(list(values)) if stateful else model.run(list(values)))
        actual = cm.run(list(values))
        assert_same_outputs(expected, actual, rtol, atol, what=f"run {index}")
    return cm


def assert_builds_without_warnings(source: CSource, tmp_path: Path, compilers=("gcc", "clang"),
                                   extra_flags=()) -> None:
    """Build the generated ``NAME.c`` alone with each compiler under strict C99 warnings."""
    source.write(tmp_path)
    tried = 0
    for compiler in compilers:
        if shutil.which(compiler) is None:
            continue
        tried += 1
        done = subprocess.run([compiler, *WARNING_FLAGS, "-O2", *extra_flags, "-c", f"{source.name}.c", "-o",
                               f"{source.name}.{compiler}.o"], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, f"{compiler} on the generated code:\n{done.stderr}"
    if not tried:
        pytest.skip(f"none of {compilers} is installed")


def q(scale: float, zero: int = 0) -> QParams:
    return QParams((float(np.float32(scale)),), (int(zero),), None)


def single_op_model(op, inputs: list, name: str = "op") -> TypedModel:
    """A model of one node: each input is a TypedFact (a model input), an array (a constant) or
    a pair (array, QParams) (a quantized constant)."""
    model = TypedModel()
    wires = []
    for index, item in enumerate(inputs):
        if isinstance(item, TypedFact):
            wires.append(model.add_source(f"x{index}", item))
        elif isinstance(item, tuple):
            wires.append(model.wire_node(f"c{index}", Const(np.asarray(item[0]), item[1]), [])[0])
        else:
            wires.append(model.wire_node(f"c{index}", Const(np.asarray(item)), [])[0])
    outputs = model.wire_node(name, op, wires)
    model.outputs = list(outputs)
    return model


__all__ = ["generate", "compiled", "check_against_interpreter", "assert_builds_without_warnings", "random_input",
           "single_op_model", "q", "assert_same_outputs"]
