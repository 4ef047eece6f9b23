"""TFLite Micro's arena for a TFLite model, measured by running it in the ``tflite-micro``
package's interpreter (its recording allocator), for the compile report to show beside
tractile's own plan. TFLite Micro runs in a child process: its allocator prints from C++,
and a crash in it must not end the caller."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

#: runs the model once on zeros, then prints the recording allocator's figures
CHILD = """
import sys
import numpy as np
from tflite_micro.python.tflite_micro import runtime
interpreter = runtime.Interpreter.from_file(sys.argv[1])
index = 0
while True:
    try:
        details = interpreter.get_input_details(index)
    except IndexError:
        break
    interpreter.set_input(np.zeros(tuple(details["shape"]), details["dtype"]), index)
    index += 1
interpreter.invoke()
sys.stdout.flush()
interpreter.print_allocations()
"""


def tflite_micro_arena(path: str | os.PathLike, timeout: float = 300.0) -> dict:
    """``{"head": B, "total": B}``: the bytes TFLite Micro plans for the model's tensors (the
    arena's head, comparable with tractile's arena; it holds the inputs and outputs too) and its
    arena used in all (with its persistent buffers and structures: ``arena_used_bytes``); or
    ``{"absent": why}`` when it cannot be measured."""
    if importlib.util.find_spec("tflite_micro") is None:
        return {"absent": "the tflite-micro package is not installed (pip install tflite-micro)"}
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, os.fspath(path)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"absent": f"TFLite Micro did not finish in {timeout:.0f} s"}
    text = done.stdout + done.stderr
    head = re.search(r"allocation head (\d+) bytes", text)
    total = re.search(r"allocation total (\d+) bytes", text)
    if done.returncode != 0 or head is None or total is None:
        last = [line for line in text.strip().splitlines() if line.strip()][-1:] or [f"status {done.returncode}"]
        return {"absent": f"TFLite Micro could not run the model ({last[0][:200]})"}
    return {"head": int(head.group(1)), "total": int(total.group(1))}


__all__ = ["tflite_micro_arena"]
