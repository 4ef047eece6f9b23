"""Loading time against graph size: tractile's load + analysis + optimization beside
onnxruntime's session creation, on graphs of 1k to 10k nodes and on DenseNet121.

    python bench/bench_load.py [--sizes 1000,2000,4000,10000] [--families add_mul_chain,...] [--no-densenet]
                               [--no-onnxruntime] [--src ../main/src]

``--src`` times the tractile of another checkout (its ``src`` folder) on the same graphs.

Graph families (built here): an alternating Add/Mul-by-constant chain (what declutter rewrites
most), the same chain on a [2,4] input by [4] constants (broadcast), a chain of unary ops, a
constant chain (Add of constants: folded), and a wide fan-out (one input read by every node,
summed pairwise). DenseNet121 is the onnx package's light model.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

OPSET = [helper.make_opsetid("", 17)]


def graph(nodes, inits, last: str, name: str, input_shape=("N", 4)):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(input_shape))],
                          [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=OPSET, ir_version=8)


def add_mul_chain(n: int):
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array(np.array([1.0 + (i % 7) / 10], np.float32), f"c{i}"))
        nodes.append(helper.make_node("Add" if i % 2 else "Mul", [prev, f"c{i}"], [f"t{i}"]))
        prev = f"t{i}"
    return graph(nodes, inits, prev, "add_mul")


def broadcast_chain(n: int):
    """[2,4] (op) [4]: each link broadcasts its constant along axis 0."""
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array(np.linspace(1.0, 1.0 + (i % 7) / 10, 4, dtype=np.float32), f"c{i}"))
        nodes.append(helper.make_node("Add" if i % 2 else "Mul", [prev, f"c{i}"], [f"t{i}"]))
        prev = f"t{i}"
    return graph(nodes, inits, prev, "broadcast", input_shape=(2, 4))


def unary_chain(n: int):
    nodes = [helper.make_node("Tanh" if i % 2 else "Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"])
             for i in range(n)]
    return graph(nodes, [], f"t{n - 1}", "unary")


def constant_chain(n: int):
    inits = [numpy_helper.from_array(np.ones(4, np.float32), "k")]
    nodes = [helper.make_node("Add", ["k" if i == 0 else f"k{i - 1}", "k"], [f"k{i}"]) for i in range(n - 1)]
    nodes.append(helper.make_node("Add", ["x", f"k{n - 2}"], ["y"]))
    return graph(nodes, inits, "y", "constants")


def fan_out(n: int):
    half = n // 2
    nodes = [helper.make_node("Relu" if i % 2 else "Neg", ["x"], [f"b{i}"]) for i in range(half)]
    level = [f"b{i}" for i in range(half)]
    count = 0
    while len(level) > 1:
        pairs = []
        for i in range(0, len(level) - 1, 2):
            nodes.append(helper.make_node("Add", [level[i], level[i + 1]], [f"s{count}"]))
            pairs.append(f"s{count}")
            count += 1
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return graph(nodes, [], level[0], "fan_out")


FAMILIES = (add_mul_chain, broadcast_chain, unary_chain, constant_chain, fan_out)


def timed(fn) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn()`` (the CPU time of the process: on a machine shared with
    other jobs, what loading costs, which the wall time exceeds by the waits)."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000,10000")
    parser.add_argument("--families", default=",".join(f.__name__ for f in FAMILIES),
                        help="graph families to time (comma-separated)")
    parser.add_argument("--no-densenet", action="store_true")
    parser.add_argument("--no-onnxruntime", action="store_true", help="time tractile only")
    parser.add_argument("--src", help="the src folder of another tractile checkout to time instead")
    args = parser.parse_args(argv)
    if args.src:
        sys.path.insert(0, str(Path(args.src).resolve()))
    import onnx
    import onnxruntime as ort

    import tractile

    print(f"tractile from {Path(tractile.__file__).parent}")

    options = ort.SessionOptions()
    options.log_severity_level = 3
    rows = []
    chosen = args.families.split(",")
    for family in (f for f in FAMILIES if f.__name__ in chosen):
        for size in (int(s) for s in args.sizes.split(",")):
            proto = family(size)
            data = proto.SerializeToString()
            ours = timed(lambda: tractile.load(proto))
            theirs = (float("nan"), float("nan")) if args.no_onnxruntime else \
                timed(lambda: ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]))
            rows.append((family.__name__, len(proto.graph.node), ours, theirs))
    if not args.no_densenet:
        path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_densenet121.onnx"
        if path.exists():
            proto = onnx.load(path)
            ours = timed(lambda: tractile.load(proto))
            theirs = timed(lambda: ort.InferenceSession(proto.SerializeToString(), options,
                                                        providers=["CPUExecutionProvider"]))
            rows.append(("densenet121", len(proto.graph.node), ours, theirs))
    print(f"{'graph':<16} {'nodes':>6} {'tractile s':>11} {'(cpu s)':>8} {'onnxruntime s':>14} {'(cpu s)':>8} "
          f"{'ratio':>7}")
    for name, nodes, ours, theirs in rows:
        print(f"{name:<16} {nodes:>6} {ours[0]:>11.2f} {ours[1]:>8.2f} {theirs[0]:>14.3f} {theirs[1]:>8.3f} "
              f"{ours[0] / theirs[0]:>6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
