"""Cast (numbers, bools, strings, float 8 with saturation, e8m0, 4-bit), CastLike and BitCast."""
import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto

import tractile
from tractile import AnalysisError, RunError, symbol
from tractile.errors import ModelFormatError

from .onnx_builder import model, node, value
from .single_node import check_node, run_node, typed_node

RNG = np.random.default_rng(3)
VALUES = np.array([0.0, -0.0, 1.5, -2.75, 100.25, 1e-3, 7.0, -128.0], np.float32)

NUMERIC = {
    TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16,
    TensorProto.INT8: np.int8, TensorProto.INT32: np.int32, TensorProto.INT64: np.int64,
    TensorProto.UINT8: np.uint8, TensorProto.BOOL: np.bool_,
}


@pytest.mark.parametrize("source", [np.float32, np.float64, np.int32, np.int64, np.bool_, np.float16])
@pytest.mark.parametrize("to", sorted(NUMERIC))
def test_numeric_casts_match_onnxruntime(source, to):
    x = np.abs(VALUES).astype(source) if NUMERIC[to] == np.uint8 else VALUES.astype(source)
    got = check_node("Cast", {"x": x}, opset=13, to=to)[0]
    assert got.dtype == NUMERIC[to]


def test_integer_casts_wrap_and_bool_casts_test_for_zero():
    wrapped = run_node("Cast", {"x": np.array([200, -129, 65535], np.int32)}, to=TensorProto.INT8)[0]
    np.testing.assert_array_equal(wrapped, [-56, 127, -1])
    flags = run_node("Cast", {"x": np.array([0.0, -0.0, 0.1, np.nan], np.float32)}, to=TensorProto.BOOL)[0]
    np.testing.assert_array_equal(flags, [False, False, True, True])


def test_bfloat16_casts_round_to_nearest_even():
    # 1 + 2**-8 and 1 + 3 * 2**-8 are ties between two bfloat16 neighbours
    x = np.array([1.0, 1.00390625, 1.01171875, -3.0, 2.0 ** -130], np.float32)
    got = run_node("Cast", {"x": x}, opset=13, to=TensorProto.BFLOAT16)[0]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), [1.0, 1.0, 1.015625, -3.0, 2.0 ** -130])
    back = run_node("Cast", {"x": got}, opset=13, to=TensorProto.FLOAT)[0]
    np.testing.assert_array_equal(back, got.astype(np.float32))


F8_INPUT = np.array([0.0, 0.3, -1.75, 3.0, 460.0, -1000.0, 70000.0, np.inf, -np.inf, np.nan], np.float32)
NAN = np.nan
#: hand-rounded (to nearest even on each format's grid), per type: (saturated, not saturated)
F8_EXPECTED = {
    TensorProto.FLOAT8E4M3FN: ([0, 0.3125, -1.75, 3, 448, -448, 448, 448, -448, NAN],
                               [0, 0.3125, -1.75, 3, 448, NAN, NAN, NAN, NAN, NAN]),
    TensorProto.FLOAT8E4M3FNUZ: ([0, 0.3125, -1.75, 3, 240, -240, 240, 240, -240, NAN],
                                 [0, 0.3125, -1.75, 3, NAN, NAN, NAN, NAN, NAN, NAN]),
    TensorProto.FLOAT8E5M2: ([0, 0.3125, -1.75, 3, 448, -1024, 57344, 57344, -57344, NAN],
                             [0, 0.3125, -1.75, 3, 448, -1024, np.inf, np.inf, -np.inf, NAN]),
    TensorProto.FLOAT8E5M2FNUZ: ([0, 0.3125, -1.75, 3, 448, -1024, 57344, 57344, -57344, NAN],
                                 [0, 0.3125, -1.75, 3, 448, -1024, NAN, NAN, NAN, NAN]),
}


@pytest.mark.parametrize("to", sorted(F8_EXPECTED))
@pytest.mark.parametrize("source", [np.float32, np.float16, np.float64])
def test_float8_casts_with_and_without_saturation(to, source):
    saturated, wrapped = F8_EXPECTED[to]
    x = F8_INPUT
    if source == np.float16:  # 70000 is out of f16's range: check the other items
        x, saturated, wrapped = x[[0, 1, 2, 3, 4, 5, 7, 8, 9]], *(e[:6] + e[7:] for e in (saturated, wrapped))
    x = x.astype(source)
    for flag, expected in ((1, saturated), (0, wrapped)):
        got = run_node("Cast", {"x": x}, opset=19, to=to, saturate=flag)[0]
        np.testing.assert_array_equal(got.astype(np.float32), np.array(expected, np.float32), err_msg=f"{flag=}")


