"""Reference engines to compare tractile with: onnxruntime for ONNX, TFLite's reference kernels,
TensorFlow for TensorFlow graphs (``reference_tensorflow``).

The reference runs the original model file in a child process, so that a crash inside it
(the TFLite interpreter aborts on some models) is reported instead of killing tractile.
It can give every intermediate value too, by the tensor name the file uses, which is
what tractile's wires are labelled with.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from dataclasses import dataclass, field

import numpy as np

from ..errors import TractileError

ENGINES = ("onnxruntime", "tflite", "tensorflow")
#: the format each engine reads (``formats.detect`` names)
ENGINE_READS = {"onnxruntime": "onnx", "tflite": "tflite", "tensorflow": "tf"}


@dataclass
class ReferenceRun:
    """What a reference engine computed on one set of inputs.

    ``values`` holds the outputs by name, and with ``every_value`` every intermediate
    tensor the engine can expose; ``producers`` maps a value name to the engine's op
    that computes it; ``notes`` says what the engine was given besides the file as is.
    """

    engine: str
    input_names: list[str]
    output_names: list[str]
    values: dict[str, np.ndarray]
    producers: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        return {name: self.values[name] for name in self.output_names if name in self.values}


def default_engine(path: str) -> str:
    """The reference engine for a model file: tflite for TFLite files, tensorflow for TensorFlow
    graphs, onnxruntime otherwise."""
    from .. import _guess_format

    kind = _guess_format(path)
    return next((engine for engine, reads in ENGINE_READS.items() if reads == kind), "onnxruntime")


def check_engine_reads(engine: str, path: str) -> None:
    """Refuse a reference engine that cannot read the model's format, naming the one that can."""
    from ..formats.detect import detect_format, format_name

    if engine not in ENGINES:
        raise TractileError(f"unknown reference engine {engine!r}: use one of {', '.join(ENGINES)}")
    kind = detect_format(path)
    if ENGINE_READS[engine] != kind:
        able = [name for name, reads in ENGINE_READS.items() if reads == kind]
        advice = f"use --with {able[0]}" if able else "no reference engine reads it"
        raise TractileError(f"{engine} runs {format_name(ENGINE_READS[engine]).split()[1]} models only and "
                            f"{os.fspath(path)} is {format_name(kind)} model: {advice}")


def run_reference(engine: str, path: str, inputs: dict[str, np.ndarray], every_value: bool = False,
                  timeout: float = 600.0) -> ReferenceRun:
    """Run ``path`` in ``engine`` on ``inputs`` (by input name) in a child process."""
    check_engine_reads(engine, path)
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    worker = context.Process(target=_serve, args=(sender, engine, os.fspath(path), inputs, every_value),
                             daemon=True)
    worker.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            worker.kill()
            raise TractileError(f"{engine} did not answer within {timeout:.0f} s on {path}")
        status, payload = receiver.recv()
    except EOFError:
        worker.join()
        raise TractileError(f"{engine} crashed on {path} ({_exit_reason(worker.exitcode)}); "
                            "tractile cannot compare with it") from None
    finally:
        receiver.close()
    worker.join(timeout=30)
    if status == "error":
        raise TractileError(payload)
    if worker.exitcode not in (0, None):
        payload.notes.append(f"{engine} crashed while exiting ({_exit_reason(worker.exitcode)}) after "
                             "giving its results")
    return payload


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _serve(sender, engine: str, path: str, inputs: dict[str, np.ndarray], every_value: bool) -> None:
    """Child process: run the engine and send ("ok", ReferenceRun) or ("error", message)."""
    try:
        run = _runner(engine)(path, inputs, every_value)
        sender.send(("ok", run))
    except TractileError as error:
        sender.send(("error", str(error)))
    except Exception as error:
        sender.send(("error", f"{engine} failed on {path}: {type(error).__name__}: {error}"))
    finally:
        sender.close()


def _runner(engine: str):
    if engine == "tensorflow":
        from .reference_tensorflow import run_tensorflow

        return run_tensorflow
    return _onnxruntime if engine == "onnxruntime" else _tflite


def ordered_inputs(names: list[str], inputs: dict[str, np.ndarray], engine: str) -> list[np.ndarray]:
    """The inputs in the engine's order: by name, else by position."""
    if all(name in inputs for name in names):
        return [inputs[name] for name in names]
    if len(inputs) == len(names):
        return list(inputs.values())
    raise TractileError(f"{engine} expects inputs {', '.join(names)}; tractile has {', '.join(inputs)}")


