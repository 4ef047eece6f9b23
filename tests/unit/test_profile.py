"""The per-node profiler in the runtime."""
import numpy as np
import pytest

import tractile
from tractile.errors import TractileError

from .onnx_builder import model, node, value


def conv_model():
    return model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
                  node("Exp", ["r"], ["y"])],
                 [value("x", "f32", ["N", 2, 8, 8])], [value("y", None)], {"w": np.ones((4, 2, 3, 3), np.float32)})


def test_profile_reports_every_step_and_consistent_totals():
    typed = tractile.load(conv_model())
    x = np.ones((2, 2, 8, 8), np.float32)
    calls = []
    report = typed.profile([x], warmup=2, iterations=5, progress=lambda done, total: calls.append((done, total)))
    assert [n.op for n in report.nodes] == ["Conv", "Exp"]
    assert calls[-1] == (7, 7) and len(calls) == 7
    assert report.real == pytest.approx(sum(n.real for n in report.nodes))
    assert all(n.real > 0 for n in report.nodes)
    assert report.bindings == {"N": 2}
    assert {op for op, _, _ in report.by_op()} == {"Conv", "Exp"}
    data = report.as_dict()
    assert sum(n["share"] for n in data["nodes"]) == pytest.approx(1.0)


def test_profile_flops_use_bound_symbols():
    typed = tractile.load(conv_model())
    report = typed.profile([np.ones((3, 2, 8, 8), np.float32)], warmup=0, iterations=2)
    conv = next(n for n in report.nodes if n.op == "Conv")
    assert conv.flops == 2 * (3 * 4 * 8 * 8) * (2 * 3 * 3)
    assert conv.gflops > 0


def test_profile_needs_iterations():
    typed = tractile.load(conv_model())
    with pytest.raises(TractileError, match="at least one iteration"):
        typed.profile([np.ones((1, 2, 8, 8), np.float32)], iterations=0)
