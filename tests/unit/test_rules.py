"""The declarative rules solver."""
import pytest

from tractile import DatumType, InferenceFact, ShapeFactoid, symbol
from tractile.infer.rules import RuleConflict, Solver


def solver(inputs, outputs):
    return Solver(inputs, outputs)


def test_equals_propagates_both_ways():
    s = solver([InferenceFact(DatumType.F32)], [InferenceFact()])
    s.equals(s.inputs[0].datum_type, s.outputs[0].datum_type)
    s.solve()
    assert s.facts[("out", 0)].dtype == DatumType.F32
    s = solver([InferenceFact()], [InferenceFact(DatumType.I8)])
    s.equals(s.inputs[0].datum_type, s.outputs[0].datum_type)
    s.solve()
    assert s.facts[("in", 0)].dtype == DatumType.I8


def test_equals_all_ranks_and_dims():
    s = solver([InferenceFact(None, ShapeFactoid((2, None), False)), InferenceFact()], [InferenceFact()])
    s.equals_all(s.inputs[0].rank, s.inputs[1].rank, s.outputs[0].rank)
    s.equals(s.outputs[0].shape[0], s.inputs[0].shape[0])
    s.equals(s.inputs[1].shape[1], 7)
    s.solve()
    assert s.facts[("in", 1)].shape.dims == (None, 7)
    assert s.facts[("out", 0)].shape.dims == (2, None)


def test_sum_equals_zero_solves_the_unknown_term():
    t = symbol("T")
    s = solver([InferenceFact(None, (t, 4)), InferenceFact(None, (3, 4))], [InferenceFact(None, (None, 4))])
    s.sum_equals_zero(s.outputs[0].shape[0], -1 * s.inputs[0].shape[0], -1 * s.inputs[1].shape[0])
    s.solve()
    assert s.facts[("out", 0)].shape.dims == (t + 3, 4)
    # and backwards: the output and one input known
    s = solver([InferenceFact(None, (None,)), InferenceFact(None, (3,))], [InferenceFact(None, (10,))])
    s.sum_equals_zero(s.outputs[0].shape[0], -1 * s.inputs[0].shape[0], -1 * s.inputs[1].shape[0])
    s.solve()
    assert s.facts[("in", 0)].shape.dims == (7,)


def test_scaled_terms_must_divide():
    s = solver([InferenceFact(None, (None,))], [InferenceFact(None, (7,))])
    s.equals(s.outputs[0].shape[0], 2 * s.inputs[0].shape[0])
    with pytest.raises(RuleConflict, match="multiple of 2"):
        s.solve()


def test_given_adds_rules_when_value_known():
    import numpy as np

    s = solver([InferenceFact(value=np.array([2, 5], dtype=np.int64))], [InferenceFact()])
    s.given(s.inputs[0].value, lambda s, v: s.equals(s.outputs[0].shape, tuple(int(x) for x in v)))
    s.solve()
    assert s.facts[("out", 0)].shape == ShapeFactoid((2, 5), False)


def test_given_waits_until_known():
    s = solver([InferenceFact()], [InferenceFact()])
    called = []
    s.given(s.inputs[0].rank, lambda s, r: called.append(r))
    s.solve()
    assert called == []


def test_conflict_uses_the_why_message():
    s = solver([InferenceFact(None, (1, 3)), InferenceFact(None, (8, 4))], [InferenceFact()])
    s.equals(s.inputs[0].shape[1], s.inputs[1].shape[1], why="input 0 has {} channels, the kernel expects {}")
    with pytest.raises(RuleConflict, match="input 0 has 3 channels, the kernel expects 4"):
        s.solve()


def test_negative_axis_resolves_once_rank_known():
    s = solver([InferenceFact(None, (2, 3, 9))], [InferenceFact()])
    s.equals(s.outputs[0].shape[0], s.inputs[0].shape[-1])
    s.solve()
    assert s.facts[("out", 0)].shape.dims[0] == 9
