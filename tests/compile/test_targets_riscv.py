"""The riscv32 target (RV32IMC, picolibc) in QEMU's virt board: the shared small models bit for bit
against the interpreter, instructions counted, the stack below the data under a PMP guard, and
the flash of the deployable firmware apart from the verification inputs."""
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


def needs_riscv():
    board = board_for("riscv32")
    missing = toolchain_available(board)
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (make toolchains installs them)")
    return board


def test_sine_is_bit_exact_with_every_input_and_reports_flash_without_the_inputs(tmp_path):
    needs_riscv()
    model = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    every = [[np.array([[v]], np.int8)] for v in range(-128, 128)]
    report = verify(model, "riscv32", runs=4, inputs=every, folder=tmp_path, both_opts=True)
    assert report["verified"], report["first_difference"]
    assert report["board"] == "virt-rv32" and report["inputs_checked"] == 260
    flash = report["flash_bytes"]
    assert flash["inputs"] == 260, "one int8 byte per input baked in"
    assert flash["deployable"] == flash["firmware"] - flash["inputs"] and flash["model"] < flash["deployable"]
    assert set(flash["deployable_by_opt"]) == {"-O2", "-Os"}
    assert all(flash["model"] < size < flash["deployable"] + 4096 for size in flash["deployable_by_opt"].values())
    assert report["ram_bytes"]["arena"] == 32 and report["ram_bytes"]["stack_peak"] > 0
    # a dense 1-16-16-1 network: a few thousand instructions, counted by QEMU
    assert 1_000 < report["cycles_per_inference"] < 20_000


def test_micro_speech_is_bit_exact(tmp_path):
    needs_riscv()
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    report = verify(model, "riscv32", runs=3, folder=tmp_path, opt="speed")
    assert report["verified"], report["first_difference"]
    assert report["ram_bytes"]["arena"] == 4032
    layers = {layer["op"] for layer in report["layers"]}
    assert len(report["layers"]) >= 3 and layers
    assert sum(layer["count"] for layer in report["layers"]) <= report["cycles_per_inference"] * 1.05


def test_a_stack_too_small_faults_in_the_pmp_guard_and_is_reported(tmp_path):
    needs_riscv()
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    fits = verify(model, "riscv32", runs=1, folder=tmp_path / "fits", profile=False)
    ram = fits["ram_bytes"]
    assert fits["verified"] and ram["stack_linked"] > ram["stack_needed"]
    main_frame = ram["stack_needed"] - stack_with_margin(ram["stack_peak"])
    small = (max(main_frame, 0) + ram["stack_peak"] // 2) // 16 * 16  # room for main, half of what invoke needs
    with pytest.raises(FirmwareFault, match=rf"its stack \({small} B\) overflowed.*--stack") as stopped:
        verify(model, "riscv32", runs=1, folder=tmp_path / "small", profile=False, stack=small)
    (line,) = [line for line in stopped.value.console.splitlines() if line.startswith("x ")]
    found = re.match(r"x stack overflow sp=0x([0-9a-f]{8}) stack=0x([0-9a-f]{8})-0x([0-9a-f]{8}) mcause=0x0000000(\w)",
                     line.strip())
    assert found, line
    sp, bottom, top = (int(v, 16) for v in found.groups()[:3])
    assert top - bottom == small and sp < bottom and found.group(4) == "7", "a store access fault in the guard"
    assert "o 0 " not in stopped.value.console, "the run stopped at the fault"


def test_a_riscv_project_builds_and_runs_with_make(tmp_path):
    board = needs_riscv()
    model = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    source = generate(model, "sine", target=board.target)
    x = np.array([[17]], np.int8)
    write_project(source, board, tmp_path, [x])
    done = subprocess.run(["make", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    want = int(model.run([x])[0][0, 0])
    printed = done.stdout + done.stderr  # QEMU writes the semihosting console to stderr
    assert re.search(rf":\s+{want}\s*$", printed, re.MULTILINE), printed
