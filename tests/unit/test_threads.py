import numpy as np
import pytest

import tractile
from tractile.runtime.threads import current_threads


def test_set_threads_limits_blas_and_restores_the_defaults():
    pytest.importorskip("threadpoolctl")
    np.ones((4, 4)) @ np.ones((4, 4))  # BLAS loaded
    tractile.set_threads(None)  # the defaults, whatever an earlier test of this process set
    before = current_threads()
    assert "blas" in before
    tractile.set_threads(1)
    try:
        assert current_threads()["blas"] == 1
    finally:
        tractile.set_threads(None)
    assert current_threads() == before


@pytest.mark.parametrize("bad", [0, -2, 1.5, "4", True])
def test_set_threads_refuses_what_is_not_a_count(bad):
    with pytest.raises(tractile.TractileError, match="number of threads"):
        tractile.set_threads(bad)


def test_load_threads_and_the_cli_option_limit_blas(tmp_path):
    pytest.importorskip("threadpoolctl")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from tractile.cli.main import main

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = tmp_path / "relu.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    np.ones((4, 4)) @ np.ones((4, 4))
    try:
        model = tractile.load(str(path), threads=1)
        assert current_threads()["blas"] == 1
        np.testing.assert_array_equal(model.run([np.array([-1.0, 2.0], np.float32)])[0], [0.0, 2.0])
        tractile.set_threads(None)
        assert main(["run", str(path), "--threads", "1"]) == 0
        assert current_threads()["blas"] == 1
    finally:
        tractile.set_threads(None)
