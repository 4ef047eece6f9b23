"""MLPerf Tiny's four reference models on the emulated Cortex-M4, Cortex-M7 and RV32 boards.

    python bench/bench_mlperf.py [--models kws,vww,ic,ad,sine,speech,person] [--boards mps2-an386,mps2-an500,virt-rv32]
                                 [--runs 1] [--json results.json]

For each model and board: the verification firmware is built -O2, run in QEMU on the given
random inputs (KWS: the benchmark's sample input first, class 5), checked bit for bit against
the interpreter, and measured: flash of the deployable firmware (model, kernels, startup code,
console; the verification inputs it embeds subtracted by their symbols' sizes) built -O2 and
-Os, RAM (arena, state, peak stack of an invoke), and instructions per inference (QEMU
-icount, calibrated). Built without the per-layer clock.

Beside them, the published figures (../shared/models/mlperf_tiny/README.md: MLPerf Tiny closed
division, latency x clock): X-CUBE-AI 9.0 on the NUCLEO-L4R5ZI (Cortex-M4F, 120 MHz) and on
the NUCLEO-H7A3ZI-Q (Cortex-M7, 280 MHz), TFLite Micro + CMSIS-NN (v0.5 reference, the M4).
Those are cycles on real cores; these are instructions in an emulator: a Cortex-M4 retires at
most one instruction per cycle (loads take two, taken branches two to four), so an instruction
count above a published cycle count is slower; a Cortex-M7 can retire two per cycle, so there
the comparison is only an indication. No MLPerf Tiny result has been published for an RV32IMC
core (ESP32-C3 class): that column stays empty.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

SHARED = HERE.parent.parent / "shared" / "models" / "mlperf_tiny"
MODELS = {"kws": "kws_dscnn_int8", "vww": "vww_96_int8", "ic": "resnet8_int8", "ad": "ad01_int8"}
#: the shared small models, for the same measurements (no published MLPerf figures)
SMALL = {"sine": "hello_world_int8", "speech": "micro_speech_quantized", "person": "person_detect"}
BOARDS = {"mps2-an386": "cortex-m4", "mps2-an500": "cortex-m7", "virt-rv32": "riscv32"}
#: published cycles per inference (millions): latency x clock
X_CUBE_AI_M4 = {"kws": 5.18, "vww": 10.7, "ic": 19.8, "ad": 0.63}
X_CUBE_AI_M7 = {"kws": 11.32e-3 * 280, "vww": 23.80e-3 * 280, "ic": 40.85e-3 * 280, "ad": 1.23e-3 * 280}
TFLM_M4 = {"kws": 21.8, "vww": 72.1, "ic": 84.5, "ad": 1.21}
#: whole X-CUBE-AI 10.2 firmware on the L4R5ZI-P (flash, bytes)
X_CUBE_AI_FLASH = {"kws": 87_845, "vww": 115_633, "ic": 198_218, "ad": 308_094}


def published(model: str, board: str) -> str:
    if model not in MODELS:
        return "-"
    if board == "mps2-an386":
        return f"X-CUBE-AI {X_CUBE_AI_M4[model]:.2f} M, TFLM {TFLM_M4[model]:.1f} M cyc"
    if board == "mps2-an500":
        return f"X-CUBE-AI H7A3 {X_CUBE_AI_M7[model]:.2f} M cyc"
    return "-"


def measure(model_key: str, board: str, runs: int, folder: Path) -> dict:
    import numpy as np

    import tractile
    from tractile.compile.targets.verify import verify

    path = SHARED / f"{MODELS[model_key]}.tflite" if model_key in MODELS else \
        SHARED.parent / "tflite" / f"{SMALL[model_key]}.tflite"
    model = tractile.load(str(path))
    inputs = []
    sample = SHARED / "testdata" / "kws_dscnn_int8_sample.npy"
    if model_key == "kws" and sample.is_file():
        inputs = [[np.load(sample).astype(np.int8).reshape(1, 49, 10, 1)]]
    report = verify(model, BOARDS[board], board=board, runs=runs, inputs=inputs, opt="speed", profile=False,
                    folder=folder, both_opts=True, timeout=1800)
    ram, flash = report["ram_bytes"], report["flash_bytes"]
    return {"model": model_key, "board": board, "verified": report["verified"],
            "inputs_checked": report["inputs_checked"], "flash_O2": flash["deployable_by_opt"]["-O2"],
            "flash_Os": flash["deployable_by_opt"]["-Os"], "flash_model": flash["model"], "arena": ram["arena"],
            "state": ram["state"], "stack": ram["stack_peak"], "instructions": report["cycles_per_inference"],
            "published": published(model_key, board)}


def main(argv=None) -> int:
    from tractile.errors import TractileError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help="kws, vww, ic, ad (comma separated; also sine, speech, person)")
    parser.add_argument("--boards", default=",".join(BOARDS), help="mps2-an386, mps2-an500, virt-rv32")
    parser.add_argument("--runs", type=int, default=1, help="random inputs per model (default 1)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = []
    print(f"{'model':5} {'board':11} {'ok':>3} {'flash -O2':>10} {'flash -Os':>10} {'arena':>7} {'state':>6} "
          f"{'stack':>6} {'instructions':>13}   published (cycles)")
    with tempfile.TemporaryDirectory(prefix="tractile-mlperf-") as work:
        for model_key in args.models.split(","):
            for board in args.boards.split(","):
                try:
                    row = measure(model_key, board, args.runs, Path(work) / f"{model_key}-{board}")
                except TractileError as why:
                    print(f"{model_key:5} {board:11}   - {str(why)[:100]}")
                    continue
                rows.append(row)
                print(f"{model_key:5} {board:11} {'yes' if row['verified'] else 'NO':>3} {row['flash_O2']:>10} "
                      f"{row['flash_Os']:>10} {row['arena']:>7} {row['state']:>6} {row['stack']:>6} "
                      f"{row['instructions']:>13,}   {row['published']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if all(row["verified"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
