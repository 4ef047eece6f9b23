"""Compare tractile with a reference engine: per output, and wire by wire to find where it diverges.

Wires are matched with the reference's tensors by name: the loaders label every wire
with the name the model file gives its value, and rewrites carry the label to the wire
that computes the same value. Fused nodes compute no intermediate values, so when the
optimized graph has lost wires that the decluttered one still has, the wire-by-wire
comparison runs on the decluttered graph (the report says which stage it used).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import TractileError
from ..graph import OutletId
from ..ops.io import Const, Source
from .reference import ReferenceRun, run_reference


@dataclass(frozen=True)
class Tolerance:
    """``|ours - reference| <= atol + rtol * |reference|`` element-wise; with ``exact``, integer
    and boolean values must be equal (floats keep the tolerance)."""

    rtol: float = 1e-4
    atol: float = 1e-4
    exact: bool = False

    def __str__(self) -> str:
        text = f"rtol {self.rtol:g}, atol {self.atol:g}"
        return text + ", integers exact" if self.exact else text


@dataclass
class Difference:
    """How one tractile value differs from the reference's value of the same name."""

    name: str
    shape: tuple
    dtype: str
    max_abs: float
    max_rel: float
    mismatches: int
    size: int
    ok: bool
    problem: str | None = None
    worst: dict | None = None

    def __str__(self) -> str:
        if self.problem:
            return self.problem
        text = f"max abs diff {self.max_abs:.3g}, max rel diff {self.max_rel:.3g}"
        if self.mismatches:
            text += f"; {self.mismatches} of {self.size} values beyond tolerance"
            if self.worst:
                text += (f", worst at {tuple(self.worst['index'])}: {self.worst['ours']:.6g} vs "
                         f"{self.worst['reference']:.6g}")
        return text


def difference(name: str, ours: Any, reference: Any, tolerance: Tolerance) -> Difference:
    """Compare one value with the reference's."""
    ours, reference = np.asarray(ours), np.asarray(reference)
    shape, dtype = tuple(ours.shape), str(ours.dtype)
    if ours.shape != reference.shape:
        return Difference(name, shape, dtype, float("inf"), float("inf"), ours.size, ours.size, False,
                          f"shape {shape} but the reference's is {tuple(reference.shape)}")
    if ours.dtype.kind in "OUSV" or reference.dtype.kind in "OUSV":
        same = ours.shape == reference.shape and bool(np.all(ours == reference))
        return Difference(name, shape, dtype, 0.0 if same else float("inf"), 0.0 if same else float("inf"),
                          0 if same else ours.size, ours.size, same, None if same else "values differ")
    a, b = ours.astype(np.float64), reference.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    equal = (a == b) | both_nan
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(equal, 0.0, np.abs(a - b))
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = np.where(diff == 0, 0.0, diff / np.abs(b))
    exact = tolerance.exact and ours.dtype.kind in "biu" and reference.dtype.kind in "biu"
    bad = ~equal if exact else ~(diff <= tolerance.atol + tolerance.rtol * np.abs(b)) & ~equal
    mismatches = int(bad.sum())
    worst = None
    if mismatches:
        index = np.unravel_index(int(np.argmax(np.where(bad, diff, -1.0))), diff.shape)
        worst = {"index": [int(i) for i in index], "ours": float(a[index]), "reference": float(b[index])}
    return Difference(name, shape, dtype, float(diff.max()) if diff.size else 0.0,
                      float(rel.max()) if rel.size else 0.0, mismatches, int(a.size), mismatches == 0, None, worst)


@dataclass
class Divergence:
    """The first node, in evaluation order, whose output differs from the reference."""

    node_id: int
    node_name: str
    op: str
    reference_op: str | None
    wire: str
    input_facts: list[str]
    inputs: list[dict]
    difference: Difference

    def __str__(self) -> str:
        inputs = "; ".join(self.input_facts) or "none"
        return (f'node #{self.node_id} "{self.node_name}" ({self.op}) output {self.wire!r}: {self.difference} '
                f"(inputs: {inputs})")


