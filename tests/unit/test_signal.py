"""Signal ops: DFT, STFT, window functions, MelWeightMatrix."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tractile
from tractile.dim import TDim
from tractile.errors import AnalysisError, RunError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run_tractile(proto, inputs):
    """Run with the inputs' shapes as facts, checking every value against its fact."""
    typed = tractile.load(proto, inputs=list(inputs))
    return typed.plan().state(check_facts=True).run(list(inputs))


def dft_matrix(n_out: int, n_in: int, inverse: bool = False) -> np.ndarray:
    """Explicit DFT matrix: the oracle, independent of any FFT."""
    sign = 1 if inverse else -1
    k, n = np.meshgrid(np.arange(n_out), np.arange(n_in), indexing="ij")
    matrix = np.exp(sign * 2j * np.pi * k * n / n_in)
    return matrix / n_in if inverse else matrix


def dft_model(opset, inverse=0, onesided=0, axis=None, with_length=False, axis_input=False):
    names = ["x", "n" if with_length else "", "axis" if axis_input else ""]
    while names[-1] == "":
        names.pop()
    attrs = {"inverse": inverse, "onesided": onesided}
    if axis is not None:
        attrs["axis"] = axis
    facts = [value("x", "f32", None)] + ([value("n", "i64", [])] if with_length else []) + (
        [value("axis", "i64", [])] if axis_input else [])
    return model([node("DFT", names, ["y"], **attrs)], facts, [value("y")], opset=opset)


def as_complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(np.complex128)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("complex_input", [False, True])
def test_dft_forward_matches_the_dft_matrix(opset, complex_input):
    x = rand(2, 6, 5, 2 if complex_input else 1)
    if opset == 17:
        proto, inputs = dft_model(17, axis=1), [x]
    else:
        proto, inputs = dft_model(20, axis_input=True), [x, np.array(1, np.int64)]
    (got,) = run_tractile(proto, inputs)
    expected = np.einsum("kn,bnc->bkc", dft_matrix(6, 6), as_complex(x))
    assert got.shape == (2, 6, 5, 2)
    np.testing.assert_allclose(as_complex(got), expected, rtol=1e-4, atol=1e-4)


def test_dft_onesided_inverse_and_length_match_onnxruntime():
    x = rand(3, 8, 1)
    for proto, inputs in [
        (dft_model(17, onesided=1, axis=1), [x]),
        (dft_model(20, onesided=1, with_length=True, axis_input=True), [x, np.array(11, np.int64),
                                                                        np.array(-2, np.int64)]),
        (dft_model(20, inverse=1, with_length=True), [rand(3, 8, 2), np.array(5, np.int64)]),
    ]:
        (got,) = run_tractile(proto, inputs)
        (want,) = run_onnxruntime(proto, inputs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_dft_inverse_onesided_returns_the_real_signal():
    signal = rand(2, 10)
    half = np.einsum("kn,bn->bk", dft_matrix(10, 10)[:6], signal)
    x = np.stack([half.real, half.imag], -1).astype(np.float32)
    (got,) = run_tractile(dft_model(20, inverse=1, onesided=1), [x])
    assert got.shape == (2, 10, 1)
    np.testing.assert_allclose(got[..., 0], signal, rtol=1e-4, atol=1e-5)


def test_dft_runtime_axis_keeps_dims_that_cannot_change():
    proto = model([node("DFT", ["x", "", "axis"], ["y"])], [value("x", "f32", [4, 7, 1]), value("axis", "i64", [])],
                  [value("y")], opset=20)
    fact = tractile.load(proto).output_fact(0)
    assert fact.shape == (4, 7, 2)
    rfft = model([node("DFT", ["x", "", "axis"], ["y"], onesided=1)],
                 [value("x", "f32", [4, 7, 1]), value("axis", "i64", [])], [value("y")], opset=20)
    fact = tractile.load(rfft).output_fact(0)
    assert all(isinstance(d, TDim) for d in fact.shape[:2]) and fact.shape[2] == 2


def test_dft_errors_name_the_problem():
    with pytest.raises(AnalysisError, match="DFT axis 2 is out of range"):
        tractile.load(dft_model(17, axis=2), inputs=[rand(2, 3, 1)])
    with pytest.raises(AnalysisError, match=r"\(\.\.\., 1 or 2\)"):
        tractile.load(dft_model(17), inputs=[rand(2, 3, 3)])
    with pytest.raises(RunError, match="dft_length 0 must be positive"):
        run_tractile(dft_model(20, with_length=True), [rand(2, 3, 1), np.array(0, np.int64)])


def stft_model(onesided=1, with_window=True, with_length=False):
    names = ["x", "step", "w" if with_window else "", "n" if with_length else ""]
    while names[-1] == "":
        names.pop()
    facts = [value("x", "f32", None), value("step", "i64", [])] + (
        [value("w", "f32", None)] if with_window else []) + ([value("n", "i64", [])] if with_length else [])
    return model([node("STFT", names, ["y"], onesided=onesided)], facts, [value("y")], opset=17)


@pytest.mark.parametrize("onesided", [0, 1])
def test_stft_matches_framed_dft_matrix(onesided):
    x = rand(2, 40, 1)
    window = np.hanning(12).astype(np.float32)
    (got,) = run_tractile(stft_model(onesided), [x, np.array(5, np.int64), window])
    frames = np.stack([x[:, s:s + 12, 0] for s in range(0, 40 - 12 + 1, 5)], axis=1) * window
    bins = 7 if onesided else 12
    expected = np.einsum("kn,bfn->bfk", dft_matrix(12, 12)[:bins], frames)
    assert got.shape == (2, 6, bins, 2)
    np.testing.assert_allclose(as_complex(got), expected, rtol=1e-4, atol=1e-4)


def test_stft_frame_length_without_window_matches_onnxruntime():
    x = rand(1, 64, 1)
    inputs = [x, np.array(8, np.int64), np.array(16, np.int64)]
    proto = stft_model(with_window=False, with_length=True)
    (got,) = run_tractile(proto, inputs)
    np.testing.assert_allclose(got, run_onnxruntime(proto, inputs)[0], rtol=1e-4, atol=1e-4)


def test_stft_rejects_a_window_of_the_wrong_length():
    with pytest.raises(RunError, match="window has 10 samples but frame_length is 16"):
        run_tractile(stft_model(with_length=True), [rand(1, 64, 1), np.array(8, np.int64), rand(10),
                                                    np.array(16, np.int64)])


@pytest.mark.parametrize("op,formula", [
    ("HannWindow", lambda n, big: 0.5 - 0.5 * np.cos(2 * np.pi * n / big)),
    ("HammingWindow", lambda n, big: 25 / 46 - 21 / 46 * np.cos(2 * np.pi * n / big)),
    ("BlackmanWindow", lambda n, big: 0.42 - 0.5 * np.cos(2 * np.pi * n / big) + 0.08 * np.cos(4 * np.pi * n / big)),
])
@pytest.mark.parametrize("periodic", [0, 1])
def test_windows_follow_their_formula_and_output_type(op, formula, periodic):
    f64_output = helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)
    proto = model([node(op, ["n"], ["y"], periodic=periodic, output_datatype=TensorProto.DOUBLE)],
                  [value("n", "i64", [])], [f64_output], opset=17)
    (got,) = run_tractile(proto, [np.array(9, np.int64)])
    assert got.dtype == np.float64 and got.shape == (9,)
    np.testing.assert_allclose(got, formula(np.arange(9), 9 if periodic else 8), atol=1e-12)
    np.testing.assert_allclose(got, run_onnxruntime(proto, [np.array(9, np.int64)])[0], atol=1e-6)


