"""Values whose rank is only known at run time: If branches of different ranks, Reshape to
a shape of run-time length; ops propagate them or say which node needs a rank."""
import numpy as np
import pytest
from onnx import helper

import tractile
from tractile import AnalysisError, DatumType, RunError, TDim, TypedFact
from tractile.errors import UnknownRankError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value


def branch(nodes, out, name):
    return helper.make_graph(nodes, name, [], [out])


def squeeze_if(after, outputs, inputs=None, inits=None):
    """``y = x[:, 0] if cond else x`` (ranks 1 and 2), then the nodes ``after``."""
    then_branch = branch([node("Squeeze", ["x", "one"], ["t"])], value("t", "f32", None), "then")
    else_branch = branch([node("Identity", ["x"], ["e"])], value("e", "f32", None), "else")
    nodes = [node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch), *after]
    inputs = inputs or [value("cond", "bool", []), value("x", "f32", ["N", 1])]
    return model(nodes, inputs, outputs, {"one": np.array([1], np.int64), **(inits or {})})


def test_if_branches_of_different_ranks_give_a_run_time_rank():
    proto = squeeze_if([node("Relu", ["y"], ["r"]), node("Shape", ["r"], ["s"])],
                       [value("r", "f32"), value("s", "i64")])
    typed = tractile.load(proto)
    relu, shape = typed.output_facts
    assert not relu.has_rank and relu.max_rank == 2 and relu.dtype == DatumType.F32
    assert shape.rank == 1 and isinstance(shape.shape[0], TDim)
    with pytest.raises(UnknownRankError):
        relu.shape  # noqa: B018 - reading it is the point
    x = np.array([[-1.0], [2.0], [3.0]], np.float32)
    state = typed.plan().state(check_facts=True)
    for flag in (True, False):
        got = state.run([np.array(flag), x])
        expected = run_onnxruntime(proto, [np.array(flag), x])
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_array_equal(g, e)


def test_broadcasting_against_a_higher_known_rank_gives_a_known_rank():
    proto = squeeze_if([node("Add", ["y", "z"], ["s"])], [value("s", "f32")],
                       [value("cond", "bool", []), value("x", "f32", [3, 1]), value("z", "f32", [2, 1, 3])])
    typed = tractile.load(proto)
    (fact,) = typed.output_facts
    assert fact.has_rank and fact.rank == 3 and (fact.shape[0], fact.shape[2]) == (2, 3)
    assert isinstance(fact.shape[1], TDim)  # 1 against a dim that may be 3 (x) or 1 (x squeezed)
    x, z = np.arange(3, dtype=np.float32).reshape(3, 1), np.ones((2, 1, 3), np.float32)
    for flag in (True, False):
        got = typed.plan().state(check_facts=True).run([np.array(flag), x, z])[0]
        np.testing.assert_array_equal(got, run_onnxruntime(proto, [np.array(flag), x, z])[0])


def test_an_op_that_needs_the_rank_names_its_node():
    proto = squeeze_if([node("Transpose", ["y"], ["t"], name="the_transpose")], [value("t", "f32")])
    with pytest.raises(AnalysisError, match=r'"the_transpose" \(Transpose\).*depends on data'):
        tractile.load(proto, optimize=False).into_typed()
    # tractile.load keeps it for the first run, which gives the rank (tests/unit/test_dynamic_models.py)
    assert "the_transpose" in tractile.load(proto).reason


def test_unsqueeze_and_squeeze_move_the_bound():
    proto = squeeze_if([node("Unsqueeze", ["y", "zero"], ["u"]), node("Squeeze", ["u", "zero"], ["s"])],
                       [value("u", "f32"), value("s", "f32")], inits={"zero": np.array([0], np.int64)})
    unsqueezed, squeezed = tractile.load(proto).output_facts
    assert (unsqueezed.has_rank, unsqueezed.max_rank) == (False, 3)
    assert (squeezed.has_rank, squeezed.max_rank) == (False, 2)


def test_reshape_to_a_shape_of_run_time_length():
    proto = model([node("Reshape", ["x", "shape"], ["y"]), node("Neg", ["y"], ["z"])],
                  [value("x", "f32", [24]), value("shape", "i64", ["K"])], [value("z", "f32")])
    typed = tractile.load(proto)
    assert not typed.output_fact(0).has_rank
    x = np.arange(24, dtype=np.float32)
    state = typed.plan().state(check_facts=True)
    for target in ([24], [2, 12], [2, 3, 4], [1, 2, 3, 2, 2]):
        shape = np.array(target, np.int64)
        got = state.run([x, shape])[0]
        np.testing.assert_array_equal(got, run_onnxruntime(proto, [x, shape])[0])


def test_a_body_reading_a_run_time_rank_checks_the_bound():
    fact = TypedFact.unknown_rank(DatumType.F32, 2)
    assert str(fact) == "rank?<=2,f32" and fact.symbols() == set() and not fact.is_concrete()
    assert fact != TypedFact.unknown_rank(DatumType.F32, 3)
    from tractile.model import TypedModel
    from tractile.ops.unary import Neg

    typed = TypedModel()
    source = typed.add_source("x", fact)
    typed.outputs = typed.wire_node("neg", Neg(), [source])
    assert not typed.output_fact(0).has_rank
    assert typed.run([np.ones((2, 2), np.float32)])[0].tolist() == [[-1, -1], [-1, -1]]
    with pytest.raises(RunError, match="rank"):
        typed.run([np.ones((1, 1, 1), np.float32)])


# static ranks keep exactly the facts they had ------------------------------------------------

def test_if_branches_of_one_rank_keep_known_dims_and_a_fresh_symbol():
    then_branch = branch([node("Concat", ["x", "x"], ["t"], axis=1)], value("t", "f32", None), "then")
    else_branch = branch([node("Identity", ["x"], ["e"])], value("e", "f32", None), "else")
    proto = model([node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)],
                  [value("cond", "bool", []), value("x", "f32", ["N", 3])], [value("y", "f32")])
    (fact,) = tractile.load(proto).output_facts
    assert fact.has_rank and fact.rank == 2 and str(fact.shape[0]) == "N"
    assert isinstance(fact.shape[1], TDim) and fact.shape[1].symbols().isdisjoint({"N"})


def test_static_models_have_every_rank_known(demo_model):
    typed = tractile.load(demo_model, inputs={0: "N,1,28,28,f32"})
    facts = [o.fact for n in typed.nodes for o in n.outputs]
    assert facts and all(f.has_rank for f in facts)
    assert str(typed.output_fact(0)) == "N,10,f32"
    reshaped = tractile.load(model([node("Reshape", ["x", "shape"], ["y"])],
                                   [value("x", "f32", [24]), value("shape", "i64", [3])], [value("y", "f32")]))
    (fact,) = reshaped.output_facts
    assert fact.rank == 3 and all(isinstance(d, TDim) for d in fact.shape)
