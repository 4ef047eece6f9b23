"""Comparisons, logical ops, SELECT/SELECT_V2, FLOOR_DIV, FLOOR_MOD and ADD_N on self-built
models, checked against the TFLite interpreter's reference kernels (comparisons of quantized
8-bit inputs of different scales included: TFLite compares their real values)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, all_pairs, check_model, q, random_values
from tests.tflite.raw import check_file, raw_model
from tractile.datum import DatumType
from tractile.errors import ModelFormatError, TractileError
from tractile.fact import TypedFact
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.writer import write_model
from tractile.ops import logic

RNG = np.random.default_rng(25)

COMPARISONS = {"equal": logic.Equal, "not_equal": logic.NotEqual, "less": logic.Less,
               "less_equal": logic.LessOrEqual, "greater": logic.Greater, "greater_equal": logic.GreaterOrEqual}


def two_inputs(op, dtype: str, shapes, quant=(None, None), dtype_b: str | None = None):
    g = GraphBuilder()
    a = g.input("a", dtype, shapes[0], quant[0])
    b = g.input("b", dtype_b or dtype, shapes[1], quant[1])
    return g.outputs(g.op("y", op, [a, b]))


@pytest.mark.parametrize("kind", sorted(COMPARISONS))
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_comparisons_broadcast(kind, dtype):
    model = two_inputs(COMPARISONS[kind](), dtype, [(2, 3, 4), (3, 1)])
    sets = []
    for _ in range(3):
        a, b = (random_values(f, RNG, -3, 3) for f in model.input_facts)
        a[0, :, 0] = b[:, 0]  # some equal pairs
        sets.append([a, b])
    out = check_model(model, sets)
    assert out[0][0].dtype == np.bool_ and out[0][0].any() and not out[0][0].all()


@pytest.mark.parametrize("kind", sorted(COMPARISONS))
@pytest.mark.parametrize("dtype", ["i8", "u8"])
def test_quantized_comparisons_every_pair(kind, dtype):
    """Inputs of different scales and zero points: the reals compare after TFLite's rescaling
    (so the result differs from comparing the raw integers)."""
    a, b = all_pairs(dtype)
    zero = 128 if dtype == "u8" else 0
    quant = (q(0.05, zero + 3), q(0.02, zero - 9))
    out = check_model(two_inputs(COMPARISONS[kind](), dtype, [a.shape, b.shape], quant), [[a, b]])[0][0]
    assert not np.array_equal(out, COMPARISONS[kind].ufunc(a, b))


def test_int16_and_bool_comparisons():
    a, b = (RNG.integers(-5, 5, (64,)).astype(np.int16) for _ in range(2))
    check_model(two_inputs(logic.Less(), "i16", [(64,), (64,)], (q(0.1), q(0.1))), [[a, b]])
    flags = [RNG.integers(0, 2, (16,)).astype(bool) for _ in range(2)]
    check_model(two_inputs(logic.Equal(), "bool", [(16,), (16,)]), [flags])


@pytest.mark.parametrize("op", [logic.And(), logic.Or()])
def test_logical_binary(op):
    model = two_inputs(op, "bool", [(3, 4), (4,)])
    check_model(model, [[random_values(f, RNG) for f in model.input_facts] for _ in range(2)])


def test_logical_not():
    g = GraphBuilder()
    model = g.outputs(g.op("y", logic.Not(), [g.input("x", "bool", (5, 3))]))
    check_model(model, [[random_values(model.input_fact(0), RNG)]])


@pytest.mark.parametrize("dtype,quant", [("f32", None), ("i8", q(0.1, -3)), ("i16", q(0.01)), ("i32", None)])
def test_select_v2_broadcasts(dtype, quant):
    g = GraphBuilder()
    condition = g.input("c", "bool", (3, 1))
    a, b = g.input("a", dtype, (1, 5), quant), g.input("b", dtype, (3, 5), quant)
    model = g.outputs(g.op("y", logic.Where(), [condition, a, b]))
    out = check_model(model, [[random_values(f, RNG) for f in model.input_facts] for _ in range(3)])
    assert model.output_fact(0).qparams == quant and out[0][0].shape == (3, 5)


def test_select_v1():
    """SELECT (v1) with a condition of the inputs' shape is a Where; one picking rows is refused."""
    fact = TypedFact(DatumType.F32, (4, 2))
    model = raw_model("SELECT", [("c", "bool", (4, 2)), ("a", "f32", (4, 2)), ("b", "f32", (4, 2))], fact)
    sets = [[random_values(f, RNG) for f in model.input_facts] for _ in range(2)]
    out = check_file(model, sets)
    np.testing.assert_array_equal(out[0], np.where(*sets[0]))
    rows = raw_model("SELECT", [("c", "bool", (4,)), ("a", "f32", (4, 2)), ("b", "f32", (4, 2))], fact)
    with pytest.raises(ModelFormatError, match="picking parts"):
        load_tflite(write_model(rows))


