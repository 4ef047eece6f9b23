"""Sequences and optionals: facts, ops, graph inputs and outputs holding lists and None."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tractile
from tractile import AnalysisError, DatumType, InferenceFact, RunError, TDim, TypedFact
from tractile.fact import OPTIONAL, SEQUENCE
from tractile.fact_unify import generalize, unify

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value


def seq_value(name, dtype=TensorProto.FLOAT, shape=None):
    return helper.make_value_info(name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(dtype, shape)))


def opt_value(name, inner):
    return helper.make_value_info(name, helper.make_optional_type_proto(inner))


def test_container_facts_unify_generalize_and_print():
    element = InferenceFact(DatumType.F32, [2, None])
    seq = InferenceFact.container(SEQUENCE, element)
    assert seq.is_complete() and not seq.is_tensor and str(seq) == "sequence<2,?,f32>"
    assert unify(InferenceFact(), seq) == seq
    with pytest.raises(AnalysisError, match="a sequence is not a tensor"):
        unify(seq, InferenceFact(DatumType.F32, [3]))
    optional = InferenceFact.container(OPTIONAL, seq)
    assert unify(optional, seq) == seq  # an optional that holds a value
    wider = generalize(InferenceFact(DatumType.F32, [2, 3]), InferenceFact(DatumType.F32, [2, 4]))
    assert wider == InferenceFact(DatumType.F32, [2, None])
    assert generalize(InferenceFact(DatumType.F32, [2]), InferenceFact(DatumType.F32, [2, 1])).shape.open
    typed = seq.to_typed()
    assert typed.kind == SEQUENCE and typed.concrete_shape() is None and InferenceFact.from_typed(typed) == seq
    assert TypedFact(DatumType.F32, [2]).is_tensor and TypedFact(DatumType.F32, [2]).concrete_shape() == (2,)


def sequence_model():
    """Split x in 3 along axis 1, insert y in front, erase the last, then read and concatenate."""
    nodes = [node("SplitToSequence", ["x", "split"], ["parts"], axis=1),
             node("SequenceInsert", ["parts", "y", "zero"], ["with_y"]),
             node("SequenceErase", ["with_y"], ["erased"]),
             node("SequenceLength", ["erased"], ["count"]),
             node("SequenceAt", ["erased", "minus_one"], ["last"]),
             node("ConcatFromSequence", ["erased"], ["joined"], axis=1),
             node("ConcatFromSequence", ["erased"], ["stacked"], axis=0, new_axis=1)]
    return model(nodes, [value("x", "f32", [2, 6]), value("y", "f32", [2, 2])],
                 [value("count", "i64", []), value("last", "f32", None), value("joined", "f32", None),
                  value("stacked", "f32", None)],
                 {"split": np.array(2, np.int64), "zero": np.array(0, np.int64), "minus_one": np.array(-1, np.int64)})


def test_sequence_ops_match_onnxruntime():
    proto = sequence_model()
    typed = tractile.load(proto)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    y = -np.ones((2, 2), np.float32)
    got = typed.plan().state(check_facts=True).run([x, y])
    for ours, theirs in zip(got, run_onnxruntime(proto, [x, y])):
        np.testing.assert_array_equal(ours, theirs)
    assert got[0] == 3 and got[2].shape == (2, 6) and got[3].shape == (3, 2, 2)
    assert typed.output_fact(1).shape == (2, 2)  # evenly split: the element dims stay known


def test_split_to_sequence_uneven_chunks_and_lengths():
    proto = model([node("SplitToSequence", ["x", "split"], ["parts"], axis=0),
                   node("SequenceAt", ["parts", "i"], ["y"])],
                  [value("x", "f32", [5]), value("split", "i64", []), value("i", "i64", [])], [value("y", "f32")])
    typed = tractile.load(proto)
    assert isinstance(typed.output_fact(0).shape[0], TDim)
    x = np.arange(5, dtype=np.float32)
    assert typed.run([x, np.array(2), np.array(2)])[0].tolist() == [4]
    with pytest.raises(RunError, match="SequenceAt position 3 is out of range"):
        typed.run([x, np.array(2), np.array(3)])


def test_sequence_graph_inputs_and_outputs_are_lists():
    proto = model([node("SequenceInsert", ["seq", "t"], ["out"]), node("SequenceLength", ["out"], ["n"])],
                  [seq_value("seq", TensorProto.FLOAT, [None]), value("t", "f32", [3])],
                  [seq_value("out"), value("n", "i64", [])], opset=17)
    typed = tractile.load(proto)
    a = np.ones(2, np.float32)
    out, n = typed.plan().state(check_facts=True).run([[a], np.zeros(3, np.float32)])
    assert isinstance(out, list) and [v.tolist() for v in out] == [[1, 1], [0, 0, 0]] and n == 2
    assert out[0] is not a  # outputs never alias inputs
    with pytest.raises(RunError, match="expected a sequence"):
        typed.run([a, np.zeros(3, np.float32)])
    with pytest.raises(RunError, match=r"input \"seq\"\[0\]: expected datum type f32"):
        typed.run([[np.ones(2, np.int64)], np.zeros(3, np.float32)])


def test_sequence_at_on_a_tensor_is_an_analysis_error():
    proto = model([node("SequenceAt", ["x", "i"], ["y"])], [value("x", "f32", [3]), value("i", "i64", [])],
                  [value("y", "f32")])
    with pytest.raises(AnalysisError, match="SequenceAt input 0 must be a sequence"):
        tractile.load(proto)


def test_sequence_construct_rejects_mixed_types():
    proto = model([node("SequenceConstruct", ["a", "b"], ["s"]), node("SequenceLength", ["s"], ["n"])],
                  [value("a", "f32", [1]), value("b", "i64", [1])], [value("n", "i64")])
    with pytest.raises(AnalysisError, match="different datum types"):
        tractile.load(proto)


def test_optional_ops_with_present_and_empty_values():
    tensor_type = helper.make_tensor_type_proto(TensorProto.FLOAT, [2])
    proto = model([node("OptionalHasElement", ["o"], ["has"]), node("Optional", ["x"], ["wrapped"]),
                   node("OptionalGetElement", ["wrapped"], ["back"]),
                   helper.make_node("Optional", [], ["empty"], type=tensor_type, name="empty"),
                   node("OptionalHasElement", ["empty"], ["has_empty"])],
                  [opt_value("o", tensor_type), value("x", "f32", [2])],
                  [value("has", "bool", []), value("back", "f32", [2]), value("has_empty", "bool", [])], opset=18)
    typed = tractile.load(proto)
    x = np.array([1, 2], np.float32)
    state = typed.plan().state(check_facts=True)
    has, back, has_empty = state.run([None, x])
    assert (has, has_empty) == (False, False) and back.tolist() == [1, 2]
    assert state.run([np.ones(2, np.float32), x])[0]
    assert typed.output_fact(2).konst is not None  # known statically: folded to a constant


def test_optional_get_element_of_an_empty_optional_is_a_run_error():
    tensor_type = helper.make_tensor_type_proto(TensorProto.FLOAT, [2])
    proto = model([node("OptionalGetElement", ["o"], ["y"])], [opt_value("o", tensor_type)], [value("y", "f32")],
                  opset=18)
    typed = tractile.load(proto)
    assert isinstance(typed.output_fact(0).shape[0], int) or isinstance(typed.output_fact(0).shape[0], TDim)
    with pytest.raises(RunError, match="OptionalGetElement on an empty optional"):
        typed.run([None])
    assert typed.run([np.ones(2, np.float32)])[0].tolist() == [1, 1]


def test_loop_builds_a_sequence_with_an_if_on_an_optional():
    body = helper.make_graph(
        [node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT), node("Unsqueeze", ["fi", "axes"], ["item"]),
         node("SequenceInsert", ["seq_in", "item"], ["seq_out"]), node("Identity", ["c"], ["c_out"])],
        "body", [value("i", "i64", []), value("c", "bool", []), seq_value("seq_in")],
        [value("c_out", "bool", []), seq_value("seq_out")])
    proto = model([node("SequenceEmpty", [], ["empty"]), node("Loop", ["n", "", "empty"], ["seq"], body=body),
                   node("ConcatFromSequence", ["seq"], ["y"], axis=0)],
                  [value("n", "i64", [])], [value("y", "f32", None)], {"axes": np.zeros(1, np.int64)})
    typed = tractile.load(proto)
    assert typed.run([np.array(4)])[0].tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(typed.run([np.array(3)])[0], run_onnxruntime(proto, [np.array(3)])[0])


def test_identity_passes_sequences_to_sequence_ops():
    proto = model([node("Identity", ["s"], ["t"]), node("SequenceLength", ["t"], ["n"])],
                  [seq_value("s", TensorProto.FLOAT, [2])], [value("n", "i64", [])])
    typed = tractile.load(proto)
    assert typed.run([[np.ones(2, np.float32)] * 3])[0] == 3
