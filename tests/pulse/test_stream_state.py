"""Stream states: memory that does not grow, reset, streams side by side, errors on bad chunks."""
import gc
import tracemalloc

import numpy as np
import pytest

from tractile import RunError
from tractile.ops import Relu

from .helpers import LENGTH, Builder, random_input, stream, wavenet


def small_model():
    b = Builder("1,4,T,f32")
    y = b.node("relu", Relu(), b.conv("c1", b.x, 4, 4, 3, dilation=2, pads=(2, 2)))
    return b.output(b.conv("c2", y, 4, 2, 3, pads=(2, 0)))


def _live_blocks() -> int:
    return sum(stat.count for stat in tracemalloc.take_snapshot().statistics("filename"))


def test_ten_thousand_pushes_do_not_grow_memory():
    pulsed = small_model().pulse("T", 1)
    state = pulsed.start()
    chunk = random_input((1, 4, 1))
    for _ in range(1000):  # warm up caches and lazily made objects
        state.push([chunk])
    reported = state.memory_bytes()
    gc.collect()
    objects = len(gc.get_objects())
    tracemalloc.start()
    try:
        blocks = _live_blocks()
        for _ in range(10_000):
            state.push([chunk])
        gc.collect()
        grown = _live_blocks() - blocks
    finally:
        tracemalloc.stop()
    assert len(gc.get_objects()) - objects < 50  # test runners may make a few objects meanwhile
    # keeping anything per push would leave 10,000 blocks or more; the allocator's own
    # tables may settle by a few
    assert grown < 1000, f"{grown} more memory blocks are live after 10,000 pushes"
    assert state.memory_bytes() == reported


def test_memory_bytes_reports_the_buffers():
    pulsed = small_model().pulse("T", 8)
    state = pulsed.start()
    # c1 keeps 4 frames (extent 5 - 1) of 4 channels, c2 2 frames; buffers leave room for a few pulses
    assert state.memory_bytes() >= (4 + 2) * 4 * 4
    assert state.memory_bytes() < 4096
    state.push([random_input((1, 4, 8))])
    assert state.memory_bytes() >= (4 + 2) * 4 * 4


def test_reset_starts_a_new_stream_and_streams_run_side_by_side():
    model = small_model()
    pulsed = model.pulse("T", 4)
    a, b = random_input((1, 4, LENGTH), seed=1), random_input((1, 4, LENGTH), seed=2)
    expected_a, expected_b = model.run([a])[0], model.run([b])[0]
    first, second = pulsed.start(), pulsed.start()
    outs_a, outs_b = [], []
    for k in range(LENGTH // 4):
        outs_a.append(first.push([a[:, :, 4 * k:4 * k + 4]])[0])
        outs_b.append(second.push([b[:, :, 4 * k:4 * k + 4]])[0])
    outs_a.append(first.finish([a[:, :, LENGTH // 4 * 4:]])[0])
    outs_b.append(second.finish([b[:, :, LENGTH // 4 * 4:]])[0])
    delay = pulsed.delay
    np.testing.assert_allclose(np.concatenate(outs_a, 2)[:, :, delay:], expected_a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.concatenate(outs_b, 2)[:, :, delay:], expected_b, rtol=1e-5, atol=1e-5)
    first.reset()
    outs = [first.push([b[:, :, 4 * k:4 * k + 4]])[0] for k in range(LENGTH // 4)]
    outs.append(first.finish([b[:, :, LENGTH // 4 * 4:]])[0])
    np.testing.assert_allclose(np.concatenate(outs, 2)[:, :, delay:], expected_b, rtol=1e-5, atol=1e-5)


def test_dict_inputs_give_dict_outputs():
    model = small_model()
    pulsed = model.pulse("T", 5)
    state = pulsed.start()
    x = random_input((1, 4, 10))
    first = state.push({"x": x[:, :, :5]})
    second = state.push({"x": x[:, :, 5:]})
    tail = state.finish({"x": x[:, :, :0][:, :, :0]}) if False else state.finish()
    name = pulsed.model.output_names()[0]
    got = np.concatenate([first[name], second[name], tail[0]], axis=2)[:, :, pulsed.delay:]
    np.testing.assert_allclose(got, model.run([x])[0], rtol=1e-5, atol=1e-5)


def test_chunk_of_the_wrong_size_is_a_run_error_naming_the_input():
    state = small_model().pulse("T", 8).start()
    with pytest.raises(RunError, match=r'input "x": a chunk must have 8 frame\(s\) along axis 2.*\(1, 4, 7\)'):
        state.push([random_input((1, 4, 7))])
    with pytest.raises(RunError, match=r'input "x".*axis 1 should be 4'):
        state.push([random_input((1, 3, 8))])
    with pytest.raises(RunError, match=r"the last chunk must have 1 to 8 frames.*\(1, 4, 9\)"):
        state.finish([random_input((1, 4, 9))])
    with pytest.raises(RunError, match=r"takes 1 input\(s\) \(x\), 2 given"):
        state.push([random_input((1, 4, 8))] * 2)


def test_a_finished_stream_needs_a_reset():
    model = small_model()
    pulsed = model.pulse("T", 8)
    state = pulsed.start()
    x = random_input((1, 4, 8))
    state.push([x])
    tail, = state.finish()
    assert tail.shape == (1, 2, 8 + pulsed.delay - 8)
    with pytest.raises(RunError, match="finished.*reset"):
        state.push([x])
    with pytest.raises(RunError, match="finished already"):
        state.finish()
    state.reset()
    assert stream(pulsed, [x])[0].shape == model.run([x])[0].shape


def test_causal_outputs_match_before_the_stream_ends():
    """Without finish: every frame pushed so far gives its outputs, delay frames late."""
    model = wavenet()
    x = random_input((1, 4, 48))
    expected = model.run([x])[0]
    state = model.pulse("T", 8).start()
    got = np.concatenate([state.push([x[:, :, k:k + 8]])[0] for k in range(0, 48, 8)], axis=2)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
