"""Graph wiring, evaluation order, consistency checks, patches and compaction."""
import numpy as np
import pytest

from tractile import DatumType, OutletId, TypedFact, TypedModel
from tractile.errors import AnalysisError, TractileError
from tractile.graph import InletId
from tractile.ops import Add, Relu, Sigmoid
from tractile.patch import ModelPatch

F32 = DatumType.F32


def small_model():
    model = TypedModel()
    x = model.add_source("x", TypedFact(F32, (2, 3)))
    a = model.wire_node("a", Relu(), [x])[0]
    b = model.wire_node("b", Sigmoid(), [x])[0]
    c = model.wire_node("c", Add(), [a, b])[0]
    model.outputs = [c]
    return model


def test_wire_node_computes_facts_and_successors():
    model = small_model()
    assert str(model.outlet_fact(OutletId(3, 0))) == "2,3,f32"
    assert model.outlet_successors(OutletId(0, 0)) == [InletId(1, 0), InletId(2, 0)]
    model.check_consistency()


def test_wire_node_error_names_the_node():
    model = TypedModel()
    x = model.add_source("x", TypedFact(F32, (2, 3)))
    y = model.add_source("y", TypedFact(F32, (4, 3)))
    with pytest.raises(AnalysisError, match=r'node #2 "sum" \(Add\): cannot broadcast shapes \(2,3\) and \(4,3\)'):
        model.wire_node("sum", Add(), [x, y])


def test_eval_order_respects_dependencies():
    order = small_model().eval_order()
    assert order.index(0) < order.index(1) < order.index(3)
    assert order.index(2) < order.index(3)


def test_names_are_made_unique():
    model = TypedModel()
    x = model.add_source("x", TypedFact(F32, (1,)))
    model.wire_node("relu", Relu(), [x])
    model.wire_node("relu", Relu(), [x])
    assert [n.name for n in model.nodes] == ["x", "relu", "relu.1"]


def test_consistency_check_finds_stale_successors_and_cycles():
    model = small_model()
    model.nodes[1].outputs[0].successors.append(InletId(2, 5))
    with pytest.raises(TractileError, match="stale successor"):
        model.check_consistency()
    model = small_model()
    model.add_edge(OutletId(3, 0), InletId(1, 0))  # relu now reads the final add: a cycle
    with pytest.raises(TractileError, match="cycle"):
        model.check_consistency()


def test_patch_replaces_and_compacts():
    model = small_model()
    node = model.nodes[2]
    patch = ModelPatch.replace_single_op(model, node, node.inputs, Relu())
    patch.apply()
    model.check_consistency()
    compacted = model.compact()
    assert [n.op.name for n in compacted.nodes] == ["Source", "Relu", "Relu", "Add"]
    assert compacted.nodes[2].name == "b"
    out = compacted.run([np.full((2, 3), -1.0, np.float32)])[0]
    assert out.tolist() == [[0.0] * 3] * 2


def test_patch_shunting_an_output_moves_its_label():
    model = small_model()
    model.outlet_labels[OutletId(3, 0)] = "y"
    patch = ModelPatch.shunt_one_op(model, model.nodes[3])
    patch.apply()
    assert model.outputs == [OutletId(1, 0)] and model.output_names() == ["y"]


def test_compaction_refuses_to_drop_a_needed_node():
    model = small_model()
    patch = ModelPatch(model, "careless")
    patch.obliterate(1)
    patch.apply()
    with pytest.raises(TractileError, match="still needed"):
        model.compact()
