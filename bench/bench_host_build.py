"""Host build time: generating a model's C and building it into a shared library, from a clean cache.

    python bench/bench_host_build.py [--models person_detect,resnet8_int8,vww_96_int8,resnet50] [--runs 1]

Per model: the wall seconds of ``compile_model`` (ResNet50: ``compile_segments``, as bench_onnx.py's
compiled runs; a new empty cache folder each run), the CPU seconds of the Python process and of the
C compiler (its child processes: on a loaded machine the CPU seconds are what to compare), the
bytes of the files the build compiles (C text, and the constants' binary when the host build keeps
them out of the C), and a digest of the outputs on one input (the same before and after a change of
the build means the same results). TFLite models as bench/bench_host.py loads them, ResNet50 as
bench/bench_onnx.py builds it.
"""
from __future__ import annotations

import argparse
import hashlib
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from timing import load_average  # noqa: E402

DEFAULT = "person_detect,resnet8_int8,vww_96_int8,resnet50"


def load(name: str):
    """The model to compile and one input for it."""
    if name == "resnet50":
        from bench_onnx import MODELS

        import tractile

        proto, inputs = MODELS["resnet50"]()
        return tractile.load(proto, inputs=[(x.shape, x.dtype) for x in inputs]), inputs
    from bench_host import model_path
    from bench_tflite import inputs_for

    from tractile.formats.tflite import load_tflite

    model = load_tflite(model_path(name)).into_optimized()
    return model, inputs_for([(tuple(f.shape), f.dtype.np) for f in model.input_facts])


def build_once(model, name: str) -> tuple[dict, list[np.ndarray]]:
    from tractile.compile import compile_model
    from tractile.compile.segments import compile_segments

    cache = Path(tempfile.mkdtemp(prefix="tractile-build-time-"))
    try:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        if name == "resnet50":  # one ConstantOfShape stays interpreted: bench_onnx.py's compile="all"
            compiled = compile_segments(model, cache_dir=cache, by="all").state()
        else:
            compiled = compile_model(model, name=name, cache_dir=cache)
        wall = time.perf_counter() - start
        own2, children2 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        built = [p for p in cache.rglob("*") if p.suffix in (".c", ".bin")]
        row = {"wall": wall, "python_cpu": own2.ru_utime + own2.ru_stime - own.ru_utime - own.ru_stime,
               "cc_cpu": children2.ru_utime + children2.ru_stime - children.ru_utime - children.ru_stime,
               "c_bytes": sum(p.stat().st_size for p in built if p.suffix == ".c"),
               "bin_bytes": sum(p.stat().st_size for p in built if p.suffix == ".bin")}
        return row, compiled
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"load average {load_average()}")
    print(f"{'model':16} {'wall s':>8} {'python s':>9} {'cc s':>8} {'C bytes':>10} {'bin bytes':>10}  output digest")
    for name in args.models.split(","):
        model, inputs = load(name)
        rows = []
        for _ in range(args.runs):
            row, compiled = build_once(model, name)
            rows.append(row)
        outputs = compiled.run(inputs)
        digest = hashlib.sha256(b"".join(o.tobytes() for o in outputs)).hexdigest()[:16]
        med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        print(f"{name:16} {med['wall']:8.1f} {med['python_cpu']:9.1f} {med['cc_cpu']:8.1f} {med['c_bytes']:10.0f} "
              f"{med['bin_bytes']:10.0f}  {digest}", flush=True)
    print(f"load average {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
