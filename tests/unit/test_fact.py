"""Facts: unification, conflicts naming both facts, fact specs."""
import numpy as np
import pytest

from tractile import AnalysisError, DatumType, InferenceFact, ShapeFactoid, TypedFact, parse_fact, symbol, unify
from tractile.errors import TractileError

F32, I64 = DatumType.F32, DatumType.I64


def test_unify_fills_unknowns_both_ways():
    a = InferenceFact(F32, ShapeFactoid((None, 3), False))
    b = InferenceFact(None, ShapeFactoid((2, None), False))
    merged = unify(a, b)
    assert merged.dtype == F32
    assert merged.shape == ShapeFactoid((2, 3), False)
    assert merged.is_complete()


def test_open_shape_gets_closed_by_known_rank():
    opened = InferenceFact(None, ShapeFactoid((1,), True))
    closed = InferenceFact(None, ShapeFactoid((None, 5, 6), False))
    assert unify(opened, closed).shape == ShapeFactoid((1, 5, 6), False)


def test_value_brings_dtype_and_shape():
    fact = unify(InferenceFact(), InferenceFact(value=np.array([1, 2], dtype=np.int64)))
    assert fact.dtype == I64 and fact.shape.dims == (2,) and fact.is_complete()


@pytest.mark.parametrize("a, b, words", [
    (InferenceFact(F32), InferenceFact(I64), ["f32", "i64"]),
    (InferenceFact(None, (1, 2)), InferenceFact(None, (1, 2, 3)), ["ranks 2 and 3"]),
    (InferenceFact(None, (4,)), InferenceFact(None, (5,)), ["4", "5"]),
    (InferenceFact(value=np.array([1])), InferenceFact(value=np.array([2])), ["values differ"]),
])
def test_conflicts_name_both_facts(a, b, words):
    with pytest.raises(AnalysisError) as error:
        unify(a, b)
    text = str(error.value)
    assert str(a) in text and str(b) in text
    for word in words:
        assert word in text


def test_concrete_dim_wins_over_symbol():
    n = symbol("N")
    assert unify(InferenceFact(None, (n, 3)), InferenceFact(None, (1, 3))).shape.dims == (1, 3)


def test_parse_fact_spec_forms():
    fact = parse_fact("N,3,224,224,f32")
    assert fact.dtype == F32 and fact.shape.dims == (symbol("N"), 3, 224, 224) and not fact.shape.open
    assert parse_fact("?,3,f32").shape.dims == (None, 3)
    assert parse_fact("1,..,i64").shape.open
    assert parse_fact(((2, "T"), "float32")).shape.dims == (2, symbol("T"))
    assert parse_fact(np.zeros((2, 3), np.int8)).dtype == DatumType.I8
    assert parse_fact("f32").shape.dims == () and not parse_fact("f32").shape.open


def test_parse_fact_rejects_garbage_clearly():
    with pytest.raises(TractileError, match="cannot read fact"):
        parse_fact("1,3,2+,f32")
    with pytest.raises(TractileError, match="unknown datum type"):
        parse_fact((("1",), "float99"))


def test_typed_fact_display_and_equality():
    fact = TypedFact(F32, (symbol("N"), 3))
    assert str(fact) == "N,3,f32"
    assert fact == TypedFact(F32, (symbol("N"), 3))
    assert fact != TypedFact(F32, (symbol("N"), 4))
    konst = TypedFact.from_array(np.array([1.5], np.float32))
    assert "value=[1.5]" in str(konst)


def test_datum_type_numpy_round_trip():
    for datum in (DatumType.F32, DatumType.I8, DatumType.U16, DatumType.BOOL, DatumType.F16, DatumType.BF16,
                  DatumType.F8E4M3FN, DatumType.I4):
        assert DatumType.from_numpy(datum.np) == datum
    assert DatumType.parse("float32") == F32
