"""Firmwares that survive a stack overflow: the stack lies below .data/.bss (the flipped layout),
so a firmware whose stack is too small on purpose faults below its stack instead of writing
over the model's context, and reports the overflow by name; AVR checks a canary after every
invoke. The stack a project links is what the firmware was measured to use, plus a margin."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import tractile
from tractile.compile import generate
from tractile.compile.targets import board_for
from tractile.compile.targets.firmware import FirmwareFault, toolchain_available
from tractile.compile.targets.project import write_project
from tractile.compile.targets.startup import stack_with_margin
from tractile.compile.targets.verify import verify

from ..conftest import shared_model


def needs_board(target: str, board: str | None = None):
    chosen = board_for(target, board)
    missing = toolchain_available(chosen)
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    return chosen


def symbols(elf) -> dict[str, int]:
    listed = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in listed.splitlines()) if len(parts) == 3}


@pytest.mark.parametrize("target,board", [("cortex-m4", None), ("cortex-m3", "lm3s6965evb"), ("cortex-m0", None)])
def test_a_stack_too_small_faults_below_it_and_is_reported(target, board, tmp_path):
    needs_board(target, board)
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    fits = verify(model, target, board=board, runs=1, folder=tmp_path / "fits", profile=False)
    ram = fits["ram_bytes"]
    assert fits["verified"] and ram["stack_linked"] > ram["stack_needed"] >= stack_with_margin(ram["stack_peak"])
    main_frame = ram["stack_needed"] - stack_with_margin(ram["stack_peak"])
    small = (max(main_frame, 0) + ram["stack_peak"] // 2) // 8 * 8  # room for main, half of what invoke needs
    with pytest.raises(FirmwareFault, match=rf"its stack \({small} B\) overflowed.*--stack") as stopped:
        verify(model, target, board=board, runs=1, folder=tmp_path / "small", profile=False, stack=small)
    (line,) = [line for line in stopped.value.console.splitlines() if line.startswith("x ")]
    found = re.fullmatch(r"x stack overflow sp=0x([0-9a-f]{8}) stack=0x([0-9a-f]{8})-0x([0-9a-f]{8})", line.strip())
    assert found, line
    sp, bottom, top = (int(v, 16) for v in found.groups())
    assert top - bottom == small and sp < bottom, "the fault was taken below the stack's region"
    placed = symbols(tmp_path / "small" / "firmware.elf")
    assert placed["_estack"] == top and placed["ctx"] >= top and placed["_sdata"] >= top, \
        "the context (arena and state) and every variable lie above the stack: an overflow cannot reach them"
    assert "o 0 " not in stopped.value.console, "the run stopped at the fault"


def test_avr_reports_an_overflow_its_canary_caught(tmp_path):
    needs_board("avr")
    model = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    fits = verify(model, "avr", runs=1, folder=tmp_path / "fits", profile=False)
    ram = fits["ram_bytes"]
    small = ram["stack_needed"] - stack_with_margin(ram["stack_peak"]) + ram["stack_peak"] // 2
    with pytest.raises(FirmwareFault, match=r"overflowed: the canary below it was found overwritten") as stopped:
        verify(model, "avr", runs=1, folder=tmp_path / "small", profile=False, stack=small)
    assert "x stack overflow" in stopped.value.console and "o 0 " not in stopped.value.console


def test_a_project_links_the_measured_stack_and_reports_an_overflow(tmp_path):
    board = needs_board("cortex-m4")
    model = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    source = generate(model, "sine", target=board.target)
    sample = [np.array([[17]], np.int8)]
    write_project(source, board, tmp_path / "measured", sample)
    script = (tmp_path / "measured" / "link.ld").read_text()
    stack = int(re.search(r"The stack \((\d+) B, (\d+) B measured in qemu", script).group(1))
    used = int(re.search(r"(\d+) B measured in qemu", script).group(1))
    sections = script.split("SECTIONS")[1]
    assert stack == stack_with_margin(used) and sections.index(".stack (NOLOAD)") < sections.index(".data :")
    done = subprocess.run(["make", "run"], cwd=tmp_path / "measured", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "x stack" not in done.stdout + done.stderr, done.stdout + done.stderr
    expected = done.stderr.strip().splitlines()[-1]  # the outputs, printed over semihosting
    assert expected.endswith(f": {int(model.run(sample)[0].ravel()[0])}"), expected  # the interpreter's
    # every stack from far below what invoke needs up to the measured peak either runs right or
    # reports the overflow: never a wrong output (below RAM, MPS2's bus reads zeros and drops
    # writes without faulting; only the MPU's guard there catches the first word past the stack)
    outcomes = []
    for stack in range(32, used, 32):
        write_project(source, board, tmp_path / f"small{stack}", sample, stack=stack)
        done = subprocess.run(["make", "run"], cwd=tmp_path / f"small{stack}", capture_output=True, text=True,
                              timeout=120)
        overflow = done.returncode != 0 and "x stack overflow sp=0x" in done.stdout + done.stderr
        assert overflow or (done.returncode == 0 and done.stderr.strip().splitlines()[-1] == expected), \
            (stack, done.stdout + done.stderr)
        outcomes.append(overflow)
    assert outcomes[0] and not outcomes[-1], outcomes


def test_the_console_parser_keeps_the_fault_line():
    from tractile.compile.targets.firmware import parse_console

    board = board_for("cortex-m4", None)
    run = parse_console("o 0 0 04\nx stack overflow sp=0x1ffffff0 stack=0x20000000-0x20000100\n", board)
    assert run.fault == "stack overflow sp=0x1ffffff0 stack=0x20000000-0x20000100" and not run.outputs
    with pytest.raises(tractile.TractileError, match="stopped before its end"):
        parse_console("o 0 0 04\n", board)
