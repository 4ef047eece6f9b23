"""Keyword spotting from raw audio on an emulated Cortex-M4: build, run, check, measure.

    python examples/keyword_spotting/build.py [--models ../shared/models/tflite] [--board mps2-an386]
                                              [--out build/keyword_spotting] [--opt speed|size]

Compiles TFLite Micro's micro_speech front end (audio_preprocessor_int8.tflite), streamed by
320-sample hops (``tractile.pulse.frames.pulse_frames``), and the keyword model
(micro_speech_quantized.tflite, TFLite Micro's arithmetic) to C; builds them with main.c and the
shared recordings (testdata/*_1000ms.wav) into one firmware; runs it in QEMU; checks that the
label after each recording's 49 frames is the one TFLite Micro's pipeline gives (its
preprocessor frame by frame, then micro_speech; the tflite-micro package); prints RAM and
instructions per 20 ms hop beside the hop's budget at 64 MHz.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "src"))

from tractile.compile import generate  # noqa: E402
from tractile.compile.ctext import array_initializer  # noqa: E402
from tractile.compile.targets.boards import board_for  # noqa: E402
from tractile.compile.targets.firmware import require_tool  # noqa: E402
from tractile.compile.targets.harness import CALIBRATION, platform_header  # noqa: E402
from tractile.compile.targets.startup import CORTEX_M_STARTUP, linker_script  # noqa: E402
from tractile.datum import DatumType  # noqa: E402
from tractile.errors import TractileError  # noqa: E402
from tractile.formats.tflite import load_tflite  # noqa: E402
from tractile.pulse.frames import pulse_frames  # noqa: E402

MODELS = HERE.parents[2] / "shared" / "models" / "tflite"
RECORDINGS = ("yes_1000ms", "no_1000ms", "noise_1000ms", "silence_1000ms")
LABELS = ("silence", "unknown", "yes", "no")
HOP, WINDOW, FRAMES = 320, 480, 49
#: a 20 ms hop at 64 MHz
BUDGET_CYCLES = 64_000_000 // 50
#: the stack the firmware links: its measured peak (332 B on the Cortex-M4) with room to spare
STACK_BYTES = 2048


@dataclass
class Result:
    """What the firmware printed, and what it took."""

    labels: dict[int, list[tuple[int, str, list[int]]]] = field(default_factory=dict)
    front_ticks: int = 0
    hops: int = 0
    speech_ticks: int = 0
    runs: int = 0
    calibration: int = 0
    stack: int = 0
    sizes: tuple[int, int, int] = (0, 0, 0)

    @property
    def per_tick(self) -> float:
        return CALIBRATION / self.calibration if self.calibration else 1.0


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as handle:
        if handle.getsampwidth() != 2 or handle.getnchannels() != 1:
            raise TractileError(f"{path}: expected 16-bit mono audio")
        return np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16)


def sources(models: Path):
    """The two compiled models: the streamed front end and the keyword model (C sources)."""
    front_model = load_tflite(models / "audio_preprocessor_int8.tflite").into_optimized()
    stream = pulse_frames(front_model, HOP)
    macros = {"PULSE": (stream.pulse, "samples each invoke consumes"),
              "DELAY": (stream.delay, "first outputs to drop (before the first whole window)")}
    front = generate(stream.model, name="frontend", target="cortex-m4", optimize=False, macros=macros)
    speech_model = load_tflite(models / "micro_speech_quantized.tflite", flavour="micro")
    speech = generate(speech_model, name="micro_speech", target="cortex-m4", inputs_in_arena=True)
    return front, speech


def audio_header(recordings: list[np.ndarray]) -> str:
    lines = ["/* audio.h: the recordings, 16 kHz int16 (written by build.py) */", "#include <stdint.h>",
             f"#define AUDIO_RECORDINGS {len(recordings)}"]
    for index, samples in enumerate(recordings):
        lines.append(f"static const int16_t audio_{index}[{samples.size}] = "
                     f"{array_initializer(samples, DatumType.I16)};")
    names = ", ".join(f"audio_{i}" for i in range(len(recordings)))
    lines.append(f"static const int16_t *const audio_samples[] = {{{names}}};")
    lines.append(f"static const int32_t audio_lengths[] = {{{', '.join(str(r.size) for r in recordings)}}};")
    return "\n".join(lines) + "\n"


def build(folder: Path, board_name: str, front, speech, recordings: list[np.ndarray], opt: str) -> Path:
    """Write every file and build the firmware; its ELF."""
    board = board_for("cortex-m4", board_name)
    compiler = require_tool(board.toolchain)
    folder.mkdir(parents=True, exist_ok=True)
    front.write(folder)
    speech.write(folder)
    (folder / "main.c").write_text((HERE / "main.c").read_text())
    (folder / "audio.h").write_text(audio_header(recordings))
    (folder / "tl_platform.h").write_text(platform_header(board, STACK_BYTES))
    (folder / "startup.c").write_text(CORTEX_M_STARTUP)
    (folder / "link.ld").write_text(linker_script(board, STACK_BYTES, "the example's measured peak and a margin"))
    flags = [*board.flags, "-std=c99", "-O2" if opt == "speed" else "-Os", "-ffunction-sections", "-fdata-sections",
             "-Wall", "-Wextra", "-Werror", "-Wno-unused-function"]
    command = [compiler, *flags, "--specs=nano.specs", "-nostartfiles", "-T", "link.ld", "startup.c", "main.c",
               "frontend.c", "micro_speech.c", "-o", "firmware.elf", "-Wl,--gc-sections", "-lm"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode:
        raise TractileError(f"building the firmware failed:\n{done.stderr[-3000:]}")
    return folder / "firmware.elf"


def run(elf: Path, board_name: str, timeout: float = 300.0) -> Result:
    command = [require_tool("qemu-system-arm"), "-M", board_name, "-nographic", "-monitor", "none", "-serial", "none",
               "-semihosting-config", "enable=on,target=native", "-icount", "shift=6", "-kernel", str(elf)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    result, ended = Result(), False
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "l" and len(fields) == 8:
            result.labels.setdefault(int(fields[1]), []).append((int(fields[2]), fields[3],
                                                                 [int(v) for v in fields[4:]]))
        elif fields[0] == "h":
            result.front_ticks, result.hops = int(fields[1]), int(fields[2])
        elif fields[0] == "m":
            result.speech_ticks, result.runs = int(fields[1]), int(fields[2])
        elif fields[0] == "k":
            result.calibration = int(fields[1])
        elif fields[0] == "s":
            result.stack = int(fields[1])
        elif fields[0] == "b":
            result.sizes = (int(fields[1]), int(fields[2]), int(fields[3]))
        elif fields[0] == "e":
            ended = True
    if not ended:
        raise TractileError(f"the firmware stopped before its end:\n{text[-2000:]}")
    return result


def tflite_micro_labels(models: Path, recordings: list[np.ndarray]) -> list[str]:
    """TFLite Micro's pipeline: its preprocessor on the 49 windows, then micro_speech."""
    from tflite_micro.python.tflite_micro import runtime

    labels = []
    for samples in recordings:
        front = runtime.Interpreter.from_file(str(models / "audio_preprocessor_int8.tflite"))
        features = []
        for k in range(FRAMES):
            front.set_input(samples[None, k * HOP:k * HOP + WINDOW], 0)
            front.invoke()
            features.append(np.array(front.get_output(0), copy=True))
        speech = runtime.Interpreter.from_file(str(models / "micro_speech_quantized.tflite"))
        speech.set_input(np.stack(features).reshape(1, -1), 0)
        speech.invoke()
        labels.append(LABELS[int(np.argmax(speech.get_output(0)))])
    return labels


