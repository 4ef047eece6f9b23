"""Batch inference over files: results equal model.run on each file, the manifest, resuming,
failures, readers, streaming long inputs, and the Ray engine (with a worker killed mid-job)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper, save

import tractile
import tractile.batch as batch
from tractile.cli.main import main as cli_main

OPSET = [helper.make_opsetid("", 17)]


def conv_model(path: Path) -> Path:
    """A causal 1-D convolution over [1, 2, T] with a tanh: it streams."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((3, 2, 4)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[3, 0], dilations=[1]),
             helper.make_node("Tanh", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    save(helper.make_model(graph, opset_imports=OPSET), path)
    return path


@pytest.fixture
def corpus(tmp_path):
    model = conv_model(tmp_path / "conv.onnx")
    rng = np.random.default_rng(1)
    files = []
    for index in range(9):
        folder = tmp_path / "data" / f"part{index % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        x = rng.standard_normal((1, 2, 20 + index)).astype(np.float32)
        if index % 2:
            np.savez(folder / f"clip{index}.npz", x=x)
            files.append(folder / f"clip{index}.npz")
        else:
            np.save(folder / f"clip{index}.npy", x)
            files.append(folder / f"clip{index}.npy")
    return model, tmp_path / "data", files


def load_input(path: Path) -> np.ndarray:
    return np.load(path)["x"] if path.suffix == ".npz" else np.load(path)


def check_results(model_path: Path, files: list[Path], out: Path, data: Path) -> list[dict]:
    model = tractile.load(model_path)
    records = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    by_input = {r["input"]: r for r in records}
    for path in files:
        record = by_input[str(path)]
        assert record["status"] == "done" and record["error"] is None
        result = np.load(record["output"])["y"]
        np.testing.assert_array_equal(result, model.run([load_input(path)])[0])
        assert Path(record["output"]) == out / path.relative_to(data).parent / f"{path.name}.npz"
    return records


@pytest.mark.parametrize("workers,batch_size", [(1, 1), (2, 3)])
def test_results_equal_model_run_on_each_file(corpus, tmp_path, workers, batch_size):
    model, data, files = corpus
    summary = batch.run(str(model), str(data / "**" / "*.np*"), str(tmp_path / "out"), workers=workers,
                        batch_size=batch_size)
    assert (summary.found, summary.done, summary.failed) == (9, 9, 0)
    records = check_results(model, files, tmp_path / "out", data)
    assert len(records) == 9 and len({r["input"] for r in records}) == 9


def test_an_interrupted_job_resumes_and_failures_are_kept_until_retried(corpus, tmp_path):
    model, data, files = corpus
    out = tmp_path / "out"
    (data / "broken.npy").write_bytes(b"not an array")
    first = batch.run(str(model), [str(data / "**" / "clip[0-3].*")], str(out))  # a part only: "interrupted"
    assert (first.done, first.failed) == (4, 0)
    truncated = out / files[0].relative_to(data).parent / f"{files[0].name}.npz"
    truncated.write_bytes(truncated.read_bytes()[:20])  # a result cut short: it runs again
    second = batch.run(str(model), str(data / "**" / "*"), str(out))
    assert (second.skipped_done, second.done, second.failed) == (3, 6, 1)
    assert "broken.npy" in second.failures[0]["input"] and "cannot be read" in second.failures[0]["error"]
    third = batch.run(str(model), str(data / "**" / "*"), str(out))
    assert (third.done, third.failed, third.skipped_done, third.skipped_failed) == (0, 0, 9, 1)
    np.save(data / "broken.npy", np.zeros((1, 2, 5), np.float32))
    fourth = batch.run(str(model), str(data / "**" / "*"), str(out), retry_failed=True)
    assert (fourth.done, fourth.failed) == (1, 0)
    check_results(model, files, out, data)


def test_audio_and_images_are_read(tmp_path):
    soundfile = pytest.importorskip("soundfile")
    from PIL import Image

    graph = helper.make_graph([helper.make_node("ReduceMean", ["x"], ["y"], keepdims=0)], "mean",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    save(helper.make_model(graph, opset_imports=OPSET), tmp_path / "mean.onnx")
    samples = (np.sin(np.arange(8000) / 9) * 0.5).astype(np.float32)
    (tmp_path / "in").mkdir()
    soundfile.write(tmp_path / "in" / "tone.wav", np.stack([samples, samples], axis=1), 8000, subtype="FLOAT")
    summary = batch.run(str(tmp_path / "mean.onnx"), str(tmp_path / "in" / "*.wav"), str(tmp_path / "out"))
    assert summary.done == 1
    np.testing.assert_allclose(np.load(tmp_path / "out" / "tone.wav.npz")["y"], [samples.mean()], rtol=1e-5)
    pixels = np.random.default_rng(2).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "in" / "image.png")
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "same",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 5, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)])
    save(helper.make_model(graph, opset_imports=OPSET), tmp_path / "same.onnx")
    batch.run(str(tmp_path / "same.onnx"), str(tmp_path / "in" / "*.png"), str(tmp_path / "img"))
    np.testing.assert_array_equal(np.load(tmp_path / "img" / "image.png.npz")["y"][0], pixels)


