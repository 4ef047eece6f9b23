"""Time an earlier tractile (a git revision) against this one and onnxruntime, in one process.

    python bench/bench_versions.py --base 6a63804 [--models mlp,chain,lstm2] [--runs 201]

The package at ``--base`` is extracted with ``git archive`` and imported under another name
(its imports are relative), so both versions and onnxruntime run side by side on one thread,
in rotating order run after run, timed in CPU time of the process: on a machine busy with
other work this compares versions more fairly than two separate benchmark runs. Models are
those of ``bench_onnx.py``. Prints, per model, the medians, each version's ratio to
onnxruntime, and whether the two versions' outputs are the same bits.
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_onnx  # noqa: E402


def import_revision(revision: str, folder: Path):
    """The tractile package of ``revision``, imported as ``tractile_base``."""
    archive = folder / "base.tar"
    with archive.open("wb") as stream:
        subprocess.run(["git", "-C", str(HERE.parent), "archive", revision, "src/tractile"], stdout=stream,
                       check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    shutil.move(str(folder / "src" / "tractile"), str(folder / "tractile_base"))
    sys.path.insert(0, str(folder))
    return importlib.import_module("tractile_base")


def compare(name: str, base, runs: int) -> str:
    import onnxruntime as ort

    import tractile

    proto, inputs = bench_onnx.MODELS[name]()
    facts = [(x.shape, x.dtype) for x in inputs]
    old, new = base.load(proto, inputs=facts).state(), tractile.load(proto, inputs=facts).state()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
    same = all(np.array_equal(a, b) for a, b in zip(old.run(inputs), new.run(inputs)))
    engines = [lambda: old.run(inputs), lambda: new.run(inputs), lambda: session.run(None, feeds)]
    for engine in engines:
        for _ in range(3):
            engine()
    times: list[list[float]] = [[], [], []]
    for run in range(runs):
        for k in range(3):
            index = (run + k) % 3  # who runs first changes: it finds the caches cold
            start = time.process_time()
            engines[index]()
            times[index].append(time.process_time() - start)
    before, after, peer = (statistics.median(t) * 1e3 for t in times)
    return (f"{name:11s} base {before:9.3f} ms  this {after:9.3f} ms  onnxruntime {peer:9.3f} ms  "
            f"vs onnxruntime {before / peer:5.2f}x -> {after / peer:5.2f}x  same bits: {same}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="git revision of the earlier version")
    parser.add_argument("--models", default="mlp,chain,tcn,lstm2,gru", help=f"from: {', '.join(bench_onnx.MODELS)}")
    parser.add_argument("--runs", type=int, default=201, help="timed runs per engine (median reported)")
    args = parser.parse_args(argv)
    import tractile

    tractile.set_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        base = import_revision(args.base, Path(folder))
        for name in (n.strip() for n in args.models.split(",") if n.strip()):
            print(compare(name, base, args.runs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