def test_window_size_is_a_fresh_symbol_until_run():
    proto = model([node("HannWindow", ["n"], ["y"])], [value("n", "i32", [])], [value("y")], opset=17)
    typed = tractile.load(proto)
    assert isinstance(typed.output_fact(0).shape[0], TDim)
    (got,) = typed.plan().state(check_facts=True).run([np.array(4, np.int32)])
    np.testing.assert_allclose(got, [0, 0.5, 1, 0.5], atol=1e-7)


def mel_model():
    facts = [value("m", "i32", []), value("n", "i32", []), value("r", "i32", []), value("lo", "f32", []),
             value("hi", "f32", [])]
    return model([node("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], ["y"])], facts, [value("y")], opset=17)


def test_mel_weight_matrix_matches_onnxruntime_and_has_unit_peaks():
    inputs = [np.array(10, np.int32), np.array(64, np.int32), np.array(16000, np.int32), np.array(100, np.float32),
              np.array(7000, np.float32)]
    (got,) = run_tractile(mel_model(), inputs)
    assert got.shape == (33, 10) and got.dtype == np.float32
    np.testing.assert_allclose(got, run_onnxruntime(mel_model(), inputs)[0], atol=1e-6)
    np.testing.assert_allclose(got.max(axis=0), 1.0)


def test_mel_weight_matrix_hand_example():
    # 2 bands, dft 8 (5 bins), 8000 Hz, 0..4000 Hz: edges at mel steps of 1/4 of the range
    inputs = [np.array(2, np.int32), np.array(8, np.int32), np.array(8000, np.int32), np.array(0, np.float32),
              np.array(4000, np.float32)]
    top = 2595 * np.log10(1 + 4000 / 700)
    edges = np.floor(9 * 700 * (10 ** (np.arange(4) * top / 4 / 2595) - 1) / 8000).astype(int)
    (got,) = run_tractile(mel_model(), inputs)
    expected = np.zeros((5, 2))
    for band in range(2):
        left, centre, right = edges[band:band + 3]
        for j in range(left, max(right, centre + 1)):
            if j < centre:
                expected[j, band] = (j - left) / (centre - left)
            elif j == centre:
                expected[j, band] = 1
            else:
                expected[j, band] = (right - j) / (right - centre)
    np.testing.assert_allclose(got, expected, atol=1e-7)


def test_mel_weight_matrix_rejects_float_bin_count():
    facts = [value("m", "f32", []), value("n", "i32", []), value("r", "i32", []), value("lo", "f32", []),
             value("hi", "f32", [])]
    proto = model([node("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], ["y"])], facts, [value("y")], opset=17)
    with pytest.raises(AnalysisError, match="num_mel_bins has the wrong type"):
        tractile.load(proto)
