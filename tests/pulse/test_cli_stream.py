"""``tractile stream``: delay, latency statistics, --check against the batch model, errors."""
import numpy as np
import onnx
import pytest

from tractile.cli.main import main

from .test_onnx_model import kws_onnx


@pytest.fixture(scope="module")
def kws_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "kws.onnx"
    onnx.save(kws_onnx(), path)
    return path


def test_stream_check_reports_delay_latency_and_largest_difference(kws_path, capsys):
    status = main(["stream", str(kws_path), "-i", "1,40,T,f32", "--pulse", "8", "--length", "45", "--check",
                   "--frame-ms", "10"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "delay 1 frame(s)" in printed and "4 frame(s) per chunk" in printed
    assert "45 frames in 6 chunks" in printed
    assert "median ms" in printed and "real-time factor" in printed
    largest = float(printed.split("largest difference with the batch model ")[1].split()[0])
    assert largest < 1e-5
    assert "output probs: 1x22x5 float32" in printed


def test_stream_of_a_given_input_saves_the_streamed_output(kws_path, tmp_path, capsys):
    x = np.random.default_rng(4).standard_normal((1, 40, 30)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    saved = tmp_path / "y.npz"
    status = main(["stream", str(kws_path), "-i", "1,40,T,f32", "--pulse", "T=4", "--input", str(tmp_path / "x.npy"),
                   "--save-output", str(saved)])
    assert status == 0, capsys.readouterr().out
    import tractile
    expected = tractile.load(str(kws_path), inputs={"x": "1,40,T,f32"}).run([x])[0]
    with np.load(saved) as data:
        np.testing.assert_allclose(data["probs"], expected, rtol=1e-5, atol=1e-6)


def test_stream_errors_name_the_node_and_the_reason(kws_path, capsys):
    assert main(["stream", str(kws_path), "-i", "1,40,T,f32", "--pulse", "7"]) == 2
    error = capsys.readouterr().err
    assert 'AnalysisError: node' in error and '"p" (MaxPool)' in error and "multiple of 2" in error
    assert main(["stream", str(kws_path), "-i", "1,40,T,f32", "--pulse", "0"]) == 2
    assert "--pulse expects a number of frames" in capsys.readouterr().err