@dataclass
class CompareReport:
    """The outcome of :func:`compare_with_reference`."""

    engine: str
    tolerance: Tolerance
    outputs: list[Difference]
    per_node_stage: str | None = None
    stage_reason: str | None = None
    wires_compared: int = 0
    divergence: Divergence | None = None
    unmatched_outputs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stream: dict | None = None
    compiled: bool = False

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.outputs) and self.divergence is None and not self.unmatched_outputs

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tolerance"] = asdict(self.tolerance)
        data["ok"] = self.ok
        return data


def output_differences(model, ours: list, reference: ReferenceRun,
                       tolerance: Tolerance) -> tuple[list[Difference], list[str]]:
    """The difference of every output (matched by name, else by position), and the unmatched ones."""
    names = model.output_names()
    theirs = reference.outputs
    if not all(n in theirs for n in names) and len(reference.output_names) == len(names):
        theirs = {ours_name: theirs.get(ref_name) for ours_name, ref_name in zip(names, reference.output_names)}
    differences, missing = [], []
    for name, value in zip(names, ours):
        if theirs.get(name) is None:
            missing.append(name)
            continue
        differences.append(difference(name, value, theirs[name], tolerance))
    return differences, missing


def comparable_wires(model, names: set[str]) -> list[tuple[int, OutletId, str]]:
    """(node, wire, name) of every computed wire whose label the reference knows, in evaluation order."""
    found = []
    for node_id in model.eval_order():
        node = model.nodes[node_id]
        if isinstance(node.op, (Source, Const)):
            continue
        for slot in range(len(node.outputs)):
            label = model.outlet_labels.get(OutletId(node_id, slot))
            if label is not None and label in names:
                found.append((node_id, OutletId(node_id, slot), label))
    return found


def choose_stage(decluttered, optimized, names: set[str]) -> tuple[str, Any, str]:
    """The graph to compare wire by wire: the optimized one unless optimizing lost wires."""
    kept = {label for _, _, label in comparable_wires(optimized, names)}
    before = {label for _, _, label in comparable_wires(decluttered, names)}
    lost = sorted(before - kept)
    if not lost:
        return "optimize", optimized, "the optimized graph keeps every wire the decluttered one has"
    shown = ", ".join(lost[:3]) + (", ..." if len(lost) > 3 else "")
    return ("declutter", decluttered,
            f"optimizing fused {len(lost)} intermediate value(s) away ({shown}), so the decluttered graph "
            "was compared")


def first_divergence(model, reference: ReferenceRun, inputs: list[np.ndarray],
                     tolerance: Tolerance) -> tuple[Divergence | None, int]:
    """Compare every labelled wire of ``model`` with the reference; the first that differs."""
    theirs = reference.values
    wires = comparable_wires(model, set(theirs))
    if not wires:
        return None, 0
    values = model.plan([w for _, w, _ in wires]).state().run(list(inputs))
    ours = {wire: value for (_, wire, _), value in zip(wires, values)}
    labels = {wire: label for _, wire, label in wires}
    for count, (node_id, wire, label) in enumerate(wires, start=1):
        found = difference(label, ours[wire], theirs[label], tolerance)
        if found.ok:
            continue
        node = model.nodes[node_id]
        facts = [f"{model.outlet_label(o)}: {model.outlet_fact(o)}" for o in node.inputs]
        upstream = []
        for outlet in node.inputs:
            if outlet in labels:
                agreed = difference(labels[outlet], ours[outlet], theirs[labels[outlet]], tolerance)
                upstream.append({"wire": labels[outlet], "max_abs": agreed.max_abs, "ok": agreed.ok})
        return Divergence(node.id, node.name, node.op.name, reference.producers.get(label), label, facts,
                          upstream, found), count
    return None, len(wires)


def fixed_inputs(model) -> dict[str, np.ndarray]:
    """Inputs of the file that the model was specialised for (``with_input_values``): the
    reference engine still needs them."""
    return dict(model.properties.get("input_values", {}))


