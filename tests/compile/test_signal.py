"""The audio front end's C kernels (tl_signal.h) against the interpreter, bit for bit, with the
state (noise estimate, framing buffers) carried over invocations and cleared by reset; the
shared micro_speech preprocessors compiled, frame by frame over a shared recording."""
from __future__ import annotations

import wave

import numpy as np
import pytest

from tests.compile.harness import assert_builds_without_warnings, check_against_interpreter, generate
from tests.conftest import shared_model
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.formats.tflite import load_tflite
from tractile.model import TypedModel
from tractile.ops import audio
from tractile.ops.io import Const


def model_of(op, inputs: list[tuple[str, tuple]], consts=()) -> TypedModel:
    model = TypedModel()
    wires = [model.add_source(f"x{i}", TypedFact(DatumType(dtype), shape)) for i, (dtype, shape) in enumerate(inputs)]
    wires += [model.wire_node(f"c{i}", Const(np.asarray(value)), [])[0] for i, value in enumerate(consts)]
    model.outputs = list(model.wire_node("op", op, wires))
    return model


def ints(rng, dtype, shape, low=None, high=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if low is None else low, (info.max if high is None else high) + 1, shape,
                        dtype=np.int64).astype(dtype)


def runs(rng, count, *makers):
    return [[make(rng) for make in makers] for _ in range(count)]


@pytest.mark.parametrize("dtype,fft_length,length", [("i16", 512, 480), ("i16", 60, 60), ("i32", 48, 45),
                                                     ("f32", 40, 40), ("f32", 512, 480)])
def test_rfft(dtype, fft_length, length, compile_cache):
    rng = np.random.default_rng(1)
    model = model_of(audio.Rfft(fft_length), [(dtype, (2, length))])
    if dtype == "f32":
        inputs = runs(rng, 3, lambda r: (r.standard_normal((2, length)) * 50).astype(np.float32))
    else:
        inputs = runs(rng, 3, lambda r: ints(r, DatumType(dtype).np, (2, length)))
    check_against_interpreter(model, compile_cache, inputs=inputs, rtol=1e-5, atol=1e-4,
                              name=f"rfft_{dtype}_{fft_length}")


@pytest.mark.parametrize("dtype,fft_length", [("i16", 512), ("i32", 30), ("f32", 120)])
def test_irfft(dtype, fft_length, compile_cache):
    rng = np.random.default_rng(2)
    shape = (2, fft_length + 2)
    model = model_of(audio.Irfft(fft_length), [(dtype, shape)])
    if dtype == "f32":
        inputs = runs(rng, 3, lambda r: r.standard_normal(shape).astype(np.float32))
    else:
        inputs = runs(rng, 3, lambda r: ints(r, DatumType(dtype).np, shape))
    check_against_interpreter(model, compile_cache, inputs=inputs, name=f"irfft_{dtype}_{fft_length}")


def test_window_scale_energy(compile_cache):
    rng = np.random.default_rng(3)
    model = model_of(audio.ApplyWindow(12), [("i16", (2, 64))], [ints(rng, np.int16, (64,), 0)])
    inputs = runs(rng, 3, lambda r: ints(r, np.int16, (2, 64)))
    check_against_interpreter(model, compile_cache, inputs=inputs, name="window")
    scale = model_of(audio.FftAutoScale(), [("i16", (20,))])
    wrapped = np.array([3, -32768, 5, -7] + [1] * 16, dtype=np.int16)
    check_against_interpreter(scale, compile_cache, name="auto_scale",
                              inputs=[[np.zeros(20, np.int16)], [wrapped], [ints(rng, np.int16, (20,), -99, 99)]])
    check_against_interpreter(model_of(audio.Energy(2, 9), [("i16", (24,))]), compile_cache, runs=3, name="energy")


def test_filter_bank_chain(compile_cache):
    """Filterbank, square root, spectral subtraction (state), PCAN and log as the shared model
    has them, on random spectra."""
    path = shared_model("tflite/audio_preprocessor_int8.tflite")
    full = load_tflite(path).into_optimized()
    first = next(n for n in full.nodes if isinstance(n.op, audio.FilterBank))
    last = next(n for n in full.nodes if isinstance(n.op, audio.FilterBankLog))
    model = TypedModel()
    spectrum = model.add_source("spectrum", TypedFact(DatumType.U32, (257,)))
    shift = model.add_source("shift", TypedFact(DatumType.I32, ()))
    wires = {first.inputs[0]: spectrum}
    for node in full.nodes[first.id:last.id + 1]:
        if isinstance(node.op, audio.FilterBankSquareRoot):
            inputs = [wires[node.inputs[0]], shift]
        else:
            inputs = [wires.get(i) or model.wire_node(f"{node.name}.{i.slot}", full.nodes[i.node].op, [])[0]
                      for i in node.inputs]
        for slot, outlet in enumerate(model.wire_node(node.name, node.op, inputs)):
            wires[type(first.inputs[0])(node.id, slot)] = outlet
    model.outputs = [wires[type(first.inputs[0])(last.id, 0)]]
    rng = np.random.default_rng(4)
    inputs = [[rng.integers(0, 1 << bits, 257, dtype=np.uint64).astype(np.uint32), np.array(s, np.int32)]
              for bits, s in ((24, 3), (30, 0), (16, 9), (28, 5), (12, 1))]
    cm = check_against_interpreter(model, compile_cache, inputs=inputs, stateful=True, name="filter_bank_chain")
    status_run = [inputs[0][0], np.array(40, np.int32)]
    with pytest.raises(Exception, match="shift"):
        cm.run(status_run)


