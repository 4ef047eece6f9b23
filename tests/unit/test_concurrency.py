"""One model, 8 threads each with its own state, 1,000 runs each: every output identical
to the single-threaded run (interpreter, streaming states, compiled contexts)."""
from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest

import tractile

from ..conftest import shared_model

THREADS, RUNS = 8, 1000


def run_in_threads(work) -> list:
    """``work(index)`` in THREADS threads at once; their results by index (errors re-raised)."""
    results: list = [None] * THREADS
    errors: list = []
    start = threading.Barrier(THREADS)

    def body(index: int) -> None:
        try:
            start.wait()
            results[index] = work(index)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=body, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def inputs_for(model, count: int, seed: int) -> list[np.ndarray]:
    fact = model.input_facts[0]
    info = np.iinfo(fact.dtype.np)
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in fact.shape)
    return [rng.integers(info.min, info.max, shape, endpoint=True).astype(fact.dtype.np) for _ in range(count)]


def test_interpreter_states_in_eight_threads_match_one_thread():
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    inputs = [inputs_for(model, RUNS // 10, seed) for seed in range(THREADS)]
    single = [[model.state().run([x])[0] for x in inputs[index]] for index in range(THREADS)]

    def work(index: int) -> list:
        state = model.state()
        return [state.run([inputs[index][run % len(inputs[index])]])[0] for run in range(RUNS)]

    for index, outputs in enumerate(run_in_threads(work)):
        for run, got in enumerate(outputs):
            assert np.array_equal(got, single[index][run % len(single[index])]), (index, run)


def test_streams_in_eight_threads_keep_their_own_past():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], dilations=[2], pads=[4, 0])], "tcn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "T"])], [w])
    model = tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    pulsed = model.pulse("T", 1)
    chunks = [[rng.standard_normal((1, 3, 1)).astype(np.float32) for _ in range(RUNS)] for _ in range(THREADS)]
    expected = []
    for index in range(THREADS):
        stream = pulsed.start()
        expected.append(np.concatenate([stream.push([c])[0] for c in chunks[index]], axis=2))

    def work(index: int) -> np.ndarray:
        stream = pulsed.start()
        return np.concatenate([stream.push([c])[0] for c in chunks[index]], axis=2)

    for index, got in enumerate(run_in_threads(work)):
        np.testing.assert_array_equal(got, expected[index])


def test_compiled_contexts_in_eight_threads_match_one_context(compile_cache):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler (install gcc)")
    model = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    compiled = model.compile(cache_dir=compile_cache, name="sine_threads")
    inputs = [inputs_for(model, RUNS, seed) for seed in range(THREADS)]
    single = [[compiled.state().run([x])[0] for x in inputs[index]] for index in range(THREADS)]

    def work(index: int) -> list:
        context = compiled.state()
        return [context.run([x])[0] for x in inputs[index]]

    for index, outputs in enumerate(run_in_threads(work)):
        for run, got in enumerate(outputs):
            assert np.array_equal(got, single[index][run]), (index, run)