def compare_with_reference(decluttered, path: str, engine: str, inputs: list[np.ndarray],
                           tolerance: Tolerance = Tolerance(), per_node: bool = False,
                           optimized=None, runner=None) -> CompareReport:
    """Compare a decluttered tractile model of ``path`` (and its optimized form) with ``engine``.

    Outputs come from the optimized model, the one users run. With ``per_node``, every
    intermediate value is compared too and the first node that diverges is reported.
    ``runner`` (inputs -> outputs) replaces the optimized model's run, e.g. a compiled model's
    (per-node values still come from the interpreter).
    """
    optimized = decluttered.optimize() if optimized is None else optimized
    inputs = list(inputs)
    named = {**fixed_inputs(optimized), **dict(zip(optimized.input_names(), inputs))}
    notes = []
    try:
        reference = run_reference(engine, path, named, every_value=per_node)
    except TractileError as error:
        if not per_node:
            raise
        reference = run_reference(engine, path, named)
        notes.append(f"no per-node comparison: exposing every intermediate value failed ({error})")
        per_node = False
    reference.notes[:0] = notes
    ours = runner(inputs) if runner is not None else optimized.plan().state().run(inputs)
    outputs, missing = output_differences(optimized, ours, reference, tolerance)
    report = CompareReport(engine, tolerance, outputs, unmatched_outputs=missing, notes=list(reference.notes),
                           compiled=runner is not None)
    if per_node:
        names = set(reference.values)
        stage, model, reason = choose_stage(decluttered, optimized, names)
        report.per_node_stage, report.stage_reason = stage, reason
        report.divergence, report.wires_compared = first_divergence(model, reference, inputs, tolerance)
    return report


def stream_through(pulsed, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Push whole ``inputs`` through a pulsed model chunk by chunk; the outputs without their delay."""
    from ..dim import eval_dim

    streams = pulsed.input_streams
    found = [(s.axis, v.shape[s.axis]) for s, v in zip(streams, inputs) if s is not None]
    if not found:
        raise TractileError("no input of the pulsed model is streamed")
    axis, length = found[0]
    pulse = pulsed.pulse

    def chunk(start: int, stop: int) -> list[np.ndarray]:
        index = (slice(None),) * axis + (slice(start, stop),)
        return [v[index] if s is not None else v for v, s in zip(inputs, streams)]

    state = pulsed.start()
    pieces: list[list[np.ndarray]] = [[] for _ in pulsed.output_streams]
    for k in range(length // pulse):
        for piece, value in zip(pieces, state.push(chunk(k * pulse, (k + 1) * pulse))):
            piece.append(value)
    tail = state.finish(chunk(length - length % pulse, length) if length % pulse else None)
    results = []
    for piece, last, stream in zip(pieces, tail, pulsed.output_streams):
        joined = np.concatenate(piece + [last], axis=stream.axis)
        end = stream.delay + eval_dim(stream.dim, {pulsed.symbol: length})
        results.append(joined[(slice(None),) * stream.axis + (slice(stream.delay, end),)])
    return results


def compare_streaming(optimized, path: str, engine: str, inputs: list[np.ndarray], pulsed,
                      tolerance: Tolerance = Tolerance()) -> CompareReport:
    """Stream whole ``inputs`` through ``pulsed`` (the streaming form of ``optimized``) and compare
    what it emits, delay dropped, with the reference engine run on the whole inputs."""
    inputs = list(inputs)
    reference = run_reference(engine, path, {**fixed_inputs(optimized), **dict(zip(optimized.input_names(), inputs))})
    ours = stream_through(pulsed, inputs)
    outputs, missing = output_differences(optimized, ours, reference, tolerance)
    report = CompareReport(engine, tolerance, outputs, unmatched_outputs=missing, notes=list(reference.notes))
    report.stream = {"symbol": pulsed.symbol, "pulse": pulsed.pulse, "delays": pulsed.delays}
    return report


__all__ = ["Tolerance", "Difference", "Divergence", "CompareReport", "difference", "output_differences",
           "comparable_wires", "choose_stage", "first_divergence", "compare_with_reference", "stream_through",
           "compare_streaming"]
