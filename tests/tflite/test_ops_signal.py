"""TFLite Micro's signal ops (custom ``Signal*`` operators) as core audio ops: models built here,
written with tractile's writer, run by TFLite Micro and by tractile (as built and as reloaded),
several calls through one state each. Integer outputs bit-exact, float within 1e-5 relative."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder
from tests.tflite.oracle import assert_float_close, micro_interpreter, run_micro
from tractile.errors import AnalysisError, ModelFormatError, UnsupportedOpError
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.writer import write_model
from tractile.ops import audio

RNG_SEED = 27


def check_micro(model, input_sets, compare=None, rtol: float = 1e-5) -> list[list[np.ndarray]]:
    """Assert tractile (built and reloaded) and TFLite Micro agree on every input set, run in
    sequence through one state each. ``compare(call, index, ours, micro)`` picks the parts
    of output ``index`` that TFLite Micro defines (default: all)."""
    data = write_model(model)
    interpreter = micro_interpreter(data, arena_size=1 << 18)
    built, loaded = model.plan().state(), load_tflite(data).into_optimized().plan().state()
    results = []
    for call, inputs in enumerate(input_sets):
        expected = run_micro(interpreter, inputs)
        ours, again = built.run(inputs), loaded.run(inputs)
        assert len(ours) == len(expected)
        for index, (a, b, reference) in enumerate(zip(ours, again, expected)):
            np.testing.assert_array_equal(a, b, err_msg=f"output {index}: the reloaded model differs")
            assert a.dtype == reference.dtype and a.shape == reference.shape, (a.dtype, a.shape, reference.dtype)
            if compare is not None:
                a, reference = compare(call, index, a, reference)
            if a.dtype.kind == "f":
                assert_float_close(a, reference, rtol)
            else:
                np.testing.assert_array_equal(a, reference, err_msg=f"call {call} output {index} differs from TFLM")
        results.append(ours)
    return results


def single(op, inputs: list[tuple[str, tuple]], consts=()):
    """A model of one op: runtime inputs (dtype, shape), then constant inputs."""
    g = GraphBuilder()
    wires = [g.input(f"x{i}", dtype, shape) for i, (dtype, shape) in enumerate(inputs)]
    wires += [g.const(f"c{i}", value) for i, value in enumerate(consts)]
    out = g.op("op", op, wires, outputs=op.nboutputs)
    return g.outputs(*(out if isinstance(out, list) else [out]))


def ints(rng, dtype, shape, low=None, high=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if low is None else low, (info.max if high is None else high) + 1, shape,
                        dtype=np.int64).astype(dtype)


@pytest.mark.parametrize("shift", [0, 12, 15])
def test_window(shift):
    rng = np.random.default_rng(RNG_SEED)
    weights = ints(rng, np.int16, (33,))
    model = single(audio.ApplyWindow(shift), [("i16", (2, 33))], [weights])
    check_micro(model, [[ints(rng, np.int16, (2, 33))] for _ in range(2)])


def test_fft_auto_scale():
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.FftAutoScale(), [("i16", (16,))])
    wrapped = np.array([3, -32768, 5, -7, 100, -200] + [1] * 10, dtype=np.int16)
    results = check_micro(model, [[np.zeros(16, np.int16)], [ints(rng, np.int16, (16,), -300, 300)], [wrapped],
                                  [ints(rng, np.int16, (16,))]])
    assert int(results[1][1]) > 0


@pytest.mark.parametrize("dtype,fft_length,length", [
    ("i16", 512, 480), ("i16", 60, 50), ("i32", 48, 48), ("i32", 512, 400), ("f32", 60, 41), ("f32", 256, 256)])
def test_rfft(dtype, fft_length, length):
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.Rfft(fft_length), [(dtype, (2, length))])
    if dtype == "f32":
        sets = [[rng.standard_normal((2, length)).astype(np.float32) * 100] for _ in range(2)]
    else:
        sets = [[ints(rng, {"i16": np.int16, "i32": np.int32}[dtype], (2, length))] for _ in range(2)]
    check_micro(model, sets)


@pytest.mark.parametrize("dtype,fft_length", [("i16", 512), ("i16", 40), ("i32", 30), ("f32", 120)])
def test_irfft(dtype, fft_length):
    rng = np.random.default_rng(RNG_SEED)
    shape = (2, fft_length + 2)
    model = single(audio.Irfft(fft_length), [(dtype, shape)])
    if dtype == "f32":
        sets = [[rng.standard_normal(shape).astype(np.float32)] for _ in range(2)]
    else:
        sets = [[ints(rng, {"i16": np.int16, "i32": np.int32}[dtype], shape)] for _ in range(2)]
    check_micro(model, sets)


def test_fft_length_refused():
    with pytest.raises(AnalysisError, match="prime factor 7"):
        single(audio.Rfft(28), [("i16", (28,))])


def test_energy():
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.Energy(3, 17), [("i16", (40,))])
    extremes = np.full(40, -32768, dtype=np.int16)
    check_micro(model, [[ints(rng, np.int16, (40,))], [extremes]],
                compare=lambda call, index, ours, micro: (ours[3:17], micro[3:17]))


def _filter_tables(rng, channels: int, bins: int):
    widths = rng.integers(0, 6, channels + 1).astype(np.int16)
    starts = np.array([rng.integers(0, bins - w + 1) for w in widths], dtype=np.int16)
    weight_starts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int16)
    size = int(widths.sum())
    weights = rng.integers(0, 4096, size).astype(np.int16)
    return [weights, (4096 - weights).astype(np.int16), starts, weight_starts, widths]


def test_filter_bank():
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.FilterBank(6), [("u32", (20,))], _filter_tables(rng, 6, 20))
    check_micro(model, [[rng.integers(0, 1 << 32, 20, dtype=np.uint64).astype(np.uint32)] for _ in range(2)])


def test_filter_bank_refuses_bad_tables():
    rng = np.random.default_rng(RNG_SEED)
    tables = _filter_tables(rng, 3, 10)
    tables[2] = np.array([0, 0, 9, 0], dtype=np.int16)
    tables[4] = np.array([1, 1, 5, 1], dtype=np.int16)
    with pytest.raises(AnalysisError, match="channel 2"):
        single(audio.FilterBank(3), [("u32", (10,))], tables)


@pytest.mark.parametrize("shift", [0, 7])
def test_filter_bank_square_root(shift):
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.FilterBankSquareRoot(), [("u64", (12,))], [np.array(shift, dtype=np.int32)])
    big = rng.integers(0, 1 << 63, 12, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    edges = np.array([0, 1, 2, 3, 0xFFFFFFFE, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, 0xFFFFFFFF_FFFFFFFF,
                      0xFFFFFFFE_00000001, 0xFFFFFFFE_00000002, 4 << 30], dtype=np.uint64)
    small = rng.integers(0, 1 << 32, 12, dtype=np.uint64)
    check_micro(model, [[big], [edges], [small]])


@pytest.mark.parametrize("clamping", [False, True])
def test_spectral_subtraction(clamping):
    rng = np.random.default_rng(RNG_SEED)
    op = audio.FilterBankSpectralSubtraction(num_channels=8, smoothing=409, one_minus_smoothing=15975,
                                             alternate_smoothing=983, alternate_one_minus_smoothing=15401,
                                             smoothing_bits=10, min_signal_remaining=819,
                                             spectral_subtraction_bits=14, clamping=clamping)
    model = single(op, [("u32", (8,))])
    frames = [rng.integers(0, 1 << 22, 8, dtype=np.uint64).astype(np.uint32) for _ in range(6)]
    frames[3] //= 64
    check_micro(model, [[f] for f in frames])


def _pcan_lut(rng, shared: bool) -> np.ndarray:
    if not shared:
        return ints(rng, np.int16, (125,))
    from tests.conftest import shared_model

    model = load_tflite(shared_model("tflite/audio_preprocessor_int8.tflite"))
    node = next(n for n in model.nodes if isinstance(n.op, audio.Pcan))
    return model.outlet_fact(node.inputs[2]).konst


@pytest.mark.parametrize("shared", [True, False])
def test_pcan(shared):
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.Pcan(6), [("u32", (16,)), ("u32", (16,))], [_pcan_lut(rng, shared)])
    noise = np.concatenate([[0, 1, 2, 3, 4, 1023, 1 << 20, 0xFFFFFFFF],
                            rng.integers(0, 1 << 32, 8, dtype=np.uint64)]).astype(np.uint32)
    sets = [[rng.integers(0, 1 << bits, 16, dtype=np.uint64).astype(np.uint32), noise] for bits in (12, 20, 32)]
    check_micro(model, sets)


def test_filter_bank_log():
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.FilterBankLog(3, 64), [("u32", (16,))])
    edges = np.array([0, 1, 2, 3, 1 << 28, 0xFFFFFFFF, (1 << 29) - 1, 1 << 29, 5, 17, 255, 256, 65535, 65536,
                      1 << 20, 12345], dtype=np.uint32)
    check_micro(model, [[edges], [rng.integers(0, 1 << 32, 16, dtype=np.uint64).astype(np.uint32)]])


@pytest.mark.parametrize("prefill", [False, True])
def test_framer(prefill):
    rng = np.random.default_rng(RNG_SEED)
    size, step, frames = 10, 4, 3
    model = single(audio.Framer(size, step, prefill), [("i16", (2, step * frames))])

    def compare(call, index, ours, micro):
        if index == 1:
            return ours, micro
        before = call * step * frames + (size - step if prefill else 0)
        valid = [before + (k + 1) * step >= size for k in range(frames)]
        return ours[:, valid], micro[:, valid]

    sets = [[ints(rng, np.int16, (2, step * frames))] for _ in range(3)]
    results = check_micro(model, sets, compare)
    assert [bool(r[1]) for r in results] == ([True] * 3 if prefill else [False, True, True])


def test_stacker():
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.Stacker(num_channels=4, left_context=2, right_context=1, step=2), [("i16", (4,))])
    ready = [False, True, False, True, False, True, False]
    results = check_micro(model, [[ints(rng, np.int16, (4,))] for _ in range(7)],
                          lambda call, index, ours, micro: (ours, micro) if index == 1 or ready[call] else (ours, ours))
    assert [bool(r[1]) for r in results] == ready


@pytest.mark.parametrize("dtype", ["i16", "f32"])
def test_overlap_add(dtype):
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.OverlapAdd(3), [(dtype, (2, 2, 8))])
    if dtype == "f32":
        sets = [[rng.standard_normal((2, 2, 8)).astype(np.float32)] for _ in range(3)]
    else:
        sets = [[ints(rng, np.int16, (2, 2, 8))] for _ in range(3)]
    check_micro(model, sets)


@pytest.mark.parametrize("delay", [3, 7])
def test_delay(delay):
    rng = np.random.default_rng(RNG_SEED)
    model = single(audio.FrameDelay(delay), [("i16", (2, 5))])
    results = check_micro(model, [[ints(rng, np.int16, (2, 5))] for _ in range(4)])
    assert not results[0][0][:, :min(delay, 5)].any()


def test_unknown_custom_ops_are_listed_at_load():
    g = GraphBuilder()
    x = g.input("x", "i16", (16,))
    spectrum = g.op("rfft", audio.Rfft(16), [x])
    data = write_model(g.outputs(g.op("energy", audio.Energy(0, 9), [spectrum])))
    data = data.replace(b"SignalRfft", b"SignalRfxt").replace(b"SignalEnergy", b"SignalEnxrgy")
    with pytest.raises(UnsupportedOpError) as info:
        load_tflite(data)
    assert "custom ops SignalEnxrgy, SignalRfxt" in str(info.value)
    assert "the custom ops SignalDelay, SignalEnergy," in str(info.value)
    assert {op[1] for op in info.value.ops} == {"CUSTOM:SignalRfxt", "CUSTOM:SignalEnxrgy"}


def test_missing_custom_option_is_a_format_error(monkeypatch):
    from tractile.formats.tflite import registry

    g = GraphBuilder()
    window = g.op("window", audio.ApplyWindow(3), [g.input("x", "i16", (4,)), g.const("w", np.ones(4, np.int16))])
    model = g.outputs(window)
    monkeypatch.setitem(registry.WRITERS, audio.ApplyWindow,
                        lambda op, ctx: registry.OpSpec("CUSTOM:SignalWindow", custom_options={"shifts": 3}))
    data = write_model(model)
    with pytest.raises(ModelFormatError, match="custom option 'shift' should be an integer"):
        load_tflite(data)