# onnxruntime ----------------------------------------------------------------------------------
def _onnxruntime(path: str, inputs: dict[str, np.ndarray], every_value: bool) -> ReferenceRun:
    try:
        import onnx
        import onnxruntime as ort
    except ImportError:
        raise TractileError("comparing with onnxruntime needs the onnxruntime and onnx packages: "
                            "pip install onnxruntime onnx") from None
    try:
        proto = onnx.load(path)
    except Exception as error:
        raise TractileError(f"onnx cannot read {path}: {error}") from None
    initializers = {t.name for t in proto.graph.initializer}
    input_names = [v.name for v in proto.graph.input if v.name not in initializers]
    output_names = [v.name for v in proto.graph.output]
    producers = {out: node.op_type for node in proto.graph.node for out in node.output if out}
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    model = _with_every_value_as_output(proto) if every_value else proto
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as error:
        raise TractileError(f"onnxruntime cannot load {path}: {error}") from None
    names = [o.name for o in session.get_outputs()]
    try:
        values = session.run(None, dict(zip(input_names, ordered_inputs(input_names, inputs, "onnxruntime"))))
    except Exception as error:
        raise TractileError(f"onnxruntime failed to run {path}: {error}") from None
    return ReferenceRun("onnxruntime", input_names, output_names, dict(zip(names, values)), producers)


def _with_every_value_as_output(proto):
    """A copy of ``proto`` whose graph also outputs every value its nodes compute."""
    import onnx

    exposed = onnx.ModelProto()
    exposed.CopyFrom(proto)
    present = {v.name for v in exposed.graph.output}
    for node in exposed.graph.node:
        for name in node.output:
            if name and name not in present:
                exposed.graph.output.append(onnx.ValueInfoProto(name=name))
                present.add(name)
    return exposed


# TFLite ----------------------------------------------------------------------------------------
def _tflite(path: str, inputs: dict[str, np.ndarray], every_value: bool) -> ReferenceRun:
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise TractileError("comparing with TFLite needs the ai-edge-litert package: pip install ai-edge-litert") \
            from None
    with open(path, "rb") as handle:
        content, repaired = repair_bias_quantization(handle.read())
    try:
        interpreter = Interpreter(model_content=content, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                                  experimental_preserve_all_tensors=every_value)
        interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as error:
        raise TractileError(f"the TFLite interpreter cannot load {path}: {str(error).split('.')[0]}") from None
    details = interpreter.get_input_details()
    input_names = [d["name"] for d in details]
    for detail, value in zip(details, ordered_inputs(input_names, inputs, "the TFLite interpreter")):
        value = np.asarray(value)
        if tuple(detail["shape"]) != value.shape:
            interpreter.resize_tensor_input(detail["index"], value.shape)
            interpreter.allocate_tensors()
        try:
            interpreter.set_tensor(detail["index"], value.astype(detail["dtype"], copy=False))
        except ValueError as error:
            raise TractileError(f"TFLite input {detail['name']!r}: {error}") from None
    try:
        interpreter.invoke()
    except RuntimeError as error:
        raise TractileError(f"the TFLite interpreter failed to run {path}: {error}") from None
    names = {d["index"]: d["name"] for d in interpreter.get_tensor_details()}
    values = {d["name"]: interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()}
    if every_value:
        for index, name in names.items():
            if name not in values:
                try:
                    values[name] = interpreter.get_tensor(index).copy()
                except ValueError:  # tensors without data (unused scratch buffers)
                    continue
    producers = {}
    for op in interpreter._get_ops_details():
        for index in op["outputs"]:
            if int(index) in names:
                producers[names[int(index)]] = op["op_name"]
    notes = []
    if repaired:
        notes.append(f"the TFLite interpreter ran a copy whose {repaired} 1-d tensor(s) had their "
                     "out-of-range quantized_dimension set to 0 (as TFLite Micro reads them)")
    output_names = [d["name"] for d in interpreter.get_output_details()]
    return ReferenceRun("tflite", input_names, output_names, values, producers, notes)


def repair_bias_quantization(data: bytes) -> tuple[bytes, int]:
    """Set to 0 the quantized dimension of 1-d per-channel tensors where it is out of range.

    Some converters (person_detect's) leave the dimension of the 4-d weights on 1-d bias
    tensors; TFLite Micro ignores it but the full interpreter refuses the file. The field
    is patched in a copy of the bytes; nothing else changes. Returns the bytes and how
    many tensors were patched.
    """
    from ..formats.tflite.reader import ACCESS_ERRORS, schema

    patched = bytearray(data)
    count = 0
    try:
        model = schema("Model").GetRootAs(data, 0)
        for g in range(model.SubgraphsLength()):
            subgraph = model.Subgraphs(g)
            for t in range(subgraph.TensorsLength()):
                tensor = subgraph.Tensors(t)
                quant = tensor.Quantization()
                if quant is None or tensor.ShapeLength() != 1 or quant.ScaleLength() < 2:
                    continue
                if quant.QuantizedDimension() == 0:
                    continue
                position = quant._tab.Pos + quant._tab.Offset(16)  # QuantizationParameters.quantized_dimension
                patched[position:position + 4] = (0).to_bytes(4, "little", signed=True)
                count += 1
    except ACCESS_ERRORS:
        return data, 0
    return bytes(patched), count


__all__ = ["ReferenceRun", "run_reference", "check_engine_reads", "default_engine", "repair_bias_quantization",
           "ordered_inputs", "ENGINES", "ENGINE_READS"]