def test_long_inputs_stream_through_the_pulsed_model(corpus, tmp_path):
    model, _, _ = corpus
    long = tmp_path / "long"
    long.mkdir()
    x = np.random.default_rng(3).standard_normal((1, 2, 1003)).astype(np.float32)
    np.save(long / "long.npy", x)
    summary = batch.run(str(model), str(long / "*.npy"), str(tmp_path / "out"), pulse=16)
    assert summary.done == 1
    got = np.load(tmp_path / "out" / "long.npy.npz")["y"]
    np.testing.assert_allclose(got, tractile.load(model).run([x])[0], rtol=1e-5, atol=1e-6)


def test_cli_prints_a_summary_and_fails_on_failed_inputs(corpus, tmp_path, capsys):
    model, data, _ = corpus
    (data / "broken.npz").write_bytes(b"PK")
    status = cli_main(["batch", str(model), "--inputs", str(data / "**" / "*"), "--out", str(tmp_path / "o"),
                       "--workers", "2"])
    printed = capsys.readouterr().out
    assert status == 1 and "broken.npz" in printed and "done now" in printed
    assert cli_main(["batch", str(model), "--inputs", str(data / "nothing" / "*"), "--out", str(tmp_path / "o")]) == 2


def test_the_ray_engine_gives_the_local_results_even_when_a_worker_dies(corpus, tmp_path):
    pytest.importorskip("ray.data")
    import psutil

    model, data, files = corpus
    rng = np.random.default_rng(5)
    for index in range(40):  # enough tasks that a worker dies with work still queued
        path = data / "more" / f"extra{index}.npy"
        path.parent.mkdir(exist_ok=True)
        np.save(path, rng.standard_normal((1, 2, 4000)).astype(np.float32))
        files.append(path)
    killed = []

    def kill_a_worker(finished, total, record):
        if finished == 3 and not killed:
            for process in psutil.process_iter(["cmdline"]):
                if any("MapWorker" in part for part in (process.info["cmdline"] or [])):
                    process.kill()
                    killed.append((process.pid, total - finished))
                    break

    summary = batch.run(str(model), str(data / "**" / "*.np*"), str(tmp_path / "ray"), workers=2, engine="ray",
                        progress=kill_a_worker)
    assert killed and killed[0][1] > 10, "a worker was killed while most of the job was still to run"
    assert (summary.done, summary.failed) == (49, 0)
    records = check_results(model, files, tmp_path / "ray", data)
    assert len(records) == 49, "nothing lost, nothing written twice"
    local = batch.run(str(model), str(data / "**" / "*.np*"), str(tmp_path / "local"), workers=2)
    assert local.done == 49
    for path in files[:5] + files[-5:]:
        relative = path.relative_to(data).parent / f"{path.name}.npz"
        np.testing.assert_array_equal(np.load(tmp_path / "ray" / relative)["y"],
                                      np.load(tmp_path / "local" / relative)["y"])


def test_a_job_gives_the_callers_thread_limits_back(corpus, tmp_path):
    """Workers use one BLAS thread; the process that called batch.run keeps its own limits."""
    pytest.importorskip("threadpoolctl")
    from tractile.runtime.threads import current_threads

    model, data, _ = corpus
    np.ones((4, 4)) @ np.ones((4, 4))
    tractile.set_threads(None)
    before = current_threads()
    assert before["blas"] > 1, "this check needs a BLAS with several threads by default"
    summary = batch.run(str(model), str(data / "**" / "*.np*"), str(tmp_path / "out"))
    assert summary.done > 0
    assert current_threads() == before
