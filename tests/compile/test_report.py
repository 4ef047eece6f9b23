"""The compile report's plan data (what the HTML report draws): planned tensors, lifetimes,
producers and consumers, placements, the peak step, MACs per node; TFLite Micro's arena."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile import generate
from tractile.compile.report import planned
from tractile.tools.micro_arena import tflite_micro_arena

from ..conftest import shared_model


def chain_model(prefix: str = "") -> onnx.ModelProto:
    """x 1,64 -> MatMul 64x256 -> Exp (in place: halves the arena) -> Reshape 1,32,8 (an alias)
    -> MatMul 8x2 -> Softmax."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((64, 256)) * 0.1).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((8, 2)).astype(np.float32), "w2"),
             numpy_helper.from_array(np.array([1, 32, 8], np.int64), "shape")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["a"], name=prefix + "mm"),
             helper.make_node("Exp", ["a"], ["b"], name=prefix + "exp"),
             helper.make_node("Reshape", ["b", "shape"], ["c"], name=prefix + "flat"),
             helper.make_node("MatMul", ["c", "w2"], ["d"], name=prefix + "mm2"),
             helper.make_node("Softmax", ["d"], [prefix + "y"], axis=-1, name=prefix + "sm")]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info(prefix + "y", TensorProto.FLOAT, [1, 32, 2])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def brute_force_peak(program) -> tuple[int, int]:
    """(first step with the most arena bytes in use, those bytes), byte by byte."""
    arena = [t for t in program.tensors if planned(t)]
    size = max((t.offset + t.nbytes for t in arena), default=0)
    best = (0, 0)
    for step in range(len(program.nodes)):
        used = np.zeros(size, bool)
        for tensor in arena:
            if tensor.first <= step <= tensor.last:
                used[tensor.offset:tensor.offset + tensor.nbytes] = True
        if int(used.sum()) > best[1]:
            best = (step, int(used.sum()))
    return best


def check_plan(report: dict) -> None:
    """Every planned tensor inside the arena; tensors live at one step share bytes only when one
    is made over the other where it dies (in place) or is an alias of it."""
    tensors = report["tensors"]
    for tensor in tensors:
        assert 0 <= tensor["offset"] and tensor["offset"] + tensor["bytes"] <= report["arena_bytes"]
        assert tensor["first"] <= tensor["last"]
        if tensor["role"] == "value" and tensor["consumers"]:
            assert tensor["last"] == max(tensor["consumers"])
        if tensor["producer"] is not None:
            assert tensor["first"] == tensor["producer"]
    for i, a in enumerate(tensors):
        for b in tensors[i + 1:]:
            live = a["first"] <= b["last"] and b["first"] <= a["last"]
            shared = a["offset"] < b["offset"] + b["bytes"] and b["offset"] < a["offset"] + a["bytes"]
            if not (live and shared and a["bytes"] and b["bytes"]):
                continue
            early, late = (a, b) if a["first"] <= b["first"] else (b, a)
            assert late["placement"].startswith((f"in place over {early['var']}", f"alias of {early['var']}")), \
                (early, late)
            assert early["last"] == late["first"]


def test_the_plan_data_of_a_chain():
    source = generate(tractile.load(chain_model()))
    report, program = source.report, source.program
    assert [n["macs"] for n in report["nodes"] if n["op"] == "MatMul"] == [64 * 256, 32 * 8 * 2]
    by_var = {t["var"]: t for t in report["tensors"]}
    assert len(report["tensors"]) == sum(1 for t in program.tensors if planned(t)) == 4
    mm, exp, flat = by_var["mm"], by_var["exp_"], by_var["flat"]
    assert exp["placement"] == "in place over mm (which dies here)" and exp["offset"] == mm["offset"]
    assert flat["placement"].startswith("alias of exp_") and flat["offset"] == exp["offset"]
    assert (mm["producer"], mm["consumers"], exp["consumers"], flat["consumers"]) == (0, [1], [2], [3])
    assert report["arena_bytes"] == 1024 + 256  # the Exp in place; the last MatMul beside its 1 KiB input
    assert (report["peak"]["step"], report["peak"]["bytes"]) == brute_force_peak(program)
    assert [o["name"] for o in report["outputs"]] == ["y"] and report["inputs"][0]["shape"] == [1, 64]
    check_plan(report)


@pytest.mark.parametrize("relative", ["tflite/person_detect.tflite", "mlperf_tiny/kws_dscnn_int8.tflite",
                                      "tflite/micro_speech_quantized.tflite"])
def test_shared_models_plans_are_consistent(relative):
    source = generate(tractile.load(shared_model(relative)), target="cortex-m4")
    report = source.report
    check_plan(report)
    assert (report["peak"]["step"], report["peak"]["bytes"]) == brute_force_peak(source.program)
    assert report["peak"]["bytes"] <= report["arena_bytes"]
    convolutions = [n for n in report["nodes"] if "Conv" in n["op"] or "FullyConnected" in n["op"]]
    assert convolutions and all(n["macs"] > 0 for n in convolutions)


def test_a_banded_plan_draws_its_scratch_bands():
    typed = tractile.load(shared_model("tflite/person_detect.tflite")).into_optimized()
    from tractile.compile import generate
    from tractile.compile.bands import Chain, chains_of

    first_layers = tuple(chains_of(typed)[0][:3])  # the budget search prefers rows: bands asked for here
    source = generate(typed, "person_detect", "cortex-m4", optimize=False, chains=[Chain(first_layers, 4)])
    report = source.report
    assert report["bands"] and len(report["bands"][0]["nodes"]) > 1
    banded = [n for n in report["nodes"] if len(n["members"]) > 1]
    assert [n["members"] for n in banded] == [b["nodes"] for b in report["bands"]]
    scratch = [t for t in report["tensors"] if t["role"] == "scratch"]
    assert scratch and all(t["producer"] == banded[0]["step"] for t in scratch[:2])
    check_plan(report)


def test_pulsed_model_reports_its_ring_buffers(tmp_path):
    from ..tools.conftest import streaming_model

    model = tractile.load(streaming_model(), inputs=["1,4,T,f32"]).pulse("T", 2)
    source = generate(model.model, macros={"PULSE": (2, ""), "DELAY": (model.delay, "")})
    report = source.report
    assert report["macros"] == {"PULSE": 2, "DELAY": model.delay}
    assert report["state"] and sum(f["bytes"] for f in report["state"]) == report["state_bytes"]
    delay = next(n.op for n in model.model.nodes if n.op.name == "Delay")
    ring = [f for f in report["state"] if f["var"] == "enc_conv_delay_ring"]
    assert ring and ring[0]["dtype"] == "f32" and ring[0]["bytes"] == 4 * ring[0]["count"]
    assert ring[0]["count"] >= 4 * (delay.overlap + 2)  # 4 channels, the frames the kernel sees at once


def test_tflite_micro_arena_is_measured_or_says_why(monkeypatch, tmp_path):
    pytest.importorskip("tflite_micro")
    measured = tflite_micro_arena(shared_model("tflite/hello_world_int8.tflite"))
    assert measured["head"] > 0 and measured["total"] >= measured["head"]
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(8))
    assert "could not run the model" in tflite_micro_arena(broken)["absent"]
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert "not installed" in tflite_micro_arena(broken)["absent"]
