"""Drive an MLPerf Tiny firmware over its serial port as the benchmark's runner does.

The runner sends commands ending in ``%`` (``name``, ``profile``, ``db load N``, ``db HH...``,
``infer N W``, ``results``) and reads the device's ``m-...`` lines up to ``m-ready``. Here the
serial port is the emulated board's UART0, on QEMU's standard input and output
(:func:`~.mlperf.qemu_serial_command`).
"""
from __future__ import annotations

import queue
import re
import subprocess
import threading
from pathlib import Path

import numpy as np

from ...errors import TractileError
from .boards import Board
from .firmware import require_tool
from .mlperf import qemu_serial_command

#: bytes per ``db`` command: 64 hex digits, within the parser's 80-character command buffer
CHUNK = 32


class SerialRunner:
    """A firmware running in QEMU, its UART0 driven like the benchmark's runner (a context manager)."""

    def __init__(self, board: Board, elf: str | Path, timeout: float = 60.0):
        require_tool(board.emulator_tool)
        self.timeout = timeout
        self.transcript: list[str] = []
        self.process = subprocess.Popen(qemu_serial_command(board, str(elf)), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.banner = self._until_ready()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.put(raw.decode("ascii", "replace").strip())
        self.lines.put(None)

    def _until_ready(self) -> list[str]:
        got: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=self.timeout)
            except queue.Empty:
                raise TractileError(f"the firmware did not answer in {self.timeout:.0f} s; it printed:\n"
                                    + "\n".join(self.transcript[-20:])) from None
            if line is None:
                stderr = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise TractileError("the firmware stopped; it printed:\n" + "\n".join(self.transcript[-20:])
                                    + "\n" + stderr[-2000:])
            self.transcript.append(line)
            if line == "m-ready":
                return got
            if line:
                got.append(line)

    def command(self, text: str) -> list[str]:
        """Send ``text%``; the lines the device printed before ``m-ready``."""
        assert self.process.stdin is not None
        self.transcript.append(f"> {text}%")
        self.process.stdin.write(f"{text}%".encode("ascii"))
        self.process.stdin.flush()
        return self._until_ready()

    def load(self, data: bytes) -> list[str]:
        """``db load N`` then ``db HH...`` in chunks: the runner's way of sending an input."""
        got = self.command(f"db load {len(data)}")
        for start in range(0, len(data), CHUNK):
            got += self.command("db " + data[start:start + CHUNK].hex())
        return got

    def infer(self, count: int = 1, warmup: int = 0) -> list[str]:
        return self.command(f"infer {count} {warmup}")

    def results(self) -> list[float]:
        return parse_results(self.command("results"))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> SerialRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def parse_results(lines: list[str]) -> list[float]:
    """The values of the last ``m-results-[...]`` line."""
    found = [m for m in (re.fullmatch(r"m-results-\[(.*)\]", line) for line in lines) if m]
    if not found:
        raise TractileError("no m-results line in:\n" + "\n".join(lines))
    return [float(v) for v in found[-1].group(1).split(",") if v]


def laps_us(lines: list[str]) -> list[int]:
    """The ``m-lap-us-N`` timestamps printed."""
    return [int(m.group(1)) for m in (re.fullmatch(r"m-lap-us-(\d+)", line) for line in lines) if m]


def expected_results(version: str, inputs: np.ndarray, outputs: np.ndarray, in_q, out_q) -> list[str]:
    """What the firmware prints for ``outputs`` (the interpreter's), formatted as it formats them:
    float32 dequantization, three decimals rounded half away from zero."""
    def dequantize(values, q):
        if q is None:
            return values.astype(np.float32).reshape(-1)
        diff = values.astype(np.int32).reshape(-1) - np.int32(q.zero_point[0])
        return diff.astype(np.float32) * np.float32(q.scale[0])

    y = dequantize(outputs, out_q)
    if version == "ad01":
        x = dequantize(inputs, in_q)
        total = np.float32(0)
        for a, b in zip(x, y):
            total = np.float32(total + np.float32(a - b) * np.float32(a - b))
        y = np.array([np.float32(total / np.float32(len(x)))], np.float32)
    text = []
    for value in y:
        scaled = np.float32(np.float32(value) * np.float32(1000) + np.float32(-0.5 if value < 0 else 0.5))
        milli = int(np.trunc(scaled))
        text.append(f"{'-' if milli < 0 else ''}{abs(milli) // 1000}.{abs(milli) % 1000:03d}")
    return text