def test_float8_e4m3fn_bits_match_onnxruntime():
    from ..conftest import run_onnxruntime
    from .single_node import single_node

    for flag in (0, 1):
        proto, feeds = single_node("Cast", {"x": F8_INPUT}, opset=19, to=TensorProto.FLOAT8E4M3FN, saturate=flag)
        expected_bits = run_onnxruntime(proto, feeds)[0]
        got = run_node("Cast", {"x": F8_INPUT}, opset=19, to=TensorProto.FLOAT8E4M3FN, saturate=flag)[0]
        nan = np.isnan(got.astype(np.float32))
        np.testing.assert_array_equal(got.view(np.uint8)[~nan], expected_bits[~nan])
        assert (expected_bits[nan] & 0x7F == 0x7F).all()


def test_float8_back_to_wider_floats():
    x = np.array([0.5, -448, 3.5], ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(run_node("Cast", {"x": x}, opset=19, to=TensorProto.FLOAT16)[0], [0.5, -448, 3.5])


@pytest.mark.parametrize("mode, expected", [
    ("up", [1.0, 4.0, 4.0, 2.0 ** -127, 2.0 ** 127, 0.5]),
    ("down", [1.0, 2.0, 2.0, 2.0 ** -127, 2.0 ** 127, 0.25]),
    ("nearest", [1.0, 4.0, 2.0, 2.0 ** -127, 2.0 ** 127, 0.5])])
def test_e8m0_rounding_modes(mode, expected):
    x = np.array([1.0, 3.0, 2.5, 0.0, 1e38 * 3, 0.375], np.float32)
    got = run_node("Cast", {"x": x}, opset=24, to=TensorProto.FLOAT8E8M0, round_mode=mode)[0]
    assert got.dtype == ml_dtypes.float8_e8m0fnu
    np.testing.assert_array_equal(got.astype(np.float64), expected)


def test_e8m0_without_saturation_gives_nan_out_of_range():
    x = np.array([0.0, 2.0, np.inf], np.float32)
    got = run_node("Cast", {"x": x}, opset=24, to=TensorProto.FLOAT8E8M0, saturate=0, round_mode="nearest")[0]
    assert np.isnan(got.astype(np.float32)[[0, 2]]).all() and got.astype(np.float32)[1] == 2.0


@pytest.mark.parametrize("to, dtype", [(TensorProto.INT4, ml_dtypes.int4), (TensorProto.UINT4, ml_dtypes.uint4),
                                       (TensorProto.INT2, ml_dtypes.int2), (TensorProto.UINT2, ml_dtypes.uint2)])
def test_narrow_integer_casts_round_trip(to, dtype):
    x = np.array([0, 1, 1, 0, 1], np.float32)
    got = run_node("Cast", {"x": x}, opset=25, to=to)[0]
    assert got.dtype == dtype
    back = run_node("Cast", {"x": got}, opset=25, to=TensorProto.FLOAT16)[0]
    np.testing.assert_array_equal(back, x.astype(np.float16))
    wide = run_node("Cast", {"x": np.array([-8, 7, 3], np.int8)}, opset=21, to=TensorProto.INT4)[0]
    np.testing.assert_array_equal(wide.astype(np.int8), [-8, 7, 3])


def test_float4_cast_rounds_to_the_e2m1_grid():
    x = np.array([0.2, 0.8, 1.2, 2.6, 5.1, -3.4], np.float32)
    got = run_node("Cast", {"x": x}, opset=23, to=TensorProto.FLOAT4E2M1)[0]
    np.testing.assert_array_equal(got.astype(np.float32), [0.0, 1.0, 1.0, 3.0, 6.0, -3.0])


def test_numbers_to_strings():
    x = np.array([0.1, 1e-5, -2.5, np.nan, np.inf, -np.inf], np.float32)
    got = run_node("Cast", {"x": x}, opset=13, to=TensorProto.STRING)[0]
    assert got.tolist() == ["0.1", "1e-05", "-2.5", "NaN", "INF", "-INF"]
    ints = check_node("Cast", {"x": np.array([12, -7], np.int64)}, opset=13, to=TensorProto.STRING)[0]
    assert ints.tolist() == ["12", "-7"]


def test_strings_to_numbers_match_onnxruntime():
    text = np.array(["1.5", "-INF", "NaN", "+inf", "1E8", "-3e-2", "7"], dtype=object)
    got = check_node("Cast", {"x": text}, opset=13, to=TensorProto.FLOAT)[0]
    assert np.isnan(got[2]) and got[1] == -np.inf and got[4] == 1e8
    check_node("Cast", {"x": np.array(["12", "-3", "9007199254740993"], object)}, opset=13, to=TensorProto.INT64)


def test_unparsable_string_is_a_run_error():
    with pytest.raises(RunError, match="Cast to f32"):
        run_node("Cast", {"x": np.array(["1.5", "hello"], object)}, opset=13, to=TensorProto.FLOAT)


def test_cast_opset_1_takes_a_type_name():
    got = run_node("Cast", {"x": np.array([1.7, -2.2], np.float32)}, opset=1, to="INT32")[0]
    np.testing.assert_array_equal(got, np.array([1, -2], np.int32))
    with pytest.raises(ModelFormatError, match="unknown element type name 'NOPE'"):
        run_node("Cast", {"x": np.zeros(1, np.float32)}, opset=1, to="NOPE")


def test_castlike_takes_the_second_inputs_type():
    got = check_node("CastLike", {"x": VALUES, "like": np.zeros(1, np.int32)}, opset=15)[0]
    np.testing.assert_array_equal(got, VALUES.astype(np.int32))
    typed = tractile.load(model([node("CastLike", ["x", "like"], ["y"])], [value("x", "f32", [3])],
                                [value("y", None)], {"like": np.zeros(1, np.float16)}, opset=15))
    assert [n.op.name for n in typed.nodes] == ["Source", "Cast"]
    f8 = run_node("CastLike", {"x": F8_INPUT, "like": np.zeros(1, ml_dtypes.float8_e4m3fn)}, opset=19,
                  saturate=0)[0]
    assert f8.dtype == ml_dtypes.float8_e4m3fn
    expected = np.array(F8_EXPECTED[TensorProto.FLOAT8E4M3FN][1], np.float32)
    np.testing.assert_array_equal(f8.astype(np.float32), expected)


def test_cast_keeps_symbolic_shape_values():
    proto = model([node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["c"], to=TensorProto.INT32),
                   node("Cast", ["c"], ["back"], to=TensorProto.INT64), node("Reshape", ["x", "back"], ["y"])],
                  [value("x", "f32", ["N", 3])], [value("y", None)])
    typed = tractile.load(proto, optimize=False).into_typed()
    assert typed.output_fact(0).shape == (symbol("N"), 3)


