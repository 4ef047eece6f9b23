"""A seeded structural fuzzer: hostile ONNX and TFLite models built from a seed, each loaded
(and run when its inputs are concrete) in a worker process with a time limit per case and a
cap on its address space. A case passes when it ends in a result or a ``TractileError``.

Names cases are valid ONNX models whose every name is hostile (``hostile_names``): the worker
also generates their C and, when a C compiler is there, builds it under strict warnings and
checks that the object defines exactly the model's functions (a name that escaped into C fails).

    python -m tractile.tools.fuzz [--cases 300] [--seed 0] [--timeout 5] [--memory-mb 4096]

The test suite runs a few hundred cases; ``make fuzz`` runs the coverage-guided campaign of
``tools/fuzz_atheris.py`` (docs/ROBUSTNESS.md).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

UNARY = ["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Neg", "Abs", "Sqrt", "Softmax", "Identity", "Flatten"]
BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Max", "Min", "Equal", "Greater"]
SHAPED = ["Reshape", "Transpose", "Concat", "Gather", "Slice", "Pad", "Tile", "Expand", "ReduceSum", "Conv",
          "MaxPool", "AveragePool", "Squeeze", "Unsqueeze", "Split", "TopK", "Resize", "Range", "ConstantOfShape",
          "Where", "Cast", "Loop", "If", "Scan", "LSTM", "Einsum"]
DTYPES = [1, 2, 3, 5, 6, 7, 9, 10, 11, 16]  # float, uint8, int8, int16, int32, int64, bool, f16, double, bf16
#: ops of the names cases (all compiled to C)
COMPILED_UNARY = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Exp"]
COMPILED_BINARY = ["Add", "Sub", "Mul", "Max", "Min"]
#: the file a names case's constructor payload would create
MARKER = Path(tempfile.gettempdir()) / "tractile-fuzz-names-marker"


def onnx_case(rng: np.random.Generator) -> bytes:
    """A small ONNX model with random ops, attributes, shapes and types (often wrong on purpose)."""
    from onnx import TensorProto, helper, numpy_helper

    rank = int(rng.integers(0, 5))
    dims = [int(rng.choice([0, 1, 2, 3, 7, -1, 1 << 40])) if rng.random() < 0.1 else int(rng.integers(1, 6))
            for _ in range(rank)]
    shape = [d if rng.random() > 0.2 else str(rng.choice(["N", "T", "(N+1)", "N*T", "a b"])) for d in dims]
    dtype = int(rng.choice(DTYPES)) if rng.random() < 0.3 else TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("x", dtype, shape if rng.random() > 0.1 else None)]
    names, nodes, initializers = ["x"], [], []
    for index in range(int(rng.integers(1, 5))):
        family = rng.random()
        op = str(rng.choice(UNARY if family < 0.35 else BINARY if family < 0.6 else SHAPED))
        arity = 1 if op in UNARY else 2 if op in BINARY else int(rng.integers(1, 4))
        operands = []
        for _ in range(arity):
            if rng.random() < 0.5 or not names:
                const = f"c{index}_{len(initializers)}"
                size = int(rng.integers(0, 6))
                values = rng.integers(-3, 8, size).astype(np.int64 if rng.random() < 0.5 else np.float32)
                initializers.append(numpy_helper.from_array(values, const))
                operands.append(const)
            else:
                operands.append(str(rng.choice(names)))
        attributes = {}
        for key in rng.choice(["axis", "perm", "kernel_shape", "pads", "strides", "to", "k", "keepdims",
                               "group", "mode", "equation", "hidden_size", "body"], int(rng.integers(0, 3))):
            attributes[str(key)] = _attribute(rng, str(key))
        out = f"t{index}"
        try:
            nodes.append(helper.make_node(op, operands, [out], **attributes))
        except (ValueError, TypeError):
            nodes.append(helper.make_node(op, operands, [out]))
        names.append(out)
    graph = helper.make_graph(nodes, "fuzz", inputs, [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT,
                                                                                   None)], initializers)
    opset = int(rng.choice([1, 6, 7, 11, 13, 17, 21, 99]))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = int(rng.choice([3, 7, 8, 10]))
    return model.SerializeToString()


def names_case(rng: np.random.Generator, marker: Path = MARKER) -> bytes:
    """A valid ONNX model of compiled ops on one concrete shape, every name of it hostile."""
    from onnx import TensorProto, helper, numpy_helper

    from .hostile_names import random_hostile_name

    used: set[str] = set()

    def name() -> str:
        text = random_hostile_name(rng, str(marker))
        while text in used:
            text += "#"
        used.add(text)
        return text

    shape = [int(d) for d in rng.integers(1, 4, int(rng.integers(1, 3)))]
    inputs = [helper.make_tensor_value_info(name(), TensorProto.FLOAT, shape) for _ in range(int(rng.integers(1, 3)))]
    values, nodes, initializers = [i.name for i in inputs], [], []
    for _ in range(int(rng.integers(1, 5))):
        binary = rng.random() < 0.5
        op = str(rng.choice(COMPILED_BINARY if binary else COMPILED_UNARY))
        operands = [values[int(rng.integers(0, len(values)))]]  # (NumPy's strings would lose trailing NULs)
        if binary:
            if rng.random() < 0.5:
                initializers.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name()))
                operands.append(initializers[-1].name)
            else:
                operands.append(values[int(rng.integers(0, len(values)))])
        out = name()
        nodes.append(helper.make_node(op, operands, [out], name=random_hostile_name(rng, str(marker))))
        values.append(out)
    outputs = [helper.make_tensor_value_info(v, TensorProto.FLOAT, shape) for v in values[len(inputs):]
               if rng.random() < 0.5 or v == values[-1]]
    graph = helper.make_graph(nodes, random_hostile_name(rng, str(marker)), inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    return model.SerializeToString()


def check_generated_c(model, marker: Path = MARKER) -> str | None:
    """What is wrong with the C generated for ``model`` (None: nothing, or no C compiler to tell):
    built under strict C99 warnings, its object must define exactly the model's four functions."""
    from ..compile import generate
    from ..compile.host import find_c_compiler
    from ..errors import TractileError

    source = generate(model, name="fuzz")
    try:
        cc = find_c_compiler()
    except TractileError:
        return None
    nm = shutil.which("nm")
    with tempfile.TemporaryDirectory(prefix="tractile-fuzz-") as folder:
        source.write(folder)
        done = subprocess.run([*cc.split(), "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                               "-Wno-overlength-strings", "-O0", "-c", "fuzz.c", "-o", "fuzz.o"], cwd=folder,
                              capture_output=True, text=True)
        if done.returncode != 0:
            return f"the generated C does not build: {done.stderr.strip()[-300:]}"
        if nm is not None:
            listed = subprocess.run([nm, "-P", "fuzz.o"], cwd=folder, capture_output=True, text=True).stdout
            defined = {f[0] for f in map(str.split, listed.splitlines()) if len(f) > 1 and f[1] not in "Uabdrt"}
            expected = {f"fuzz_{what}" for what in ("init", "reset", "invoke", "context_bytes")}
            if defined != expected:
                return f"the object defines {sorted(defined ^ expected)} beyond or instead of the model's functions"
    if os.path.exists(marker):
        return f"a payload ran: {marker} exists"
    return None


def _attribute(rng: np.random.Generator, key: str):
    if key in ("perm", "kernel_shape", "pads", "strides"):
        return [int(v) for v in rng.integers(-2, 5, int(rng.integers(0, 5)))]
    if key == "mode":
        return str(rng.choice(["constant", "reflect", "edge", "nearest", "bogus"]))
    if key == "equation":
        return str(rng.choice(["ij,jk->ik", "ii->i", "...", "a,b->", "ij->ji"]))
    if key == "body":
        from onnx import helper

        return helper.make_graph([], "empty", [], [])
    return int(rng.integers(-3, 5))


def mutated(data: bytes, rng: np.random.Generator) -> bytes:
    """``data`` with a few bytes flipped, a piece cut out or the tail cut off."""
    buffer = bytearray(data)
    if not buffer:
        return bytes(buffer)
    choice = rng.random()
    if choice < 0.5:
        for _ in range(int(rng.integers(1, 8))):
            buffer[int(rng.integers(0, len(buffer)))] = int(rng.integers(0, 256))
    elif choice < 0.75:
        start = int(rng.integers(0, len(buffer)))
        del buffer[start:start + int(rng.integers(1, 64))]
    else:
        del buffer[int(rng.integers(0, len(buffer))):]
    return bytes(buffer)


def cases(count: int, seed: int, tflite_files: list[Path]) -> list[tuple[str, bytes]]:
    """``count`` cases: generated ONNX models, their byte mutations, names cases, and mutated TFLite
    files."""
    rng = np.random.default_rng(seed)
    tflite = [path.read_bytes() for path in tflite_files]
    made = []
    for index in range(count):
        kind = rng.random()
        if kind < 0.1:
            made.append((f"names#{index}", names_case(rng)))
        elif kind < 0.5 or not tflite:
            data = onnx_case(rng)
            made.append((f"onnx#{index}", data if rng.random() < 0.7 else mutated(data, rng)))
        else:
            which = int(rng.integers(0, len(tflite)))
            made.append((f"tflite#{index}:{tflite_files[which].name}", mutated(tflite[which], rng)))
    return made


def worker(timeout: float, memory_mb: int) -> None:
    """Read cases (one JSON line each: name, hex bytes) from stdin; print one verdict line each."""
    import resource
    import signal

    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    def expired(signum, frame):
        raise TimeoutError(f"no result after {timeout} s")

    signal.signal(signal.SIGALRM, expired)
    import tractile
    from tractile.errors import TractileError

    for line in sys.stdin:
        name, data = json.loads(line)
        verdict = "ok"
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            model = tractile.load(bytes.fromhex(data))
            facts = model.input_facts
            shapes = [_dims(f) for f in facts]  # a model typed at its first run has partial facts
            if all(f.dtype is not None and all(isinstance(d, int) for d in dims) for f, dims in zip(facts, shapes)) \
                    and len(facts) <= 4 and all(np.prod([int(d) for d in dims], dtype=float) <= 1e6 for dims in shapes):
                model.run([np.ones([int(d) for d in dims], f.dtype.np) if f.dtype.np.kind != "O"
                           else np.array("", dtype=object) for f, dims in zip(facts, shapes)])
            problem = check_generated_c(model) if name.startswith("names#") else None
            if problem is not None:
                verdict = f"ESCAPED {problem}"
        except TractileError:
            verdict = "refused"
        except BaseException as error:
            verdict = f"ESCAPED {type(error).__name__}: {str(error)[:200]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        print(json.dumps([name, verdict]), flush=True)


def _dims(fact) -> tuple:
    """The dims of a typed fact, or of a partial one (None where unknown, one None for an
    unknown rank)."""
    from tractile.fact import InferenceFact

    if isinstance(fact, InferenceFact):
        return (None,) if fact.shape.open else tuple(fact.shape.dims)
    return tuple(fact.shape) if fact.has_rank else (None,)


def worker_command(timeout: float, memory_mb: int) -> list[str]:
    return [sys.executable, "-m", "tractile.tools.fuzz", "--worker", "--timeout", str(timeout), "--memory-mb",
            str(memory_mb)]


def run_cases(made: list[tuple[str, bytes]], timeout: float = 5.0, memory_mb: int = 4096) -> dict[str, str]:
    """Every case through worker processes; a worker that dies or stalls marks its case and a new
    one takes the rest. Returns the verdict of each case by name."""
    verdicts: dict[str, str] = {}
    pending = list(made)
    while pending:
        feed = "".join(json.dumps([name, data.hex()]) + "\n" for name, data in pending)
        budget = 120 + 4 * timeout + 0.5 * len(pending)  # a stall trips it long before CI would
        try:
            done = subprocess.run(worker_command(timeout, memory_mb), input=feed, capture_output=True, text=True,
                                  timeout=budget)
            output, failure = done.stdout, f"CRASHED (exit status {done.returncode}): {done.stderr.strip()[-300:]}"
            finished = done.returncode == 0
        except subprocess.TimeoutExpired as expired:  # a case the alarm could not interrupt
            output = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
            failure, finished = f"HUNG (no verdict within {budget:.0f} s)", False
        for line in output.splitlines():
            name, verdict = json.loads(line)
            verdicts[name] = verdict
        remaining = [case for case in pending if case[0] not in verdicts]
        if remaining and len(remaining) == len(pending) and finished:
            break
        if remaining:
            verdicts[remaining[0][0]] = failure
            remaining = remaining[1:]
        pending = remaining
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per case")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space cap of the worker")
    parser.add_argument("--tflite", nargs="*", type=Path, default=[], help="TFLite files to mutate")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.timeout, args.memory_mb)
        return 0
    verdicts = run_cases(cases(args.cases, args.seed, args.tflite), args.timeout, args.memory_mb)
    bad = {name: verdict for name, verdict in verdicts.items() if verdict not in ("ok", "refused")}
    counts = {kind: sum(v == kind for v in verdicts.values()) for kind in ("ok", "refused")}
    print(f"{len(verdicts)} cases: {counts['ok']} ran, {counts['refused']} refused with a TractileError, "
          f"{len(bad)} escaped")
    for name, verdict in sorted(bad.items()):
        print(f"  {name}: {verdict}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
