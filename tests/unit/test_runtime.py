"""Plan and state: last use, symbol binding, input checks, threads, aliasing, limits."""
import threading

import numpy as np
import pytest

import tractile
from tractile import RunError
from tractile.graph import OutletId

from .onnx_builder import model, node, value


def chain_model():
    return model([node("Relu", ["x"], ["a"]), node("Neg", ["a"], ["b"]), node("Add", ["a", "b"], ["c"]),
                  node("Exp", ["c"], ["y"])], [value("x", "f32", ["N", 4])], [value("y", None)])


def test_values_are_freed_after_last_use():
    typed = tractile.load(chain_model())
    plan = typed.plan()
    names = [step.node.name for step in plan.steps]
    assert names == ["a", "b", "c", "y"]
    slot = {step.node.name: step.outputs[0] for step in plan.steps}
    frees = {step.node.name: set(step.frees) for step in plan.steps}
    assert slot["a"] in frees["c"] and slot["b"] in frees["c"]  # both read last by c
    assert slot["c"] in frees["y"]
    assert slot["y"] not in set().union(*frees.values())  # outputs are kept
    wires = {step.node.name: OutletId(step.node.id, 0) for step in plan.steps}
    last = plan.last_use()
    assert last[wires["a"]] == names.index("c") and last[wires["c"]] == names.index("y")


def test_symbols_are_bound_from_inputs():
    proto = model([node("Add", ["x", "y"], ["z"])],
                  [value("x", "f32", ["N", 2]), value("y", "f32", ["N", 2])], [value("z", None)])
    typed = tractile.load(proto)
    state = typed.state()
    state.run([np.ones((3, 2), np.float32), np.ones((3, 2), np.float32)])
    assert state.bindings == {"N": 3}
    with pytest.raises(RunError, match="N is already 3"):
        state.run([np.ones((3, 2), np.float32), np.ones((4, 2), np.float32)])


@pytest.mark.parametrize("bad, words", [
    (np.ones((2, 4), np.float64), ["expected", "N,4,f32", "float64", "astype"]),
    (np.ones((2, 4, 1), np.float32), ["expected rank 2", "(2, 4, 1)"]),
    (np.ones((2, 5), np.float32), ["axis 1 should be 4"]),
])
def test_bad_inputs_raise_run_error_naming_input_and_fact(bad, words):
    typed = tractile.load(chain_model())
    with pytest.raises(RunError) as error:
        typed.run([bad])
    text = str(error.value)
    assert 'input "x"' in text
    for word in words:
        assert word in text


def test_wrong_number_or_names_of_inputs():
    typed = tractile.load(chain_model())
    with pytest.raises(RunError, match="takes 1 input"):
        typed.run([np.ones((1, 4), np.float32)] * 2)
    with pytest.raises(RunError, match="unknown input"):
        typed.run({"nope": np.ones((1, 4), np.float32)})


def test_dict_in_dict_out_and_list_in_list_out():
    typed = tractile.load(chain_model())
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    expected = np.exp(np.maximum(x, 0) - np.maximum(x, 0))
    assert isinstance(typed.run([x]), list)
    by_name = typed.run({"x": x})
    assert list(by_name) == ["y"]
    np.testing.assert_allclose(by_name["y"], expected)


def test_many_runs_from_many_threads():
    typed = tractile.load(model([node("MatMul", ["x", "w"], ["y"])], [value("x", "f32", ["N", 3])],
                                [value("y", None)], {"w": np.arange(9, dtype=np.float32).reshape(3, 3)}))
    w = np.arange(9, dtype=np.float32).reshape(3, 3)
    errors = []

    def worker(seed):
        state = typed.state()
        rng = np.random.default_rng(seed)
        for _ in range(50):
            x = rng.standard_normal((int(rng.integers(1, 6)), 3)).astype(np.float32)
            got = state.run([x])[0]
            if not np.allclose(got, x @ w, rtol=1e-5):
                errors.append(seed)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_outputs_never_alias_constants_or_inputs():
    proto = model([node("Identity", ["c"], ["y"]), node("Identity", ["x"], ["z"])],
                  [value("x", "f32", [2])], [value("y", None), value("z", None)], {"c": np.ones(2, np.float32)})
    typed = tractile.load(proto)
    x = np.zeros(2, np.float32)
    y, z = typed.run([x])
    y += 5
    z += 7
    again, _ = typed.run([x])
    assert again.tolist() == [1.0, 1.0] and x.tolist() == [0.0, 0.0]


def test_numpy_errors_become_run_errors_naming_the_node():
    from tractile.ops.unary import UnaryOp

    class Fragile(UnaryOp):
        def compute(self, x):
            raise ValueError("operands could not be broadcast together")

    typed = tractile.TypedModel()
    x = typed.add_source("x", tractile.TypedFact(tractile.DatumType.F32, (3,)))
    typed.outputs = typed.wire_node("fragile", Fragile(), [x])
    with pytest.raises(RunError, match='"fragile" \\(Fragile\\): ValueError: operands could not'):
        typed.run([np.zeros(3, np.float32)])


def test_bad_gather_index_is_a_run_error():
    proto = model([node("Gather", ["x", "i"], ["y"], axis=0, name="lookup")],
                  [value("x", "f32", [3]), value("i", "i64", [1])], [value("y", None)])
    with pytest.raises(RunError, match='"lookup" \\(Gather\\).*7'):
        tractile.load(proto).run([np.zeros(3, np.float32), np.array([7])])


def test_tensor_size_limit():
    proto = model([node("ConstantOfShape", ["shape"], ["y"])], [value("shape", "i64", [2])], [value("y", None)])
    typed = tractile.load(proto)
    with pytest.raises(RunError, match="over the limit"):
        typed.run([np.array([1 << 20, 1 << 20], np.int64)])
    tractile.set_limits(max_tensor_bytes=1000)
    try:
        with pytest.raises(RunError, match="raise it with tractile.set_limits"):
            typed.run([np.array([100, 100], np.int64)])
    finally:
        tractile.set_limits(max_tensor_bytes=8 << 30)
    assert typed.run([np.array([2, 2], np.int64)])[0].shape == (2, 2)


def test_check_facts_mode_catches_lying_facts():
    from tractile.ops.unary import UnaryOp

    class Liar(UnaryOp):
        def compute(self, x):
            return np.concatenate([x, x])

    typed = tractile.TypedModel()
    x = typed.add_source("x", tractile.TypedFact(tractile.DatumType.F32, (3,)))
    typed.outputs = typed.wire_node("liar", Liar(), [x])
    with pytest.raises(RunError, match="fact says 3,f32"):
        typed.plan().state(check_facts=True).run([np.zeros(3, np.float32)])
