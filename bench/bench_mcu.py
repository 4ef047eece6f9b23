"""tractile's generated code on emulated microcontrollers, in the form of MicroFlow's evaluation.

    python bench/bench_mcu.py [--models sine,speech,person] [--runs 10]
    python bench/bench_mcu.py --per-layer [--models kws,vww,ic,ad] [--runs 2] [--opt speed|size]

For each model and board: the test firmware is built with the board's tool chain, run in its
emulator (QEMU for Cortex-M, simavr for the ATmega328P) on random inputs, checked bit for bit
against the interpreter, and measured: flash of the model alone and of the whole firmware
(startup, console, the model; no board support package), RAM (context = arena + state, inputs
and outputs, peak stack; and every static byte of the firmware plus the peak stack), and the
instructions (Cortex-M, QEMU -icount) or cycles (AVR, Timer1) per inference.

Beside them: MicroFlow's published figures for the same model on the same core (from the
MicroFlow repository's analysis notebooks, matteocarnelos/microflow-rs analysis/memory/*.ipynb:
whole firmware builds on real boards), and TFLite Micro's planned activation arena for the
model (its recording allocator, tflite-micro package), which includes inputs and outputs.
The models are compiled with their inputs in the arena (``inputs_in_arena``), as TFLite Micro
keeps them: the firmware writes each input at ``NAME_INPUTi_IN(&ctx)``, so RAM total counts
the context (arena with the inputs, state), the outputs and the peak stack.

``--per-layer``: the instructions QEMU counts per layer and per multiply-accumulate on the
Cortex-M4 (mps2-an386), built for speed (-O2, or -Os with ``--opt size``), for the layers that
multiply-accumulate, their sums per kind of kernel, and each model's instructions per inference
beside the published cycles of X-CUBE-AI and TFLite Micro + CMSIS-NN on a Cortex-M4 (MLPerf Tiny's
four models: kws, vww, ic, ad; also sine, speech, person). Instructions are not cycles: a load
takes two cycles, a taken branch two to four, SMLAD one.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from bench_compile import micro_arena  # noqa: E402
from bench_tflite import MODELS_DIR  # noqa: E402

MODELS = {"sine": "hello_world_int8", "speech": "micro_speech_quantized", "person": "person_detect"}
MLPERF_DIR = MODELS_DIR.parent / "mlperf_tiny"
#: MLPerf Tiny's reference models and their published cycles per inference on a Cortex-M4 at 120 MHz
#: (latency x clock, ../shared/models/mlperf_tiny/README.md): X-CUBE-AI 9.0, TFLite Micro + CMSIS-NN
MLPERF = {"kws": ("kws_dscnn_int8", 5.18e6, 21.8e6), "vww": ("vww_96_int8", 10.7e6, 72.1e6),
          "ic": ("resnet8_int8", 19.8e6, 84.5e6), "ad": ("ad01_int8", 0.63e6, 1.21e6)}


def model_path(short: str) -> Path:
    return MLPERF_DIR / f"{MLPERF[short][0]}.tflite" if short in MLPERF else MODELS_DIR / f"{MODELS[short]}.tflite"


def kind_of(typed, layer: dict) -> str:
    """general / pointwise / dense / depthwise (other: not a convolution or a dense layer)."""
    if layer["op"] not in ("Conv", "MatMul"):
        return "other"
    if "dwconv" in layer["kernel"]:
        return "depthwise"
    if layer["op"] == "MatMul":
        return "dense"
    kernel = getattr(getattr(typed.nodes[layer["node"]].op, "window", None), "kernel", None)
    return "pointwise" if kernel is not None and all(int(k) == 1 for k in kernel) else "general"


def work_of(typed, layer: dict, kind: str) -> tuple[int, str]:
    """What a layer's instructions are counted against: its MACs for convolutions and dense
    layers, its output elements for the others (an ADD's cost counts one flop, half a MAC, per
    element)."""
    if kind != "other":
        return layer["macs"], "MAC"
    from tractile.graph import OutletId

    shape = typed.outlet_fact(OutletId(layer["node"], 0)).shape
    return int(np.prod([int(d) for d in shape])), "elem"


#: (board, MicroFlow's MCU with the same core)
BOARDS = (("lm3s6965evb", "LM3S6965 (Cortex-M3)"), ("mps2-an386", "nRF52840 (Cortex-M4F)"),
          ("mps2-an500", "ATSAMV71 (Cortex-M7F)"), ("atmega328p", "ATmega328 (AVR)"))
TARGET_OF = {"lm3s6965evb": "cortex-m3", "mps2-an386": "cortex-m4", "mps2-an500": "cortex-m7", "atmega328p": "avr"}
#: MicroFlow's flash and RAM in kB per (model, MCU), from its paper's analysis notebooks
MICROFLOW = {
    ("sine", "LM3S6965 (Cortex-M3)"): (34.296, 4.620), ("sine", "nRF52840 (Cortex-M4F)"): (34.292, 5.296),
    ("sine", "ATSAMV71 (Cortex-M7F)"): (48.0, 6.584), ("sine", "ATmega328 (AVR)"): (13.619, 1.706),
    ("speech", "LM3S6965 (Cortex-M3)"): (61.860, 19.220), ("speech", "nRF52840 (Cortex-M4F)"): (61.804, 19.552),
    ("speech", "ATSAMV71 (Cortex-M7F)"): (73.544, 21.168),
    ("person", "nRF52840 (Cortex-M4F)"): (391.700, 95.984), ("person", "ATSAMV71 (Cortex-M7F)"): (403.548, 96.512),
}
#: TFLite Micro on the nRF52840 in MicroFlow's evaluation (flash, RAM in kB)
TFLM_NRF = {"sine": (116.352, 45.728), "speech": (157.464, 63.728), "person": (459.648, 143.728)}


def main(argv=None) -> int:
    import tractile
    from tractile.compile.targets.verify import verify
    from tractile.errors import TractileError

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="sine,speech,person", help="comma-separated: sine, speech, person")
    parser.add_argument("--runs", type=int, default=10, help="random inputs per verification (default 10)")
    parser.add_argument("--per-layer", action="store_true",
                        help="instructions per layer and per MAC on the Cortex-M4 (-O2) instead of the table")
    parser.add_argument("--opt", default="speed", choices=("speed", "size"), help="--per-layer builds: -O2 or -Os")
    args = parser.parse_args(argv)
    if args.per_layer:
        return per_layer(args.models.split(","), args.runs, args.opt)
    header = (f"{'model':7} {'board':12} {'ok':>3} {'flash model':>11} {'flash fw':>9} {'RAM total':>9} "
              f"{'RAM fw':>7} {'stack':>6} {'per inference':>14}  {'MicroFlow flash/RAM':>20}  {'TFLM arena':>10}")
    print(header)
    print("-" * len(header))
    for short in args.models.split(","):
        path = MODELS_DIR / f"{MODELS[short]}.tflite"
        model = tractile.load(path)
        arena = micro_arena(str(path)).get("head")
        for board, mcu in BOARDS:
            peer = MICROFLOW.get((short, mcu))
            peer_text = f"{peer[0]:.1f} kB / {peer[1]:.1f} kB" if peer else "-"
            try:
                report = verify(model, TARGET_OF[board], board=board, runs=args.runs, opt="size",
                                inputs_in_arena=True, folder=tempfile.mkdtemp(prefix=f"bench-{short}-{board}-"),
                                timeout=600)
            except TractileError as error:
                print(f"{short:7} {board:12} {'-':>3} {str(error).splitlines()[0][:100]}")
                continue
            flash, ram = report["flash_bytes"], report["ram_bytes"]
            unit = "cyc" if board == "atmega328p" else "ins"
            print(f"{short:7} {board:12} {'yes' if report['verified'] else 'NO':>3} {flash['model']:11} "
                  f"{flash['firmware']:9} {ram['total']:9} {ram['firmware']:7} {ram['stack_peak']:6} "
                  f"{report['cycles_per_inference']:10} {unit}  {peer_text:>20}  {arena or '-':>10}")
    print("\nTFLite Micro on the nRF52840 in MicroFlow's evaluation (flash / RAM): "
          + ", ".join(f"{k} {v[0]:.1f} kB / {v[1]:.1f} kB" for k, v in TFLM_NRF.items()))
    return 0


def per_layer(models: list[str], runs: int, opt: str = "speed") -> int:
    import tractile
    from tractile.compile import prepare
    from tractile.compile.targets.verify import verify

    for short in models:
        model = tractile.load(model_path(short))
        typed = prepare(model, None, True)
        report = verify(model, "cortex-m4", runs=runs, opt=opt,
                        folder=tempfile.mkdtemp(prefix=f"bench-{short}-layers-"), timeout=1200)
        total = report["cycles_per_inference"]
        print(f"{short} on mps2-an386 ({'-O2' if opt == 'speed' else '-Os'}): verified {report['verified']}, "
              f"{total} instructions per inference, arena {report['ram_bytes']['arena']} B")
        if short in MLPERF:
            _, xcube, tflm = MLPERF[short]
            print(f"  published cycles on a Cortex-M4: X-CUBE-AI {xcube / 1e6:.2f} M, TFLite Micro + CMSIS-NN "
                  f"{tflm / 1e6:.2f} M (instructions are not cycles)")
        print(f"{'node':>5} {'kernel':24} {'MACs/elems':>10} {'instructions':>12} {'per unit':>9}  name")
        kinds: dict[tuple[str, str], list[int]] = {}
        for layer in report["layers"]:
            if layer["macs"]:
                kind = kind_of(typed, layer)
                work, unit = work_of(typed, layer, kind)
                print(f"{layer['node']:5} {layer['kernel']:24} {work:10} {layer['count']:12} "
                      f"{layer['count'] / work:6.2f}/{unit:4}  {layer['name'][:60]}")
                sums = kinds.setdefault((kind, unit), [0, 0])
                sums[0], sums[1] = sums[0] + work, sums[1] + layer["count"]
        for (kind, unit), (work, count) in sorted(kinds.items()):
            print(f"  {kind:10} {work:9} {unit}s {count:11} instructions {count / work:6.2f} per {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