def test_pcan_and_log_edges(compile_cache):
    rng = np.random.default_rng(5)
    lut = ints(rng, np.int16, (125,))
    noise = np.array([0, 1, 2, 3, 4, 1023, 1 << 20, 0xFFFFFFFF], dtype=np.uint32)
    model = model_of(audio.Pcan(6), [("u32", (8,)), ("u32", (8,))], [lut])
    check_against_interpreter(model, compile_cache, name="pcan", inputs=[
        [rng.integers(0, 1 << b, 8, dtype=np.uint64).astype(np.uint32), noise] for b in (12, 20, 32)])
    edges = np.array([0, 1, 2, 3, 1 << 28, 0xFFFFFFFF, (1 << 29) - 1, 12345], dtype=np.uint32)
    check_against_interpreter(model_of(audio.FilterBankLog(3, 64), [("u32", (8,))]), compile_cache, name="log",
                              inputs=[[edges], [rng.integers(0, 1 << 32, 8, dtype=np.uint64).astype(np.uint32)]])


@pytest.mark.parametrize("op,shape,dtype", [
    (audio.Framer(10, 4, False), (2, 12), "i16"), (audio.Framer(480, 320, True), (1, 320), "i16"),
    (audio.Stacker(4, 2, 1, 2), (4,), "i16"), (audio.OverlapAdd(3), (2, 2, 8), "i16"),
    (audio.OverlapAdd(5), (1, 3, 8), "f32"), (audio.FrameDelay(3), (2, 5), "i16"),
    (audio.FrameDelay(7), (2, 5), "i16")])
def test_framing_state(op, shape, dtype, compile_cache):
    rng = np.random.default_rng(6)
    model = model_of(op, [(dtype, shape)])
    if dtype == "f32":
        inputs = runs(rng, 6, lambda r: r.standard_normal(shape).astype(np.float32))
    else:
        inputs = runs(rng, 6, lambda r: ints(r, np.int16, shape))
    name = f"{op.name.lower()}_{'_'.join(map(str, shape))}_{dtype}"
    cm = check_against_interpreter(model, compile_cache, inputs=inputs, stateful=True, name=name)
    cm.reset()
    fresh = model.state()
    for values in inputs[:3]:
        for got, want in zip(cm.run(list(values)), fresh.run(list(values))):
            np.testing.assert_array_equal(got, want, err_msg="after reset")


@pytest.mark.parametrize("kind", ["int8", "float"])
def test_preprocessor_compiled(kind, compile_cache):
    path = shared_model(f"tflite/audio_preprocessor_{kind}.tflite")
    model = load_tflite(path).into_optimized()
    with wave.open(str(shared_model("tflite/testdata/yes_1000ms.wav"))) as handle:
        audio_samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16)
    frames = [[audio_samples[None, k * 320:k * 320 + 480]] for k in range(0, 49, 3)]
    check_against_interpreter(model, compile_cache, inputs=frames, stateful=True, name=f"preprocessor_{kind}")


def test_every_signal_kernel_builds_without_warnings(tmp_path):
    """One model using every kernel of tl_signal.h and tl_fft.h, built alone with gcc and clang
    under strict C99 warnings."""
    rng = np.random.default_rng(7)
    model = TypedModel()

    def source(name, dtype, shape):
        return model.add_source(name, TypedFact(DatumType(dtype), shape))

    def const(name, value):
        return model.wire_node(name, Const(np.asarray(value)), [])[0]

    def wire(name, op, inputs):
        return model.wire_node(name, op, inputs)

    x = source("x", "i16", (64,))
    windowed = wire("window", audio.ApplyWindow(12), [x, const("w", ints(rng, np.int16, (64,), 0))])[0]
    scaled = wire("scale", audio.FftAutoScale(), [windowed])[0]
    energy = wire("energy", audio.Energy(1, 30), wire("rfft", audio.Rfft(64), [scaled]))[0]
    widths = np.array([2, 3, 3, 2], np.int16)
    tables = [const(f"t{i}", v) for i, v in enumerate([np.full(10, 2048, np.int16), np.full(10, 2048, np.int16),
                                                       np.array([1, 3, 6, 9], np.int16),
                                                       np.array([0, 2, 5, 8], np.int16), widths])]
    bank = wire("bank", audio.FilterBank(3), [energy, *tables])[0]
    root = wire("root", audio.FilterBankSquareRoot(), [bank, const("shift", np.array(2, np.int32))])[0]
    clean, noise = wire("subtract", audio.FilterBankSpectralSubtraction(3, 409, 15975, 983, 15401, 10, 819, 14),
                        [root])
    gain = wire("pcan", audio.Pcan(6), [clean, noise, const("lut", ints(rng, np.int16, (125,)))])[0]
    outputs = [wire("log", audio.FilterBankLog(3, 64), [gain])[0]]
    outputs.append(wire("irfft_f32", audio.Irfft(30), [source("s", "f32", (32,))])[0])
    outputs.append(wire("rfft_i32", audio.Rfft(20), [source("r", "i32", (20,))])[0])
    outputs += wire("framer", audio.Framer(6, 2, True), [source("f", "i16", (2, 4))])
    outputs += wire("stacker", audio.Stacker(3, 1, 1, 1), [source("k", "i16", (3,))])
    outputs.append(wire("overlap", audio.OverlapAdd(2), [source("o", "f32", (2, 4))])[0])
    outputs.append(wire("overlap_i16", audio.OverlapAdd(3), [source("p", "i16", (2, 4))])[0])
    outputs.append(wire("delay", audio.FrameDelay(5), [source("d", "i16", (3,))])[0])
    model.outputs = outputs
    assert_builds_without_warnings(generate(model, name="signal_kernels"), tmp_path)