@pytest.mark.parametrize("source, to, dtype", [
    (np.float32, TensorProto.INT32, np.int32), (np.int64, TensorProto.DOUBLE, np.float64),
    (np.uint16, TensorProto.INT16, np.int16), (np.bool_, TensorProto.UINT8, np.uint8),
    (np.float16, TensorProto.BFLOAT16, ml_dtypes.bfloat16)])
def test_bitcast_reinterprets_bits(source, to, dtype):
    x = np.array([[1, 0], [2, 1]], source)
    got = run_node("BitCast", {"x": x}, opset=26, to=to)[0]
    assert got.dtype == dtype and got.shape == x.shape
    assert got.tobytes() == x.tobytes()


def test_bitcast_known_patterns():
    ones = run_node("BitCast", {"x": np.array([1.0, -2.0], np.float32)}, opset=26, to=TensorProto.INT32)[0]
    np.testing.assert_array_equal(ones, [0x3F800000, -0x40000000])
    scalar = run_node("BitCast", {"x": np.array(-1, np.int8)}, opset=26, to=TensorProto.UINT8)[0]
    assert scalar.shape == () and scalar == 255


def test_bitcast_needs_one_bit_width():
    with pytest.raises(AnalysisError, match=r"BitCast needs types of one bit width, got f32 \(32 bits\) and i16"):
        typed_node("BitCast", {"x": np.zeros(2, np.float32)}, opset=26, to=TensorProto.INT16)


def test_exotic_types_to_strings():
    got = run_node("Cast", {"x": np.array([-3, 7], ml_dtypes.int4)}, opset=21, to=TensorProto.STRING)[0]
    assert got.tolist() == ["-3", "7"]
    half = run_node("Cast", {"x": np.array([0.5, np.nan], ml_dtypes.bfloat16)}, opset=13, to=TensorProto.STRING)[0]
    assert half.tolist() == ["0.5", "NaN"]
