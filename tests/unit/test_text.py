"""String ops and token features: StringNormalizer, StringConcat, StringSplit, RegexFullMatch,
LabelEncoder, TfIdfVectorizer."""
import re

import numpy as np
import pytest
from onnx import TensorProto, helper

import tractile
from tractile import AnalysisError, ModelFormatError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value


def strings(*items, shape=None):
    array = np.array(items, dtype=object)
    return array.reshape(shape) if shape is not None else array


def string_value(name, shape=None):
    return helper.make_tensor_value_info(name, TensorProto.STRING, shape)


@pytest.mark.parametrize("sensitive, action, expected", [
    (0, "LOWER", ["tuesday", "wednesday"]),
    (1, "UPPER", ["MONDAY", "TUESDAY", "WEDNESDAY"]),
    (0, "NONE", ["Tuesday", "wednesday"]),
])
def test_string_normalizer_drops_stopwords_then_changes_case(sensitive, action, expected):
    proto = model([node("StringNormalizer", ["x"], ["y"], case_change_action=action, is_case_sensitive=sensitive,
                        stopwords=["monday"])], [string_value("x", [1, 4])], [string_value("y")], opset=10)
    x = strings("Monday", "monday", "Tuesday", "wednesday", shape=(1, 4))
    got = tractile.load(proto).plan().state(check_facts=True).run([x])[0]
    assert got.shape == (1, len(expected)) and got.ravel().tolist() == expected


def test_string_normalizer_that_drops_everything_gives_one_empty_string():
    proto = model([node("StringNormalizer", ["x"], ["y"], stopwords=["a", "b"])], [string_value("x", [2])],
                  [string_value("y")], opset=10)
    assert tractile.load(proto).run([strings("A", "b")])[0].tolist() == [""]


def test_string_concat_broadcasts_like_onnxruntime():
    proto = model([node("StringConcat", ["a", "b"], ["c"])], [string_value("a", [2, 1]), string_value("b", [3])],
                  [string_value("c")], opset=20)
    a, b = strings("x", "ÿé", shape=(2, 1)), strings("1", "", "33")
    got = tractile.load(proto).run([a, b])[0]
    assert got.dtype == object and got.tolist() == [["x1", "x", "x33"], ["ÿé1", "ÿé", "ÿé33"]]
    np.testing.assert_array_equal(got, run_onnxruntime(proto, [a, b])[0])


def test_string_concat_rejects_numbers():
    proto = model([node("StringConcat", ["a", "b"], ["c"])], [string_value("a", [2]), value("b", "f32", [2])],
                  [string_value("c")], opset=20)
    with pytest.raises(AnalysisError, match="StringConcat input 1 must be a string tensor"):
        tractile.load(proto)


@pytest.mark.parametrize("attrs", [{}, {"delimiter": "-"}, {"delimiter": "-", "maxsplit": 1}, {"maxsplit": 0}])
def test_string_split_pads_pieces_and_counts_them(attrs):
    proto = model([node("StringSplit", ["x"], ["pieces", "counts"], **attrs)], [string_value("x", [2, 2])],
                  [string_value("pieces"), value("counts", "i64")], opset=20)
    x = strings(" a  b c", "a-b--c", "", "-x-", shape=(2, 2))
    pieces, counts = tractile.load(proto).plan().state(check_facts=True).run([x])
    separator, limit = attrs.get("delimiter"), attrs.get("maxsplit", -1)
    expected = [text.split(separator, limit) for text in x.ravel()]
    width = max(len(e) for e in expected)
    assert pieces.shape == (2, 2, width) and counts.ravel().tolist() == [len(e) for e in expected]
    for row, pieces_row in zip(expected, pieces.reshape(4, width).tolist()):
        assert pieces_row == row + [""] * (width - len(row))


def test_regex_full_match_and_bad_patterns():
    pattern = r"[a-z]+@(gmail|yahoo)\.com"
    proto = model([node("RegexFullMatch", ["x"], ["y"], pattern=pattern)], [string_value("x", [3])],
                  [value("y", "bool")], opset=20)
    x = strings("me@gmail.com", "me@gmail.com.au", "ME@yahoo.com")
    got = tractile.load(proto).run([x])[0]
    assert got.tolist() == [re.fullmatch(pattern, s) is not None for s in x] == [True, False, False]
    broken = model([node("RegexFullMatch", ["x"], ["y"], pattern="(unclosed")], [string_value("x", [3])],
                   [value("y", "bool")], opset=20)
    with pytest.raises(ModelFormatError, match="not a valid regular expression"):
        tractile.load(broken)


def ml_model(nodes, inputs, outputs, opset=4):
    proto = model(nodes, inputs, outputs)
    proto.opset_import.append(helper.make_opsetid("ai.onnx.ml", opset))
    return proto


def test_label_encoder_maps_strings_numbers_and_nan():
    to_int = ml_model([helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=["a", "b"],
                                        values_int64s=[7, 8], default_int64=-5)],
                      [string_value("x", [4])], [value("y", "i64")], opset=2)
    x = strings("b", "a", "zz", "a")
    assert tractile.load(to_int).run([x])[0].tolist() == [8, 7, -5, 7]
    np.testing.assert_array_equal(tractile.load(to_int).run([x])[0], run_onnxruntime(to_int, [x])[0])
    to_text = ml_model([helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml",
                                         keys_floats=[0.5, float("nan"), -1.0], values_strings=["half", "nan", "neg"])],
                       [value("x", "f32", [4])], [string_value("y")])
    got = tractile.load(to_text).run([np.array([-1, np.nan, 3, 0.5], np.float32)])[0]
    assert got.tolist() == ["neg", "nan", "_Unused", "half"]


def test_label_encoder_keys_must_match_the_input_type():
    proto = ml_model([helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=["a"],
                                       values_int64s=[1])], [value("x", "i64", [2])], [value("y", "i64")])
    with pytest.raises(AnalysisError, match="LabelEncoder keys are strings but the input is"):
        tractile.load(proto)


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("skip", [0, 2])
def test_tfidf_vectorizer_matches_onnxruntime(mode, skip):
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]  # four 1-grams, then three 2-grams
    proto = model([node("TfIdfVectorizer", ["x"], ["y"], mode=mode, min_gram_length=1, max_gram_length=2,
                        max_skip_count=skip, ngram_counts=[0, 4], ngram_indexes=[0, 1, 2, 3, 4, 5, 6],
                        pool_int64s=pool, weights=[1, 2, 3, 4, 5, 6, 7.5])],
                  [value("x", "i32", [2, 6])], [value("y", "f32")], opset=9)
    x = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32)
    got = tractile.load(proto).run([x])[0]
    np.testing.assert_allclose(got, run_onnxruntime(proto, [x])[0])
