"""``tractile stream``: run a model as a stream, chunk by chunk, and time each chunk."""
from __future__ import annotations

import argparse
import time

import numpy as np

from ..dim import TDim
from ..errors import TractileError
from ..pulse.frames import pulse_frames, run_frames
from ..pulse.symbol import stream_symbol
from .common import (
    add_model_arguments,
    console,
    escape,
    load_at_stage,
    parse_bindings,
    random_inputs,
    report_mismatches,
    summarize,
)
from .run import _load_arrays, compare_outputs


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "stream", help="run a model as a stream of chunks (pulsed), with latency statistics",
        description="Pulse the optimized model along its streamed axis (the input axis whose length is a "
                    "symbol, T by default: give it with -i, e.g. -i 1,40,T,f32), then feed it the whole "
                    "input (--input, or random frames) --pulse frames at a time, as a real-time stream "
                    "would. A model without a symbol whose one input is a window of samples (an audio "
                    "front end, e.g. TFLite Micro's micro_speech preprocessor) streams over its samples "
                    "instead: each chunk is --pulse samples (the hop), the model runs once per chunk on the "
                    "last window, and its outputs gain a leading axis of frames. Prints the output delay "
                    "(how many frames late each output is), the state "
                    "the stream keeps, and the time each chunk took. The last chunk may be shorter; the "
                    "stream is then finished, which flushes the frames still owed. With --check, the "
                    "streamed outputs (minus the delay) are compared with the batch model's on the whole "
                    "input and the largest difference is reported (exit status 1 beyond the tolerance).")
    add_model_arguments(parser)
    parser.add_argument("--pulse", required=True, metavar="P",
                        help="frames per chunk along the streamed axis: P, or SYM=P to name the symbol")
    parser.add_argument("--outputs", metavar="NAMES",
                        help="stream only these outputs (comma-separated names), dropping the others and what "
                             "only they need, e.g. an LSTM's final states hn,cn")
    parser.add_argument("--symbol", metavar="SYM",
                        help="the streamed symbol (default: T, or the only symbol in the input facts)")
    parser.add_argument("--input", metavar="FILE",
                        help="input values (.npy for a single input, .npz by name; .wav/.flac/.ogg audio, mono, "
                             "read as the input's type, e.g. int16 samples, on its last axis)")
    parser.add_argument("--length", type=int, default=100, metavar="FRAMES",
                        help="frames of the random input when --input is not given (default 100)")
    parser.add_argument("--set", action="append", default=[], metavar="SYM=N",
                        help="value of another symbol for random inputs (e.g. --set N=1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--frame-ms", type=float, metavar="MS",
                        help="duration of one input frame (e.g. 10): also print the real-time factor")
    parser.add_argument("--check", action="store_true",
                        help="compare with the batch model on the whole input and report the largest difference")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance for --check (default 1e-4)")
    parser.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance for --check (default 1e-5)")
    parser.add_argument("--save-output", metavar="NPZ", help="write the streamed outputs (delay dropped) to an .npz")
    parser.add_argument("--compiled", action="store_true",
                        help="run the streaming form compiled to C (ring buffers in its context; needs a C "
                             "compiler). A compiled stream never ends: the input is padded with zero frames to "
                             "flush the delay")
    parser.set_defaults(handler=run)


AUDIO = (".wav", ".flac", ".ogg")


def _read_inputs(path: str, model, names: list[str]) -> list[np.ndarray]:
    """Arrays from .npy/.npz, or a recording's samples on the only input's last axis, in its type."""
    if not path.lower().endswith(AUDIO):
        return _load_arrays(path, names, "inputs")
    if len(names) != 1:
        raise TractileError(f"{path}: a recording feeds a model of one input, this one has {len(names)}")
    try:
        import soundfile
    except ImportError:
        raise TractileError("reading audio needs soundfile: pip install 'tractile[audio]'") from None
    fact = model.input_facts[0]
    kind = {"int16": "int16", "int32": "int32"}.get(fact.dtype.np.name, "float32")
    try:
        samples, _ = soundfile.read(path, dtype=kind, always_2d=True)
    except (RuntimeError, OSError) as error:  # soundfile's LibsndfileError is a RuntimeError
        raise TractileError(f"{path}: not readable audio ({error})") from None
    if samples.shape[1] > 1:
        raise TractileError(f"{path}: {samples.shape[1]} channels; stream one channel (mono audio)")
    return [samples[:, 0].astype(fact.dtype.np).reshape((1,) * (fact.rank - 1) + (-1,))]


def _random_samples(fact, length: int, rng: np.random.Generator) -> np.ndarray:
    shape = tuple(int(d) for d in fact.concrete_shape()[:-1]) + (length,)
    if fact.dtype.is_float:
        return rng.standard_normal(shape).astype(fact.dtype.np)
    info = np.iinfo(fact.dtype.np)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True).astype(fact.dtype.np)


def _pulse_option(text: str, symbol: str | None) -> tuple[str | None, int]:
    name, _, size = text.rpartition("=")
    if not size.strip().isdigit() or int(size) < 1:
        raise TractileError(f"--pulse expects a number of frames >= 1 (or SYM=FRAMES), got {text!r}")
    if name and symbol and name.strip() != symbol:
        raise TractileError(f"--pulse names the symbol {name!r} but --symbol says {symbol!r}")
    return (name.strip() or symbol), int(size)


