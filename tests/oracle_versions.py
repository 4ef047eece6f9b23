"""Print the versions of the test oracles and tool chains (CI's first step), one per line."""
from __future__ import annotations

import importlib.metadata
import platform
import shutil
import subprocess

PACKAGES = ("numpy", "onnx", "onnxruntime", "ai-edge-litert", "tflite-micro", "tflite", "torch", "ml_dtypes",
            "tensorflow-cpu", "tf-keras", "tensorboard", "ray", "soundfile", "silero-vad", "onnxscript", "pytest")
TOOLS = (("cc", "--version"), ("gcc", "--version"), ("clang", "--version"), ("arm-none-eabi-gcc", "--version"),
         ("qemu-system-arm", "--version"), ("avr-gcc", "--version"), ("simavr", None),
         ("chromium", "--version"))


def tool_version(command: str, flag: str | None) -> str:
    """The first line a tool prints of its version (``flag`` None: ask dpkg, for tools without one)."""
    path = shutil.which(command)
    if path is None:
        return "not installed"
    argv = [path, flag] if flag else ["dpkg-query", "-W", "-f", "${Package} ${Version}", command]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"did not answer ({error})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else "?"


def main() -> None:
    print(f"python {platform.python_version()} on {platform.machine()}")
    for package in PACKAGES:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        print(f"{package:16} {version}")
    for command, flag in TOOLS:
        print(f"{command:16} {tool_version(command, flag)}")


if __name__ == "__main__":
    main()
