"""Verify a compiled model on an emulated microcontroller, bit for bit against the interpreter,
and measure it: flash, RAM (arena, state, context, peak stack), instructions or cycles."""
from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...errors import TractileError
from ...model import InferenceModel, TypedModel
from ...ops.matmul import MatMul
from ...passes.driver import run_passes
from ...patch import ModelPatch
from .. import generate, prepare
from .boards import Board, board_for
from .firmware import build_firmware, run_emulator, toolchain_available
from .harness import CALIBRATION
from .startup import stack_with_margin

#: the compiler's option for each ``opt``
OPT_NAMES = {"speed": "-O2", "size": "-Os"}


def _follows_another(op, flavour: str) -> bool:
    return isinstance(op, MatMul) and op.quant is not None and op.flavour not in (flavour, "onnxruntime")


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
           inputs_in_arena: bool = False, compare_unconstrained: bool = True, stack: int | None = None,
           both_opts: bool = False) -> dict:
    """Build ``model`` for ``target``'s emulated board, run ``runs`` random inputs (after the given
    ``inputs``, a list of input lists) with one context carrying state, compare each output with
    the interpreter's, and measure. Returns the report (see docs/COMPILE.md). ``max_ram`` is a
    budget of planned RAM (:func:`~tractile.compile.budget.fit_ram_budget`: layers by rows or in
    bands when needed, a TractileError when it cannot be met); with ``compare_unconstrained``, the
    model without the budget is run too (one input) and its instructions and RAM reported beside.
    ``inputs_in_arena``: the inputs are planned in the arena and the firmware writes them there
    (``NAME_INPUTi_IN``). ``stack``: bytes of stack the firmware links (None: all the RAM it leaves
    free); an overflow stops it and raises a :class:`~.firmware.FirmwareFault` saying so.
    ``both_opts``: the firmware is also built (not run) with the other optimization, and the flash of
    the deployable firmware reported for -O2 and -Os."""
    typed, source, chosen = build_source(model, target, board, name, profile, max_ram, inputs_in_arena)
    return verify_source(source, typed, chosen, runs, inputs, seed, opt, folder, timeout,
                         compare_unconstrained=compare_unconstrained and max_ram is not None, stack=stack,
                         both_opts=both_opts)


def build_source(model, target: str, board: str | None = None, name: str = "model", profile: bool = True,
                 max_ram: int | None = None, inputs_in_arena: bool = False):
    """(the oracle, the generated source, the board) as :func:`verify` builds them: the tool chain
    checked first, ``max_ram`` met by :func:`~tractile.compile.budget.fit_ram_budget`. The oracle is
    the model as the user loaded it, run as the interpreter runs it (decluttered and optimized) in
    the target's integer flavour, without compile's own rewrites (channels last, dead channels
    folded away): a wrong rewrite shows as a difference instead of being in the expected outputs too."""
    chosen = board_for(target, board)
    missing = toolchain_available(chosen)
    if missing:
        raise TractileError(f"verifying on {chosen.name} needs {', '.join(missing)} (Debian/Ubuntu: sudo apt-get "
                            "install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc-avr avr-libc "
                            "simavr gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc)")
    original = model.into_optimized() if isinstance(model, (InferenceModel, TypedModel)) else model
    typed = with_flavour(prepare(original), chosen.target.flavour)
    if max_ram is None:
        source = generate(typed, name=name, target=chosen.target, optimize=False, profile=profile,
                          inputs_in_arena=inputs_in_arena)
    else:
        from ..budget import fit_ram_budget

        source = fit_ram_budget(typed, max_ram, name, chosen.target, profile=profile,
                                inputs_in_arena=inputs_in_arena)
    return with_flavour(original, chosen.target.flavour), source, chosen