def _latency_table(latencies: list[float], pulse: int, frame_ms: float | None):
    from rich.table import Table

    table = Table(title="time per chunk", title_justify="left")
    ms = np.asarray(latencies) * 1000
    columns = ["chunks", "mean ms", "median ms", "p90 ms", "p99 ms", "max ms"]
    values = [str(len(ms))] + [f"{v:.3f}" for v in (ms.mean(), np.median(ms), np.percentile(ms, 90),
                                                    np.percentile(ms, 99), ms.max())]
    if frame_ms:
        columns.append("real-time factor")
        values.append(f"{np.median(ms) / (pulse * frame_ms):.4f}")
    for column in columns:
        table.add_column(column, justify="right")
    table.add_row(*values)
    return table


def run(args: argparse.Namespace) -> int:
    out = console()
    model = load_at_stage(args, "optimize")
    symbol, pulse = _pulse_option(args.pulse, args.symbol)
    symbol = stream_symbol(model, symbol)
    kept = [name.strip() for name in args.outputs.split(",") if name.strip()] if args.outputs else None
    framed = all(fact.concrete_shape() is not None for fact in model.input_facts)
    if framed and kept:
        raise TractileError("--outputs applies to models with a streamed symbol, not to a window model")
    pulsed = pulse_frames(model, pulse, symbol) if framed else model.pulse(symbol, pulse, outputs=kept)
    names = model.input_names()
    if args.input:
        inputs = _read_inputs(args.input, model, names)
    elif framed:
        rng = np.random.default_rng(args.seed)
        inputs = [_random_samples(model.input_facts[0], args.length * pulse, rng)]
    else:
        bindings = parse_bindings(args.set)
        bindings.setdefault(symbol, args.length)
        rng = np.random.default_rng(args.seed)
        inputs = random_inputs(model, rng, bindings)
    streams = pulsed.input_streams
    axis, length = next((s.axis, v.shape[s.axis]) for s, v in zip(streams, inputs) if s is not None)
    for name, value, stream in zip(names, inputs, streams):
        where = f"streamed along axis {stream.axis}" if stream else "given whole with every chunk"
        out.print(f"input  [bold]{escape(name)}[/bold]: {summarize(value)}  ({escape(where)})", markup=True)
    out.print(f"pulse  {pulse} frames of {symbol} per chunk; {length} frames in {-(-length // pulse)} chunks")
    out_names = pulsed.model.output_names()
    for name, stream in zip(out_names, pulsed.output_streams):
        out.print(f"output [bold]{escape(name)}[/bold]: axis {stream.axis}, {stream.pulse} frame(s) per chunk, "
                  f"delay [bold]{stream.delay}[/bold] frame(s)", markup=True)
    if args.compiled:
        from .stream_compiled import stream_compiled

        reference = (lambda: run_frames(model, inputs[0], pulse)) if framed else None
        return stream_compiled(out, args, model, pulsed, inputs, axis, length, reference)
    state = pulsed.start()
    out.print(f"state  {state.memory_bytes()} bytes of buffers and recurrent state; "
              f"{len(pulsed.model.nodes)} nodes")

    def chunk(start: int, stop: int) -> list[np.ndarray]:
        index = (slice(None),) * axis + (slice(start, stop),)
        return [v[index] if s is not None else v for v, s in zip(inputs, streams)]

    pieces: list[list[np.ndarray]] = [[] for _ in pulsed.output_streams]
    latencies = []
    full = length // pulse
    for k in range(full):
        start = time.perf_counter()
        outputs = state.push(chunk(k * pulse, (k + 1) * pulse))
        latencies.append(time.perf_counter() - start)
        for piece, value in zip(pieces, outputs):
            piece.append(value)
    start = time.perf_counter()
    tail = state.finish(chunk(full * pulse, length) if length % pulse else None)
    flush = time.perf_counter() - start
    if latencies:
        out.print(_latency_table(latencies, pulse, args.frame_ms))
    out.print(f"finish (last chunk and flush) took {flush * 1000:.3f} ms")
    results = []
    for piece, last, stream in zip(pieces, tail, pulsed.output_streams):
        joined = np.concatenate(piece + [last], axis=stream.axis)
        owed = stream.delay + stream.dim.eval({symbol: length}) if isinstance(stream.dim, TDim) \
            else stream.delay + stream.dim
        results.append(joined[(slice(None),) * stream.axis + (slice(stream.delay, owed),)])
    for name, value in zip(out_names, results):
        out.print(f"output [bold]{escape(name)}[/bold]: {summarize(value)}", markup=True)
    if args.save_output:
        np.savez(args.save_output, **dict(zip(out_names, results)))
    if not args.check:
        return 0
    if framed:
        expected = run_frames(model, inputs[0], pulse)
    else:
        batch = model.run(dict(zip(names, inputs)))
        expected = [batch[name] for name in out_names]
    for name, value, reference in zip(out_names, results, expected):
        if value.shape == reference.shape and value.dtype.kind in "fiub":
            largest = float(np.max(np.abs(value.astype(np.float64) - reference.astype(np.float64)), initial=0.0))
            out.print(f"check  [bold]{escape(name)}[/bold]: largest difference with the batch model {largest:.3g}",
                      markup=True)
    problems = compare_outputs(out_names, results, expected, args.rtol, args.atol)
    return report_mismatches(out, problems, f"the stream matches the batch model on all {len(out_names)} output(s)")
