"""Verify a compiled model on an emulated microcontroller, bit for bit against the interpreter,
and measure it: flash, RAM (arena, state, context, peak stack), instructions or cycles."""
from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...errors import TractileError
from ...ops.matmul import MatMul
from ...passes.driver import run_passes
from ...patch import ModelPatch
from .. import generate, prepare
from .boards import Board, board_for
from .firmware import build_firmware, run_emulator, toolchain_available
from .harness import CALIBRATION


def _follows_another(op, flavour: str) -> bool:
    return isinstance(op, MatMul) and op.quant is not None and op.flavour != flavour


def with_flavour(model, flavour: str | None):
    """A copy of ``model`` whose TFLite integer ops follow ``flavour`` (as the target's C does)."""
    if flavour is None or not any(_follows_another(n.op, flavour) for n in model.nodes):
        return model

    def rewrite(model, node):
        if _follows_another(node.op, flavour):
            return ModelPatch.replace_single_op(model, node, node.inputs, dataclasses.replace(node.op, flavour=flavour))
        return None

    return run_passes(model, [("flavour", rewrite)])


def random_runs(facts, count: int, seed: int) -> list[list[np.ndarray]]:
    """``count`` input sets, random over each integer type's whole range (floats: standard normal)."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(count):
        values = []
        for fact in facts:
            shape = tuple(int(d) for d in fact.shape)
            if fact.dtype.is_float:
                values.append(rng.standard_normal(shape).astype(fact.dtype.np))
            else:
                info = np.iinfo(fact.dtype.np)
                values.append(rng.integers(int(info.min), int(info.max), shape, endpoint=True).astype(fact.dtype.np))
        runs.append(values)
    return runs


def check_fits(report: dict, board: Board) -> None:
    """Refuse, with the sizes, a model whose constants or planned RAM exceed the board's."""
    ram = report["arena_bytes"] + report["state_bytes"] + report["io_bytes"]
    problems = []
    if report["constants_bytes"] > board.flash_bytes:
        problems.append(f"its constants take {report['constants_bytes']} B of flash, the board has "
                        f"{board.flash_bytes} B")
    if ram > board.ram_bytes:
        problems.append(f"its arena ({report['arena_bytes']} B), state ({report['state_bytes']} B) and inputs and "
                        f"outputs ({report['io_bytes']} B) need {ram} B of RAM, the board has {board.ram_bytes} B")
    if problems:
        raise TractileError(f"the model does not fit {board.name} ({board.target.description}): "
                            + "; ".join(problems))


def _outputs_match(expected: list[np.ndarray], raw: bytes, tensors) -> tuple[bool, str]:
    offset = 0
    for index, want in enumerate(expected):
        size = want.nbytes
        got = np.frombuffer(raw[offset:offset + size], dtype=want.dtype).reshape(want.shape)
        offset += size
        if got.size != want.size:
            return False, f"output {index}: {got.size} values printed, {want.size} expected"
        if want.dtype.kind == "f":
            close = np.isclose(got, want, rtol=1e-5, atol=1e-6) | (np.isnan(got) & np.isnan(want))
            if not close.all():
                at = int(np.argmin(close.reshape(-1)))
                return False, (f"output {index}[{at}]: device {got.reshape(-1)[at]!r}, "
                               f"interpreter {want.reshape(-1)[at]!r}")
        elif not np.array_equal(got, want):
            at = int(np.argmax((got != want).reshape(-1)))
            return False, (f"output {index}[{at}]: device {int(got.reshape(-1)[at])}, interpreter "
                           f"{int(want.reshape(-1)[at])} ({int((got != want).sum())} of {want.size} values differ)")
    return True, ""


