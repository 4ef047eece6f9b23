"""TDim: canonical symbolic arithmetic, floor division, evaluation, parsing."""
import pytest

from tractile.dim import TDim, symbol, volume
from tractile.dim_parse import parse_dim, to_dim
from tractile.errors import TractileError

N, T = symbol("N"), symbol("T")


def test_arithmetic_cancels_to_plain_int():
    assert T - T + 3 == 3
    assert isinstance(T - T + 3, int)
    assert (2 * T + 4) - 2 * (T + 2) == 0


def test_canonical_form_is_order_independent():
    assert N * T + 1 == 1 + T * N
    assert hash(N * T + 1) == hash(1 + T * N)
    assert (N + T) * 2 == 2 * N + 2 * T
    assert str((T + N) * (T - N)) == str(T * T - N * N)


def test_symbolic_and_concrete_are_never_equal():
    assert T != 3
    assert 3 != T


def test_floor_division_simplifies_exact_parts():
    assert (2 * T + 4) // 2 == T + 2
    assert (2 * T + 5) // 2 == T + 2
    assert str((T + 1) // 2) == "(T+1)/2"
    # constant brought into range: floor((T+5)/2) == floor((T+1)/2) + 2
    assert (T + 5) // 2 == (T + 1) // 2 + 2
    # nested floor divisions merge
    assert ((T + 1) // 2) // 3 == (T + 1) // 6


@pytest.mark.parametrize("t", range(0, 23))
def test_floor_division_agrees_with_python(t):
    for expr, expected in [((T + 5) // 2, (t + 5) // 2), ((3 * T + 1) // 4, (3 * t + 1) // 4),
                           (((T - 3) // 2 + 1), (t - 3) // 2 + 1), (((T + 1) // 2) // 3, ((t + 1) // 2) // 3)]:
        assert expr.eval({"T": t}) == expected


def test_floor_division_by_non_positive_is_refused():
    with pytest.raises(TractileError):
        T // 0
    with pytest.raises(TractileError):
        T // -2


def test_exact_division():
    assert (4 * N * T).div_exact(2 * N) == 2 * T
    assert (6 * T + 3).div_exact(3) == 2 * T + 1
    assert (6 * T + 3).div_exact(2) is None
    assert (N * T).div_exact(symbol("S")) is None
    assert (2 * N + 2 * T).div_exact(N + T) == 2


def test_eval_and_substitute():
    expr = N * T + 2 * T - 1
    assert expr.eval({"N": 2, "T": 5}) == 19
    partial = expr.substitute({"N": 3})
    assert partial == 5 * T - 1
    with pytest.raises(TractileError, match="T"):
        expr.eval({"N": 1})


def test_symbols_and_volume():
    assert (N * T + (T + 1) // 2).symbols() == {"N", "T"}
    assert volume([N, 3, T]) == 3 * N * T
    assert volume([2, 3]) == 6


def test_parse_round_trips():
    for text in ["T", "2*T+1", "N*T", "(T+1)/2", "T-3", "-T+1"]:
        parsed = parse_dim(text)
        assert parse_dim(str(parsed)) == parsed
    assert parse_dim("(T-3)//2 + 1") == (T - 3) // 2 + 1
    assert parse_dim("12") == 12
    assert to_dim("N") == N


@pytest.mark.parametrize("bad", ["T+", "2**T", "T/N", "(T", "3x"])
def test_parse_errors_are_clear(bad):
    with pytest.raises(TractileError, match="dimension"):
        parse_dim(bad)


def test_symbolic_value_cannot_be_used_as_int():
    with pytest.raises(TractileError, match="symbolic"):
        int(T + 1)
    assert isinstance(TDim.symbol("x"), TDim)


def test_lower_bound_takes_symbols_as_extents():
    assert (T - 1).lower_bound() == 0
    assert (2 * N * T + 3).lower_bound() == 5
    assert (1 - T).lower_bound() is None
    assert ((T + 1) // 2 - 1).lower_bound() == -1
