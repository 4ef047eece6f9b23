"""TFLite Micro's micro_speech audio front end: interpreted, compiled for the host, and on
emulated microcontrollers; and keyword spotting from raw samples in a Cortex-M4 firmware.

    python bench/bench_audio.py [--hops 50] [--skip-mcu] [--skip-firmware]

1. The front end streamed by 320-sample hops (``pulse_frames``) over testdata/yes_1000ms.wav,
   interpreted and compiled for this machine: time per hop (median of the hops), beside the
   hop's real-time length (20 ms).
2. Both preprocessor models (int8 and float outputs) verified bit for bit on the emulated
   Cortex-M4 (mps2-an386) and Cortex-M3 (mps2-an385) over the recording's 49 windows, built
   for speed (-O2) and size (-Os): flash, RAM and instructions per frame (QEMU -icount).
3. examples/keyword_spotting: front end and micro_speech compiled into one Cortex-M4 firmware,
   run in QEMU on the four shared recordings: labels, RAM, instructions per hop against the
   budget of a 20 ms hop at 64 MHz.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
import wave
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

MODELS = HERE.parents[1] / "shared" / "models" / "tflite"
HOP, WINDOW, FRAMES = 320, 480, 49


def recording(name: str = "yes_1000ms") -> np.ndarray:
    with wave.open(str(MODELS / "testdata" / f"{name}.wav")) as handle:
        return np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16)[None]


def stream_times(hops: int) -> None:
    from tractile.formats.tflite import load_tflite
    from tractile.pulse.frames import pulse_frames

    audio = np.tile(recording(), (1, -(-hops * HOP // 16000)))
    model = load_tflite(MODELS / "audio_preprocessor_int8.tflite").into_optimized()
    stream = pulse_frames(model, HOP)
    compiled = stream.compile(name="frontend")
    for what, runner in (("interpreted", stream.start()), ("compiled (host)", compiled.state())):
        push = runner.push if hasattr(runner, "push") else runner.run
        times = []
        for k in range(hops):
            chunk = [audio[:, k * HOP:(k + 1) * HOP]]
            start = time.perf_counter()
            push(chunk)
            times.append(time.perf_counter() - start)
        median = statistics.median(times) * 1000
        print(f"front end {what:16s}: {median:8.3f} ms per 20 ms hop (median of {hops}), real-time factor "
              f"{median / 20:.4f}")


def mcu() -> None:
    from tractile.compile.targets.verify import verify
    from tractile.formats.tflite import load_tflite

    audio = recording()
    frames = [[audio[:, k * HOP:k * HOP + WINDOW]] for k in range(FRAMES)]
    print(f"{'model':22} {'board':11} {'opt':5} {'ok':>3} {'flash model':>11} {'arena':>6} {'state':>6} "
          f"{'stack':>6} {'RAM total':>9} {'instructions/frame':>18}")
    for kind in ("int8", "float"):
        model = load_tflite(MODELS / f"audio_preprocessor_{kind}.tflite").into_optimized()
        for target, board in (("cortex-m4", "mps2-an386"), ("cortex-m3", "mps2-an385")):
            for opt in ("speed", "size"):
                report = verify(model, target, board=board, runs=0, inputs=frames, opt=opt)
                ram = report["ram_bytes"]
                print(f"{'preprocessor_' + kind:22} {board:11} {opt:5} {'yes' if report['verified'] else 'NO':>3} "
                      f"{report['flash_bytes']['model']:>11} {ram['arena']:>6} {ram['state']:>6} "
                      f"{ram['stack_peak']:>6} {ram['total']:>9} {report['cycles_per_inference']:>18,}")


def firmware() -> None:
    spec = importlib.util.spec_from_file_location("keyword_spotting_build",
                                                  HERE.parent / "examples" / "keyword_spotting" / "build.py")
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example
    spec.loader.exec_module(example)
    example.main(["--models", str(MODELS)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hops", type=int, default=50)
    parser.add_argument("--skip-mcu", action="store_true")
    parser.add_argument("--skip-firmware", action="store_true")
    args = parser.parse_args(argv)
    stream_times(args.hops)
    if not args.skip_mcu:
        mcu()
    if not args.skip_firmware:
        firmware()
    return 0


if __name__ == "__main__":
    sys.exit(main())
