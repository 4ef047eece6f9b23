"""ONNX sequence and optional ops (translations registered on import).

SequenceMap has no translation: it is expanded into its function body (a Loop).
"""
from __future__ import annotations

from ....datum import DatumType
from ....ops.optional import OptionalConstruct, OptionalGetElement, OptionalHasElement
from ....ops.sequence import (
    ConcatFromSequence,
    SequenceAt,
    SequenceConstruct,
    SequenceEmpty,
    SequenceErase,
    SequenceInsert,
    SequenceLength,
    SplitToSequence,
)
from ..registry import OnnxNode, Translated, onnx_op
from ..types import datum_type, fact_from_type

onnx_op("SequenceConstruct", since=11)(lambda node: SequenceConstruct())
onnx_op("SequenceAt", since=11)(lambda node: SequenceAt())
onnx_op("SequenceInsert", since=11)(lambda node: SequenceInsert())
onnx_op("SequenceErase", since=11)(lambda node: SequenceErase())
onnx_op("SequenceLength", since=11)(lambda node: SequenceLength())
onnx_op("OptionalGetElement", since=15)(lambda node: OptionalGetElement())


@onnx_op("SequenceEmpty", since=11)
def sequence_empty(node: OnnxNode):
    dtype = node.int("dtype", 0)
    return SequenceEmpty(datum_type(dtype, repr(node)) if dtype else DatumType.F32)


@onnx_op("SplitToSequence", since=11)
def split_to_sequence(node: OnnxNode):
    return SplitToSequence(node.int("axis", 0), bool(node.int("keepdims", 1)))


@onnx_op("ConcatFromSequence", since=11)
def concat_from_sequence(node: OnnxNode):
    return ConcatFromSequence(node.int("axis"), bool(node.int("new_axis", 0)))


@onnx_op("Optional", since=15)
def optional(node: OnnxNode):
    if node.present(0):
        return Translated(OptionalConstruct(), [0])
    if not node.has("type"):
        raise node.error("an Optional without input needs the 'type' attribute")
    return Translated(OptionalConstruct(fact_from_type(node.attr("type"), repr(node), named_dims=False)), [])


@onnx_op("OptionalHasElement", since=15)
def optional_has_element(node: OnnxNode):
    return Translated(OptionalHasElement(), [0] if node.present(0) else [])
