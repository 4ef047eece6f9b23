"""Time one large compiled host convolution on 1 thread and on N (the threads of issue 28, item 4).

    PYTHONPATH=src python bench/bench_host_threads.py [--threads 2] [--runs 30]

A 3x3 convolution of 64 to 64 channels on 56x56 pixels (115.6 M multiply-adds; ResNet's
second stage), int8 and float, and MobileNet-style's three largest float pointwise layers (as
dense layers over the pixels: 3136x128->128, 12544x32->64, 784x128->256), compiled for this
machine; the outputs on N threads are checked equal to one thread's. The two counts take turns
call after call; medians and fastest runs of ``--runs`` timed calls. The MLPerf Tiny models:
``bench/bench_host.py --threads 2``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from timing import interleaved, load_average  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.compile.test_host_gemm import float_conv, float_dense, int8_conv  # noqa: E402
from tests.tflite.builder import Window2D  # noqa: E402

LAYERS = {"conv3x3_64_56x56_int8": lambda: int8_conv(64, 64, (3, 3), Window2D("SAME", 1, 1), shape=(1, 56, 56)),
          "conv3x3_64_56x56_float": lambda: float_conv(64, 64, (3, 3), Window2D("SAME", 1, 1), shape=(1, 56, 56)),
          "pointwise_3136x128_128_float": lambda: float_dense(3136, 128, 128),
          "pointwise_12544x32_64_float": lambda: float_dense(12544, 32, 64),
          "pointwise_784x128_256_float": lambda: float_dense(784, 128, 256)}


def main(argv=None) -> int:
    from tractile.compile import compile_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)")
    for name, make in LAYERS.items():
        model = make().into_optimized()
        compiled = compile_model(model, name=name)
        fact = model.input_facts[0]
        rng = np.random.default_rng(0)
        x = (rng.integers(-128, 128, tuple(fact.shape)) if fact.dtype.np == np.int8
             else rng.standard_normal(tuple(fact.shape))).astype(fact.dtype.np)
        one_state, many_state = compiled.state(), compiled.state()
        one_state.set_threads(1)
        many_state.set_threads(args.threads)
        if not np.array_equal(one_state.run([x])[0], many_state.run([x])[0]):
            raise AssertionError(f"{name}: outputs on {args.threads} threads differ from one thread's")
        (one, one_best), (many, many_best) = interleaved([lambda: one_state.run([x]), lambda: many_state.run([x])],
                                                         args.runs, warmup=3)
        print(f"{name}: 1 thread {one * 1e3:.2f} ms (fastest {one_best * 1e3:.2f}), {args.threads} threads "
              f"{many * 1e3:.2f} ms (fastest {many_best * 1e3:.2f}): {one / many:.2f}x on medians, "
              f"{one_best / many_best:.2f}x on the fastest runs", flush=True)
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