def verify_source(source, typed, board: Board, runs: int = 20, inputs: Sequence | None = None, seed: int = 0,
                  opt: str = "size", folder: str | Path | None = None, timeout: float = 120.0,
                  compare_unconstrained: bool = False, stack: int | None = None, both_opts: bool = False) -> dict:
    """:func:`verify` for a source already generated for ``board`` (:func:`build_source`) from
    ``typed``, the oracle that gives the expected outputs (:func:`build_source`'s: the model as
    loaded, in the target's flavour, not as compile rewrote it)."""
    chosen = board
    profile, inputs_in_arena = source.program.profile, source.program.inputs_in_arena
    check_fits(source.report, chosen)
    all_runs = [list(values) for values in (inputs or [])] + random_runs(source.program.inputs and
                                                                          [t.fact for t in source.program.inputs],
                                                                          runs, seed)
    state = typed.state()
    expected = [state.run(list(values)) for values in all_runs]
    work = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix=f"tractile-{chosen.name}-"))
    firmware = build_firmware(source, chosen, all_runs, work, opt, profile, stack)
    if firmware.firmware_flash > chosen.flash_bytes:
        raise TractileError(f"the firmware takes {firmware.firmware_flash} B of flash, {chosen.name} has "
                            f"{chosen.flash_bytes} B")
    deployable = _deployable_flash(source, typed, chosen, all_runs[:1], work, stack, opt, firmware) if both_opts \
        else {}
    console = run_emulator(firmware, timeout)
    unconstrained = None
    if compare_unconstrained and source.report.get("budget", {}).get("schedule"):
        unconstrained = _unconstrained(typed, source.name, chosen, all_runs[:1], work / "unconstrained", opt,
                                       timeout, inputs_in_arena)
    verified, first_difference = True, None
    for run, want in enumerate(expected):
        if run in console.failures:
            verified, first_difference = False, f"run {run}: invoke returned {console.failures[run]}"
            break
        ok, why = _outputs_match(want, console.outputs.get(run, b""), source.program.outputs)
        if not ok:
            verified, first_difference = False, f"run {run}: {why}"
            break
    per_tick = _per_tick(console, chosen)
    counted = "cycles (Timer1 at the CPU clock, simavr)" if chosen.emulator == "simavr" \
        else "instructions (QEMU -icount, calibrated by a loop of known length)"
    report = source.report
    layers = []
    for step, code in enumerate(source.program.nodes):
        # a chain in bands or rows counts the MACs of its layers once (recomputed rows cost more per MAC)
        macs = report["nodes"][step]["macs"]
        count = console.node_ticks.get(step, 0) * per_tick / max(len(all_runs), 1)
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
        "flash_bytes": {"model": firmware.model_flash, "firmware": firmware.firmware_flash,
                        "inputs": firmware.inputs_flash, "deployable": firmware.deployable_flash,
                        "deployable_by_opt": deployable},
        "code_bytes": firmware.code_bytes,
        "ram_bytes": {"arena": report["arena_bytes"], "state": report["state_bytes"], "context": context,
                      "io": report["io_bytes"], "stack_peak": console.stack_peak,
                      "stack_linked": firmware.stack_bytes, "stack_needed": stack_with_margin(console.stack_used),
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
        "budget": report.get("budget"),
        "schedule": report.get("budget", {}).get("schedule", []),
        "unconstrained": unconstrained,
        "folder": str(work),
    }


def _deployable_flash(source, typed, board: Board, runs, work: Path, stack: int | None, opt: str,
                      firmware) -> dict[str, int]:
    """Flash of the deployable firmware (without the verification inputs) built with -O2 and -Os:
    without the per-layer clock too when the verified firmware profiles and can be generated again
    without it (a model under a RAM budget keeps it)."""
    plain = source
    if source.program.profile and not source.report.get("budget"):
        plain = generate(typed, name=source.name, target=board.target, optimize=False,
                         inputs_in_arena=source.program.inputs_in_arena)
    return {OPT_NAMES[each]: firmware.deployable_flash if each == opt and plain is source else build_firmware(
        plain, board, runs, work / f"flash{OPT_NAMES[each]}", each, plain.program.profile, stack).deployable_flash
        for each in ("speed", "size")}


def _per_tick(console, board: Board) -> float:
    """Instructions (QEMU, calibrated) or cycles (simavr) per clock tick of the firmware."""
    return CALIBRATION / console.calibration_ticks if board.emulator == "qemu" and console.calibration_ticks else 1.0


def _unconstrained(typed, name: str, board: Board, runs, folder: Path, opt: str, timeout: float,
                   inputs_in_arena: bool) -> dict:
    """Instructions and RAM of the model without a budget (None figures when it does not fit the board)."""
    source = generate(typed, name=name, target=board.target, optimize=False, inputs_in_arena=inputs_in_arena)
    try:
        check_fits(source.report, board)
        firmware = build_firmware(source, board, runs, folder, opt, False)
    except TractileError as why:
        return {"cycles_per_inference": None, "ram_total": None, "why": str(why)}
    console = run_emulator(firmware, timeout)
    return {"cycles_per_inference": round(console.ticks * _per_tick(console, board) / max(len(runs), 1)),
            "ram_total": console.context_bytes + source.report["io_bytes"] + console.stack_peak,
            "planned_ram": source.report["arena_bytes"] + source.report["state_bytes"] + source.report["io_bytes"]}
