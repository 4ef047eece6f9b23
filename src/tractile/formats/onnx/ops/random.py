"""ONNX random ops (translations registered on import)."""
from __future__ import annotations

from ....datum import DatumType
from ....ops.random import Bernoulli, Multinomial, RandomTensor
from ..registry import OnnxNode, onnx_op
from ..types import datum_type


def _dtype(node: OnnxNode, default: DatumType | None) -> DatumType | None:
    code = node.int("dtype", 0)
    return datum_type(code, repr(node)) if code else default


def _seed(node: OnnxNode) -> float | None:
    return node.float("seed", None) if node.has("seed") else None


@onnx_op("RandomNormal", since=1)
def random_normal(node: OnnxNode):
    return RandomTensor("normal", node.float("mean", 0.0), node.float("scale", 1.0), _dtype(node, DatumType.F32),
                        node.ints("shape"), _seed(node))


@onnx_op("RandomUniform", since=1)
def random_uniform(node: OnnxNode):
    return RandomTensor("uniform", node.float("low", 0.0), node.float("high", 1.0), _dtype(node, DatumType.F32),
                        node.ints("shape"), _seed(node))


@onnx_op("RandomNormalLike", since=1)
def random_normal_like(node: OnnxNode):
    return RandomTensor("normal", node.float("mean", 0.0), node.float("scale", 1.0), _dtype(node, None),
                        None, _seed(node))


@onnx_op("RandomUniformLike", since=1)
def random_uniform_like(node: OnnxNode):
    return RandomTensor("uniform", node.float("low", 0.0), node.float("high", 1.0), _dtype(node, None),
                        None, _seed(node))


@onnx_op("Bernoulli", since=15)
def bernoulli(node: OnnxNode):
    return Bernoulli(_dtype(node, None), _seed(node))


@onnx_op("Multinomial", since=7)
def multinomial(node: OnnxNode):
    return Multinomial(node.int("sample_size", 1), _dtype(node, DatumType.I32), _seed(node))
