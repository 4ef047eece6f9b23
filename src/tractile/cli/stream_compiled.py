"""``tractile stream --compiled``: push chunks through the streaming form compiled to C."""
from __future__ import annotations

import time

import numpy as np

from ..dim import TDim
from .common import escape, report_mismatches, summarize
from .run import compare_outputs


def stream_compiled(out, args, model, pulsed, inputs: list[np.ndarray], axis: int, length: int,
                    reference=None) -> int:
    """Push ``inputs`` through ``pulsed`` compiled, padded with zero frames until every output
    frame is out; print latencies, state size and (with --check) the comparison with the batch
    model, or with ``reference()`` (the expected outputs) when given."""
    from .stream import _latency_table

    compiled = pulsed.compile(name="stream")
    pulse, symbol = pulsed.pulse, pulsed.symbol
    delay_in = max((s.delay * pulse // max(s.pulse, 1) for s in pulsed.output_streams), default=0)
    chunks = -(-(length + delay_in) // pulse)
    streams = pulsed.input_streams
    padded = []
    for value, stream in zip(inputs, streams):
        if stream is None:
            padded.append(value)
            continue
        widths = [(0, 0)] * value.ndim
        widths[stream.axis] = (0, chunks * pulse - value.shape[stream.axis])
        padded.append(np.pad(value, widths))
    out.print(f"state  {compiled.report['state_bytes']} bytes of ring buffers and recurrent state in the context; "
              f"arena {compiled.report['arena_bytes']} bytes (compiled)")
    pieces: list[list[np.ndarray]] = [[] for _ in pulsed.output_streams]
    latencies = []
    context = compiled.state()
    for k in range(chunks):
        index = (slice(None),) * axis + (slice(k * pulse, (k + 1) * pulse),)
        chunk = [v[index] if s is not None else v for v, s in zip(padded, streams)]
        start = time.perf_counter()
        outputs = context.run(chunk)
        latencies.append(time.perf_counter() - start)
        for piece, value in zip(pieces, outputs):
            piece.append(value)
    out.print(_latency_table(latencies, pulse, args.frame_ms))
    results = []
    for piece, stream in zip(pieces, pulsed.output_streams):
        frames = stream.dim.eval({symbol: length}) if isinstance(stream.dim, TDim) else stream.dim
        joined = np.concatenate(piece, axis=stream.axis)
        results.append(joined[(slice(None),) * stream.axis + (slice(stream.delay, stream.delay + frames),)])
    names = pulsed.model.output_names()
    for name, value in zip(names, results):
        out.print(f"output [bold]{escape(name)}[/bold]: {summarize(value)}", markup=True)
    if args.save_output:
        np.savez(args.save_output, **dict(zip(names, results)))
    if not args.check:
        return 0
    if reference is not None:
        expected = reference()
    else:
        batch = model.run(dict(zip(model.input_names(), inputs)))
        expected = [batch[name] for name in names]
    for name, value, reference in zip(names, results, expected):
        if value.shape == reference.shape and value.dtype.kind in "fiub":
            largest = float(np.max(np.abs(value.astype(np.float64) - reference.astype(np.float64)), initial=0.0))
            out.print(f"check  [bold]{escape(name)}[/bold]: largest difference with the batch model {largest:.3g}",
                      markup=True)
    problems = compare_outputs(names, results, expected, args.rtol, args.atol)
    return report_mismatches(out, problems, f"the compiled stream matches the batch model on all {len(names)} "
                                            "output(s)")
