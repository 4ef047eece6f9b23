"""Loading time against graph size: tractile's load + analysis + optimization beside
onnxruntime's session creation, on graphs of 1k to 10k nodes and on DenseNet121.

    python bench/bench_load.py [--sizes 1000,2000,4000,10000] [--no-densenet]

Graph families (built here): an alternating Add/Mul-by-constant chain (what declutter rewrites
most), a chain of unary ops, a constant chain (Add of constants: folded), and a wide fan-out
(one input read by every node, summed pairwise). DenseNet121 is the onnx package's light model.
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


def graph(nodes, inits, last: str, name: str):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info(last, TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=OPSET, ir_version=8)


def add_mul_chain(n: int):
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array(np.array([1.0 + (i % 7) / 10], np.float32), f"c{i}"))
        nodes.append(helper.make_node("Add" if i % 2 else "Mul", [prev, f"c{i}"], [f"t{i}"]))
        prev = f"t{i}"
    return graph(nodes, inits, prev, "add_mul")


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


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000,10000")
    parser.add_argument("--no-densenet", action="store_true")
    args = parser.parse_args(argv)
    import onnx
    import onnxruntime as ort

    import tractile

    options = ort.SessionOptions()
    options.log_severity_level = 3
    rows = []
    for family in (add_mul_chain, unary_chain, constant_chain, fan_out):
        for size in (int(s) for s in args.sizes.split(",")):
            proto = family(size)
            data = proto.SerializeToString()
            ours = timed(lambda: tractile.load(proto))
            theirs = timed(lambda: ort.InferenceSession(data, options, providers=["CPUExecutionProvider"]))
            rows.append((family.__name__, len(proto.graph.node), ours, theirs))
    if not args.no_densenet:
        path = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_densenet121.onnx"
        if path.exists():
            proto = onnx.load(path)
            ours = timed(lambda: tractile.load(proto))
            theirs = timed(lambda: ort.InferenceSession(proto.SerializeToString(), options,
                                                        providers=["CPUExecutionProvider"]))
            rows.append(("densenet121", len(proto.graph.node), ours, theirs))
    print(f"{'graph':<16} {'nodes':>6} {'tractile s':>11} {'onnxruntime s':>14} {'ratio':>7}")
    for name, nodes, ours, theirs in rows:
        print(f"{name:<16} {nodes:>6} {ours:>11.2f} {theirs:>14.3f} {ours / theirs:>6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
