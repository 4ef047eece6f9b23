"""Batch inference throughput: files/s and frames/s over a corpus of generated inputs, with the
local engine (1 and 2 worker processes) and Ray Data (1 and 2 actors) on this machine.

    python bench/bench_batch.py [--files 200] [--frames 1000] [--batch-size 8] [--no-ray]

The model is the dilated TCN of bench_streaming.py (40 features, 64 channels, 8 layers) over
[1, 40, frames] inputs. Each configuration writes into a fresh folder (a full run, nothing
resumed); model loading happens once per worker and is included, as a user would see it.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args(argv)
    import onnx
    from builders import tcn

    import tractile.batch as batch

    work = Path(tempfile.mkdtemp(prefix="tractile-bench-batch-"))
    onnx.save(tcn(), work / "tcn.onnx")
    rng = np.random.default_rng(0)
    for index in range(args.files):
        np.save(work / "data" / f"{index:05d}.npy" if (work / "data").exists() else
                (work / "data").mkdir() or work / "data" / f"{index:05d}.npy",
                rng.standard_normal((1, 40, args.frames)).astype(np.float32))
    configs = [("local", 1), ("local", 2)] + ([] if args.no_ray else [("ray", 1), ("ray", 2)])
    print(f"{args.files} files of [1, 40, {args.frames}] through the TCN; batch size {args.batch_size}")
    print(f"{'engine':>7} {'workers':>7} {'seconds':>8} {'files/s':>8} {'frames/s':>10}")
    for engine, workers in configs:
        start = time.perf_counter()
        summary = batch.run(str(work / "tcn.onnx"), str(work / "data" / "*.npy"), str(work / f"out-{engine}{workers}"),
                            workers=workers, batch_size=args.batch_size, engine=engine)
        seconds = time.perf_counter() - start
        assert summary.done == args.files, summary
        print(f"{engine:>7} {workers:>7} {seconds:>8.2f} {args.files / seconds:>8.1f} "
              f"{args.files * args.frames / seconds:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
