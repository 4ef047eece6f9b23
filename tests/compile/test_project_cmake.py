"""``--project DIR --build-system cmake``: the model as a CMake static library, its host example
and its firmware built with Debian's cmake, run, and their outputs equal to the interpreter's;
the library taken by another CMake project through add_subdirectory."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tractile.cli.main import main as cli_main
from tractile.compile.targets.verify import random_runs, with_flavour
from tractile.formats.tflite import load_tflite

from ..conftest import shared_model
from .test_targets import needs_board


def needs_cmake() -> None:
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed (apt-get install cmake)")


def cmake(*args: str, cwd=None) -> str:
    done = subprocess.run(["cmake", *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def printed_values(text: str, name: str) -> list[int]:
    """The values main.c printed after the output's name (``NAME: v v v``)."""
    line = next(line for line in text.replace(".\n", "\n").splitlines() if line.startswith(name + ":"))
    return [int(v) for v in line[len(name) + 1:].split()]


def expected(path, seed: int, flavour: str = "micro") -> np.ndarray:
    model = with_flavour(load_tflite(path).into_optimized(), flavour)
    sample = random_runs(model.input_facts, 1, seed)[0]
    return model.run(sample)[0].reshape(-1)


def test_cmake_project_builds_the_library_and_the_host_example(tmp_path):
    needs_cmake()
    path = shared_model("tflite/micro_speech_quantized.tflite")
    project = tmp_path / "project"
    assert cli_main(["compile", str(path), "--target", "cortex-m4", "--project", str(project),
                     "--build-system", "cmake", "--seed", "5"]) == 0
    assert {"CMakeLists.txt", "main.c", "micro_speech_quantized.c", "micro_speech_quantized.h"} <= \
        {p.name for p in project.iterdir()}
    assert (project / "cmake" / "arm-none-eabi.cmake").exists() and not (project / "Makefile").exists()
    cmake("-S", str(project), "-B", str(tmp_path / "build"))
    output = cmake("--build", str(tmp_path / "build"), "--target", "run")
    assert printed_values(output, "labels_softmax") == expected(path, 5).tolist()
    assert (tmp_path / "build" / "libmicro_speech_quantized.a").exists()

    # another project takes the library as it is
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(app C)\n"
        f'add_subdirectory("{project}" model)\n'
        "add_executable(app app.c)\ntarget_link_libraries(app PRIVATE micro_speech_quantized)\n")
    (app / "app.c").write_text(
        '#include <stdio.h>\n#include "micro_speech_quantized.h"\n'
        "static micro_speech_quantized_ctx ctx;\n"
        "int main(void) {\n"
        "  static int8_t x[MICRO_SPEECH_QUANTIZED_INPUT0_COUNT];\n"
        "  static int8_t y[MICRO_SPEECH_QUANTIZED_OUTPUT0_COUNT];\n"
        "  int i;\n  micro_speech_quantized_init(&ctx);\n"
        "  if (micro_speech_quantized_invoke(&ctx, x, y) != 0) return 1;\n"
        "  for (i = 0; i < MICRO_SPEECH_QUANTIZED_OUTPUT0_COUNT; ++i) printf(\"%d \", y[i]);\n"
        "  return 0;\n}\n")
    cmake("-S", str(app), "-B", str(tmp_path / "app-build"))
    cmake("--build", str(tmp_path / "app-build"))
    done = subprocess.run([str(tmp_path / "app-build" / "app")], capture_output=True, text=True, timeout=60)
    model = with_flavour(load_tflite(path).into_optimized(), "micro")
    zeros = np.zeros(tuple(model.input_fact(0).shape), np.int8)
    assert done.returncode == 0 and [int(v) for v in done.stdout.split()] == model.run([zeros])[0].reshape(-1).tolist()
    assert not (tmp_path / "app-build" / "model" / "micro_speech_quantized_example").exists()


def test_cmake_project_firmware_runs_in_qemu(tmp_path):
    needs_cmake()
    needs_board("cortex-m3")
    path = shared_model("tflite/hello_world_int8.tflite")
    project = tmp_path / "project"
    assert cli_main(["compile", str(path), "--target", "cortex-m3", "--project", str(project),
                     "--build-system", "cmake", "--seed", "3"]) == 0
    build = tmp_path / "build-arm"
    cmake("-S", str(project), "-B", str(build), "-DCMAKE_TOOLCHAIN_FILE=cmake/arm-none-eabi.cmake")
    output = cmake("--build", str(build), "--target", "run")
    assert (build / "firmware.elf").exists()
    assert printed_values(output, "StatefulPartitionedCall:0") == expected(path, 3).tolist()


def test_host_target_project_with_make(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    path = shared_model("tflite/hello_world_int8.tflite")
    project = tmp_path / "project"
    assert cli_main(["compile", str(path), "--project", str(project), "--seed", "4"]) == 0
    done = subprocess.run(["make", "run"], cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert printed_values(done.stdout, "StatefulPartitionedCall:0") == expected(path, 4, "reference").tolist()
