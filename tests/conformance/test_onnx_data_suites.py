"""The model suites the onnx package ships as data (early PyTorch exports, opsets 1 to 9, with
the legacy broadcasting attributes; the simple models; the light vision models): every case listed
in onnx_data_expected_pass.txt passes, and no case of the suites crashes (a failure is a
TractileError naming the reason: only the training-only Gradient cases fail)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402

import tractile  # noqa: E402
from tractile.formats.onnx.data_suites import (  # noqa: E402
    DATA_SUITES,
    case_name,
    light_inputs,
    run_data_case,
    suite_cases,
)

EXPECTED = Path(__file__).with_name("onnx_data_expected_pass.txt")
NAMES = [line.strip() for line in EXPECTED.read_text().splitlines() if line.strip()]
CASES = {f"{suite}/{case_name(case)}": case for suite in DATA_SUITES for case in suite_cases(suite)}


@pytest.mark.parametrize("name", NAMES)
def test_case_passes(name: str):
    if name not in CASES:
        pytest.fail(f"{name} is in the expected-pass list but not in onnx {onnx.__version__}'s data suites")
    result = run_data_case(CASES[name])
    assert result.passed, result.reason


def test_every_other_case_fails_with_a_reason_not_a_crash():
    for name in sorted(set(CASES) - set(NAMES)):
        result = run_data_case(CASES[name])
        assert result.passed or not result.reason.startswith("crash"), f"{name}: {result.reason}"
        assert not result.passed, f"{name} passes now: add it to {EXPECTED.name}"


def test_only_training_ops_fail():
    failing = sorted(set(CASES) - set(NAMES))
    assert failing == ["simple/test_gradient_of_add", "simple/test_gradient_of_add_and_mul"]
    for name in failing:
        reason = run_data_case(CASES[name]).reason
        assert reason.startswith("UnsupportedOpError") and "Gradient" in reason, reason


def test_light_inputs_follow_the_onnx_runner():
    case = CASES["light/light_squeezenet"]
    (image,) = light_inputs(case)
    assert image.shape == (1, 3, 224, 224) and image.dtype == np.float32
    assert image.flat[0] == 0 and abs(image.flat[-1] - (1 - 1 / image.size)) < 1e-7


def legacy_model(op: str, a_shape, b_shape, opset: int, **attributes):
    graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"], **attributes)], "legacy",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("op,numpy_op", [("Add", np.add), ("Mul", np.multiply), ("Sub", np.subtract)])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_legacy_broadcast_lines_b_up_from_the_axis(op, numpy_op, axis):
    rng = np.random.default_rng(axis)
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    b = rng.standard_normal(a.shape[axis:axis + 2]).astype(np.float32)
    model = tractile.load(legacy_model(op, a.shape, b.shape, 6, broadcast=1, axis=axis))
    aligned = b.reshape(b.shape + (1,) * (a.ndim - axis - b.ndim))
    np.testing.assert_allclose(model.run([a, b])[0], numpy_op(a, aligned), rtol=1e-6)


def test_legacy_broadcast_without_axis_aligns_from_the_right_and_refuses_a_misfit():
    a = np.ones((2, 3, 4), np.float32)
    b = np.arange(4, dtype=np.float32)
    model = tractile.load(legacy_model("Add", a.shape, b.shape, 6, broadcast=1))
    np.testing.assert_array_equal(model.run([a, b])[0], a + b)
    with pytest.raises(tractile.AnalysisError, match="does not match"):
        tractile.load(legacy_model("Add", (2, 3, 4), (4,), 6, broadcast=1, axis=1))


def test_legacy_prelu_slope_is_per_channel():
    x = np.linspace(-2, 2, 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    slope = np.array([0.1, 0.2, 0.3], np.float32)
    model = tractile.load(legacy_model("PRelu", x.shape, slope.shape, 6))
    expected = np.where(x < 0, x * slope[:, None], x)
    np.testing.assert_allclose(model.run([x, slope])[0], expected, rtol=1e-6)


def test_conformance_command_runs_a_data_suite_against_its_expected_list(tmp_path, capsys):
    from tractile.cli.main import main

    written = tmp_path / "simple.txt"
    status = main(["conformance", "--suite", "simple", "--jobs", "1", "--failures",
                   "--write-expected", str(written), "--check-expected", str(EXPECTED)])
    out = capsys.readouterr().out
    assert status == 0
    assert "21 passed, 2 failed of 23" in out and "simple/test_gradient_of_add:" in out
    assert written.read_text().splitlines() == [name for name in NAMES if name.startswith("simple/")]