def verify(model, target: str, board: str | None = None, runs: int = 20, inputs: Sequence | None = None,
           seed: int = 0, opt: str = "size", name: str = "model", folder: str | Path | None = None,
           profile: bool = True, timeout: float = 120.0, max_ram: int | None = None,
           inputs_in_arena: bool = False) -> dict:
    """Build ``model`` for ``target``'s emulated board, run ``runs`` random inputs (after the given
    ``inputs``, a list of input lists) with one context carrying state, compare each output with
    the interpreter's, and measure. Returns the report (see docs/COMPILE.md). ``max_ram`` is a
    budget of planned RAM (:func:`~tractile.compile.budget.fit_ram_budget`: layers in bands
    when needed, a TractileError when it cannot be met). ``inputs_in_arena``: the inputs are planned
    in the arena and the firmware writes them there (``NAME_INPUTi_IN``)."""
    chosen = board_for(target, board)
    missing = toolchain_available(chosen)
    if missing:
        raise TractileError(f"verifying on {chosen.name} needs {', '.join(missing)} (Debian/Ubuntu: sudo apt-get "
                            "install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc-avr avr-libc "
                            "simavr)")
    typed = with_flavour(prepare(model), chosen.target.flavour)
    if max_ram is None:
        source = generate(typed, name=name, target=chosen.target, optimize=False, profile=profile,
                          inputs_in_arena=inputs_in_arena)
    else:
        from ..budget import fit_ram_budget

        source = fit_ram_budget(typed, max_ram, name, chosen.target, profile=profile,
                                inputs_in_arena=inputs_in_arena)
    check_fits(source.report, chosen)
    all_runs = [list(values) for values in (inputs or [])] + random_runs(source.program.inputs and
                                                                          [t.fact for t in source.program.inputs],
                                                                          runs, seed)
    state = typed.state()
    expected = [state.run(list(values)) for values in all_runs]
    work = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix=f"tractile-{chosen.name}-"))
    firmware = build_firmware(source, chosen, all_runs, work, opt, profile)
    if firmware.firmware_flash > chosen.flash_bytes:
        raise TractileError(f"the firmware takes {firmware.firmware_flash} B of flash, {chosen.name} has "
                            f"{chosen.flash_bytes} B")
    console = run_emulator(firmware, timeout)
    verified, first_difference = True, None
    for run, want in enumerate(expected):
        if run in console.failures:
            verified, first_difference = False, f"run {run}: invoke returned {console.failures[run]}"
            break
        ok, why = _outputs_match(want, console.outputs.get(run, b""), source.program.outputs)
        if not ok:
            verified, first_difference = False, f"run {run}: {why}"
            break
    per_tick = CALIBRATION / console.calibration_ticks if chosen.emulator == "qemu" and console.calibration_ticks \
        else 1.0
    counted = "cycles (Timer1 at the CPU clock, simavr)" if chosen.emulator == "simavr" \
        else "instructions (QEMU -icount, calibrated by a loop of known length)"
    report = source.report
    layers = []
    for step, code in enumerate(source.program.nodes):
        try:  # a chain in bands counts the MACs of its layers once (recomputed rows cost more per MAC)
            flops = sum(int(node.op.cost([typed.outlet_fact(o) for o in node.inputs])["flops"])
                        for node in (typed.nodes[i] for i in code.members or (code.node_id,)))
        except Exception:
            flops = None
        count = console.node_ticks.get(step, 0) * per_tick / max(len(all_runs), 1)
        macs = None if flops is None else int(flops) // 2
        layers.append({"node": code.node_id, "name": code.name, "op": code.op, "kernel": code.kernel,
                       "count": round(count), "macs": macs,
                       "per_mac": round(count / macs, 2) if macs else None})
    context = console.context_bytes - (8 * len(source.program.nodes) if profile else 0)
    return {
        "target": chosen.target.name,
        "board": chosen.name,
        "verified": verified,
        "inputs_checked": len(all_runs),
        "first_difference": first_difference,
        "flash_bytes": {"model": firmware.model_flash, "firmware": firmware.firmware_flash},
        "ram_bytes": {"arena": report["arena_bytes"], "state": report["state_bytes"], "context": context,
                      "io": report["io_bytes"], "stack_peak": console.stack_peak,
                      "total": context + report["io_bytes"] + console.stack_peak,
                      "firmware": firmware.firmware_ram + console.stack_peak},
        "inputs_in_arena": inputs_in_arena,
        "cycles_per_inference": round(console.ticks * per_tick / max(len(all_runs), 1)),
        "counted": counted,
        "stack_measured": "painted stack, checked after the first invoke",
        "ram_counted": f"total: context (arena{' with the inputs' if inputs_in_arena else ''} and state) + "
                       f"{'outputs' if inputs_in_arena else 'inputs and outputs'} + peak stack; firmware: every "
                       "static byte of the test firmware (.data, .bss) + peak stack",
        "layers": layers,
        "bands": [{"nodes": list(chain.nodes), "rows": chain.rows} for chain in source.program.chains],
        "folder": str(work),
    }