def report(result: Result, front, speech, names, expected: list[str] | None) -> list[str]:
    lines = []
    for index, name in enumerate(names):
        steps = result.labels.get(index, [])
        final = steps[-1][1] if steps else "?"
        trail = " ".join(f"{frame}:{label}" for frame, label, _ in steps)
        want = f" (TFLite Micro: {expected[index]})" if expected else ""
        lines.append(f"{name:16s} label {final:8s}{want}   after frames {trail}")
    per_tick = result.per_tick
    front_hop = result.front_ticks * per_tick / max(result.hops, 1)
    speech_run = result.speech_ticks * per_tick / max(result.runs, 1)
    every = 4
    together = front_hop + speech_run / every
    lines.append(f"instructions per 20 ms hop: front end {front_hop:,.0f}; keyword model {speech_run:,.0f} per run "
                 f"(every {every} frames: {speech_run / every:,.0f} per hop); together {together:,.0f}"
                 f" = {together / BUDGET_CYCLES:.1%} of the hop at 64 MHz "
                 f"({BUDGET_CYCLES:,} cycles, one instruction per cycle)")
    front_ctx, speech_ctx, ring = result.sizes
    lines.append(f"RAM: front end context {front_ctx} B (arena {front.plan.arena_bytes} B, state "
                 f"{front.program.state_bytes} B), keyword model context {speech_ctx} B (arena "
                 f"{speech.plan.arena_bytes} B with its input), ring buffer {ring} B, peak stack {result.stack} B; "
                 f"total {front_ctx + speech_ctx + ring + result.stack} B")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=Path, default=MODELS)
    parser.add_argument("--board", default="mps2-an386")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--opt", choices=("speed", "size"), default="speed")
    args = parser.parse_args(argv)
    recordings = [read_wav(args.models / "testdata" / f"{name}.wav") for name in RECORDINGS]
    front, speech = sources(args.models)
    folder = args.out or Path(tempfile.mkdtemp(prefix="keyword-spotting-"))
    result = run(build(folder, args.board, front, speech, recordings, args.opt), args.board)
    try:
        expected = tflite_micro_labels(args.models, recordings)
    except ImportError:
        expected = None
    for line in report(result, front, speech, RECORDINGS, expected):
        print(line)
    finals = [result.labels[i][-1][1] if result.labels.get(i) else None for i in range(len(RECORDINGS))]
    if expected is not None and finals != expected:
        print(f"MISMATCH: the firmware says {finals}, TFLite Micro {expected}")
        return 1
    print(f"firmware in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
