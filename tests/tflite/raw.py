"""TFLite files holding any one builtin operator (those tractile translates into several core ops
or into an op it writes back as another builtin: ADD_N, FLOOR_DIV, SQUARE, SELECT...), and
checking their translation against the TFLite interpreter.

:class:`RawOperator` is a test-only op written verbatim as the builtin it names; its output
fact is given. :func:`check_file` loads the file with tractile, runs it beside the oracle,
then writes tractile's translation back and checks it again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tests.tflite.builder import GraphBuilder
from tests.tflite.oracle import assert_float_close, micro_interpreter, reference_interpreter, run_micro, run_reference
from tractile.fact import TypedFact
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.registry import OpSpec, tflite_writer
from tractile.formats.tflite.writer import write_model
from tractile.ops.base import Op


@dataclass(frozen=True)
class RawOperator(Op):
    """The builtin ``opcode`` (with ``options``: (table, fields)) producing ``fact``."""

    opcode: str
    fact: TypedFact
    options: tuple | None = field(default=None, hash=False, compare=False)

    def output_facts(self, inputs):
        return [self.fact]


@tflite_writer(RawOperator)
def _write_raw(op: RawOperator, ctx) -> OpSpec:
    return OpSpec(op.opcode, op.options)


def raw_model(opcode: str, inputs, fact: TypedFact, options=None):
    """A one-operator model: ``inputs`` are (name, dtype, shape[, quant]) model inputs or constant arrays."""
    g = GraphBuilder()
    wires = []
    for index, item in enumerate(inputs):
        if isinstance(item, tuple):
            wires.append(g.input(*item))
        else:
            wires.append(g.const(f"c{index}", item))
    return g.outputs(g.op("y", RawOperator(opcode, fact, options), wires))


def check_file(model, input_sets, rtol: float = 1e-5, oracle: str = "reference") -> list[np.ndarray]:
    """tractile's translation of the written ``model`` (and of its own written translation) agrees
    with the oracle on every input set: integers identical, floats within ``rtol``."""
    data = write_model(model)
    loaded = load_tflite(data)
    again = load_tflite(write_model(loaded))
    if oracle == "micro":
        interpreter, run = micro_interpreter(data, 1 << 20), run_micro
    else:
        interpreter, run = reference_interpreter(data, builtin=oracle == "builtin"), run_reference
    results = []
    for inputs in input_sets:
        expected = run(interpreter, [np.asarray(v) for v in inputs])[0]
        ours = loaded.into_optimized().run(inputs)[0]
        np.testing.assert_array_equal(ours, again.into_optimized().run(inputs)[0], err_msg="round trip differs")
        assert ours.dtype == expected.dtype and ours.shape == expected.shape, f"{ours.dtype}{ours.shape} vs " \
                                                                              f"{expected.dtype}{expected.shape}"
        if ours.dtype.kind == "f":
            assert_float_close(ours, expected, rtol)
        else:
            np.testing.assert_array_equal(ours, expected)
        results.append(ours)
    return results