@pytest.mark.parametrize("opcode", ["FLOOR_DIV", "FLOOR_MOD"])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_floor_div_and_mod(opcode, dtype):
    model = raw_model(opcode, [("a", dtype, (3, 8)), ("b", dtype, (8,))], TypedFact(DatumType(dtype), (3, 8)))
    values = RNG.integers(-20, 20, (3, 8)).astype(DatumType(dtype).np)
    divisors = (RNG.integers(1, 6, 8) * RNG.choice([-1, 1], 8)).astype(DatumType(dtype).np)
    if dtype == "f32":
        values = values * np.float32(1.3)
    out = check_file(model, [[values, divisors]], oracle="builtin" if dtype == "i32" else "reference")
    ideal = np.floor_divide(values, divisors) if opcode == "FLOOR_DIV" else np.mod(values, divisors)
    np.testing.assert_allclose(out[0], ideal, rtol=1e-6)


@pytest.mark.parametrize("dtype,count", [("f32", 3), ("i32", 4), ("f32", 2)])
def test_add_n(dtype, count):
    names = "abcd"[:count]
    model = raw_model("ADD_N", [(name, dtype, (2, 5)) for name in names], TypedFact(DatumType(dtype), (2, 5)))
    sets = [[random_values(f, RNG, -1000, 1000) for f in model.input_facts] for _ in range(2)]
    check_file(model, sets)


@pytest.mark.parametrize("count,in_q,out_q", [(2, q(0.1, 2), q(0.1, 2)), (3, q(2 ** -4, -7), q(2 ** -3, 5)),
                                               (5, q(0.03, 0), q(0.2, -128))])
def test_int8_add_n_matches_tflite_micro(count, in_q, out_q, compile_cache):
    """TFLite Micro's int8 ADD_N (LiteRT has none), its sum starting from the offset zero point,
    and compiled bit for bit."""
    from tests.compile.harness import check_against_interpreter

    model = raw_model("ADD_N", [(name, "i8", (4, 9), in_q) for name in "abcde"[:count]],
                      TypedFact(DatumType.I8, (4, 9), qparams=out_q))
    sets = [[random_values(f, RNG) for f in model.input_facts] for _ in range(3)]
    sets.append([np.full((4, 9), value, np.int8) for value in (-128, 127, 0, 1, -1)[:count]])
    out = check_file(model, sets, oracle="micro")
    assert len({int(v) for o in out for v in o.reshape(-1)}) > 8
    loaded = load_tflite(write_model(model)).into_optimized()
    check_against_interpreter(loaded, compile_cache, inputs=sets, name="add_n")


def test_add_n_inputs_of_different_quantizations_are_refused():
    model = raw_model("ADD_N", [("a", "i8", (4,), q(0.1, 2)), ("b", "i8", (4,), q(0.2, 2))],
                      TypedFact(DatumType.I8, (4,), qparams=q(0.1, 2)))
    with pytest.raises(TractileError, match="share one scale and zero point"):
        load_tflite(write_model(model))


@pytest.mark.parametrize("opcode", ["SQUARE", "NOT_EQUAL"])
def test_square_and_not_equal_files(opcode):
    if opcode == "SQUARE":
        model = raw_model("SQUARE", [("x", "f32", (3, 7))], TypedFact(DatumType.F32, (3, 7)))
    else:
        model = raw_model("NOT_EQUAL", [("a", "i32", (3, 7)), ("b", "i32", (7,))], TypedFact(DatumType.BOOL, (3, 7)))
    sets = [[random_values(f, RNG, -2, 2) for f in model.input_facts] for _ in range(2)]
    check_file(model, sets)
