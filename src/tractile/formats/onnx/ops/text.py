"""ONNX string and token ops (translations registered on import)."""
from __future__ import annotations

import numpy as np

from ....errors import AnalysisError
from ....ops.text import RegexFullMatch, StringConcat, StringNormalizer, StringSplit
from ....ops.text_features import LabelEncoder, TfIdfVectorizer
from ..registry import OnnxNode, onnx_op

onnx_op("StringConcat", since=20)(lambda node: StringConcat())


@onnx_op("StringNormalizer", since=10)
def string_normalizer(node: OnnxNode):
    return StringNormalizer(node.string("case_change_action", "NONE").upper(),
                            bool(node.int("is_case_sensitive", 0)), node.strings("stopwords", ()))


@onnx_op("StringSplit", since=20)
def string_split(node: OnnxNode):
    maxsplit = node.int("maxsplit", None) if node.has("maxsplit") else None
    return StringSplit(node.string("delimiter", None) or None, maxsplit)


@onnx_op("RegexFullMatch", since=20)
def regex_full_match(node: OnnxNode):
    try:
        return RegexFullMatch(node.string("pattern"))
    except AnalysisError as error:
        raise node.error(error.message) from None


@onnx_op("TfIdfVectorizer", since=9)
def tfidf_vectorizer(node: OnnxNode):
    if node.has("pool_strings") == node.has("pool_int64s"):
        raise node.error("exactly one of pool_strings and pool_int64s must be given")
    pool = np.asarray(node.strings("pool_strings"), dtype=object) if node.has("pool_strings") else \
        np.asarray(node.ints("pool_int64s"), dtype=np.int64)
    weights = node.floats("weights", None)
    return TfIdfVectorizer(pool, node.ints("ngram_counts"), node.ints("ngram_indexes"),
                           node.int("min_gram_length"), node.int("max_gram_length"), node.int("max_skip_count"),
                           node.string("mode"), weights)


_KINDS = (("strings", object), ("int64s", np.int64), ("floats", np.float32))
_DEFAULTS = {"strings": ("default_string", "_Unused"), "int64s": ("default_int64", -1),
             "floats": ("default_float", -0.0)}


@onnx_op("LabelEncoder", since=2, domain="ai.onnx.ml")
def label_encoder(node: OnnxNode):
    keys = _table(node, "keys")
    values = _table(node, "values")
    if node.has("default_tensor"):
        default = np.asarray(node.tensor("default_tensor")).reshape(-1)[:1]
    else:
        kind = next(k for k, dtype in _KINDS if values.dtype == np.dtype(dtype))
        name, fallback = _DEFAULTS[kind]
        value = node.attr(name, fallback)
        value = value.decode("utf-8") if isinstance(value, bytes) else value
        default = np.asarray([value], dtype=values.dtype)
    return LabelEncoder(keys, values, default.astype(values.dtype))


def _table(node: OnnxNode, prefix: str) -> np.ndarray:
    if node.has(f"{prefix}_tensor"):
        return np.asarray(node.tensor(f"{prefix}_tensor")).reshape(-1)
    given = [(kind, dtype) for kind, dtype in _KINDS if node.has(f"{prefix}_{kind}")]
    if len(given) != 1:
        raise node.error(f"LabelEncoder needs exactly one {prefix}_* attribute")
    kind, dtype = given[0]
    items = node.strings(f"{prefix}_{kind}") if kind == "strings" else node.attr(f"{prefix}_{kind}")
    return np.asarray(list(items), dtype=dtype)
