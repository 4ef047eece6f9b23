"""What dead-channel elimination removes on the emulated Cortex-M4 (mps2-an386, -O2).

    python bench/bench_dead_channels.py [--runs 3] [--models vww_96_int8,person_detect]

For each model: the firmware built without the pass (``keep_dead_channels``) and with it (the
compiler's default), both verified in QEMU against the interpreter on the same random inputs.
The model with the pass is checked against the *original* model's interpreter, not against the
rewritten one, so the rewrite is tested, not assumed. Printed: constant channels removed (output
channels of convolution and depthwise layers), flash of the model (``flash_bytes.model``:
text, rodata and data of ``NAME.o``), the arena, the bytes of all planned tensors summed (the
arena without reuse), and instructions per inference (QEMU -icount; instructions, not cycles).
The MLPerf Tiny models come from ../shared/models/mlperf_tiny, person_detect from
../shared/models/tflite.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

SHARED = HERE.parents[1] / "shared" / "models"
MODELS = {"ad01_int8": "mlperf_tiny", "kws_dscnn_int8": "mlperf_tiny", "vww_96_int8": "mlperf_tiny",
          "resnet8_int8": "mlperf_tiny", "person_detect": "tflite"}


def measure(path: Path, runs: int) -> dict:
    """Before/after figures of one model on the Cortex-M4."""
    import tractile
    from tractile.compile.targets.verify import build_source, verify_source, with_flavour
    from tractile.passes.dead_channels import keep_dead_channels

    _, before_source, board = build_source(keep_dead_channels(tractile.load(path)), "cortex-m4")
    original = with_flavour(keep_dead_channels(tractile.load(path)).into_optimized(), board.target.flavour)
    _, after_source, _ = build_source(tractile.load(path), "cortex-m4")
    before = verify_source(before_source, original, board, runs=runs, opt="speed")
    after = verify_source(after_source, original, board, runs=runs, opt="speed")
    return {"removed": after_source.report["dead_channels_removed"], "before": before, "after": after,
            "no_reuse": (before_source.report["no_reuse_bytes"], after_source.report["no_reuse_bytes"])}


def _figures(report: dict) -> tuple[int, int, int]:
    return report["flash_bytes"]["model"], report["ram_bytes"]["arena"], report["cycles_per_inference"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="random inputs verified per build (default 3)")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names (default: all five)")
    args = parser.parse_args(argv)
    print("| model | channels removed | flash (model) before → after | arena before → after "
          "| activations without reuse before → after | instructions before → after | verified |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        path = SHARED / MODELS[name] / f"{name}.tflite"
        if not path.exists():
            print(f"| {name} | (not found: {path}) ||||||")
            continue
        found = measure(path, args.runs)
        (fb, ab, ib), (fa, aa, ia) = _figures(found["before"]), _figures(found["after"])
        verified = found["before"]["verified"] and found["after"]["verified"]
        nb, na = found["no_reuse"]
        print(f"| {name} | {found['removed']:,} | {fb:,} → {fa:,} B ({fa - fb:+,}) | {ab:,} → {aa:,} B "
              f"({aa - ab:+,}) | {nb:,} → {na:,} B | {ib / 1e6:.2f} M → {ia / 1e6:.2f} M ({(ia - ib) / ib:+.1%}) "
              f"| {'yes' if verified else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
