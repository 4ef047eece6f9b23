"""compile="auto" by measured cost: the mechanism, with injected costs and clocks (no timing here)."""
from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest

import tractile
from tractile.compile.autocost import DECISION_FILE, WHOLE_MODEL, MeasuredCosts, measure
from tractile.compile.segments import CompiledSegment, compile_segments
from tractile.errors import TractileError

from .harness import assert_same_outputs, needs_cc
from .test_framework import mlp_proto
from .test_segments import mixed_proto


class FakeCosts:
    """Costs by node names: a segment costs the sum of its nodes' (compiled, interpreted) costs,
    plus ``joined`` compiled extra when it holds more than one node."""

    def __init__(self, per_node: dict[str, tuple[float, float]], joined: float = 0.0,
                 whole: tuple[float, float] = (1.0, 2.0)):
        self.per_node = per_node
        self.joined = joined
        self.whole = whole
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def _names(self, segment) -> tuple[str, ...]:
        return tuple(n.name for n in segment.nodes if n.op.name not in ("Source", "Const"))

    def segment(self, segment, compiled):
        names = self._names(segment)
        self.calls.append(("segment", names))
        compiled_s = sum(self.per_node[n][0] for n in names) + (self.joined if len(names) > 1 else 0.0)
        return compiled_s, sum(self.per_node[n][1] for n in names)

    def nodes(self, segment):
        names = self._names(segment)
        self.calls.append(("nodes", names))
        return {n: self.per_node[n] for n in names}

    def model(self, auto, interpreted):
        self.calls.append(("model", ()))
        return self.whole


class NoCosts:
    def segment(self, segment, compiled):
        raise AssertionError("measured again although the decision is cached")

    nodes = model = segment


def segment_rows(choices: list) -> list:
    assert choices[-1].segment == WHOLE_MODEL
    return choices[:-1]


def compiled_ops(model) -> list[tuple[str, ...]]:
    return sorted(n.op.ops for n in model.nodes if isinstance(n.op, CompiledSegment))


def check_outputs(reference, auto, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(3):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        assert_same_outputs(reference.run([x]), auto.run([x]))


def test_a_segment_slower_compiled_stays_interpreted(tmp_path):
    needs_cc()
    reference = tractile.load(mixed_proto())
    costs = FakeCosts({"first": (1.0, 2.0), "second": (3.0, 2.0), "joined": (3.0, 2.0)})
    choices: list = []
    auto = compile_segments(reference, cache_dir=tmp_path, by="cost", costs=costs, choices=choices)
    assert compiled_ops(auto) == [("MatMul",)]
    assert {n.name for n in auto.nodes if n.op.name in ("MatMul", "Concat")} == {"second", "joined"}
    assert [(c.segment, c.compiled, c.compiled_s, c.interpreted_s) for c in choices] == \
        [("first", True, 1.0, 2.0), ("second", False, 6.0, 4.0), (WHOLE_MODEL, True, 1.0, 2.0)]
    assert choices[1].why.startswith("measured: interpreted is faster")
    check_outputs(reference, auto)


def test_a_slower_segment_is_tried_again_as_its_nodes_faster_compiled(tmp_path):
    needs_cc()
    reference = tractile.load(mixed_proto())
    costs = FakeCosts({"first": (1.0, 2.0), "second": (1.0, 2.0), "joined": (4.0, 2.0)})
    choices: list = []
    auto = compile_segments(reference, cache_dir=tmp_path, by="cost", costs=costs, choices=choices)
    assert compiled_ops(auto) == [("MatMul",), ("MatMul",)]
    assert choices[1].prefer == ("second",) and not choices[1].compiled
    assert [c.segment for c in segment_rows(choices)] == ["first", "second", "second"] and choices[2].compiled
    check_outputs(reference, auto, 1)


def test_a_segment_whose_nodes_are_each_faster_alone_but_slower_together_stays_interpreted(tmp_path):
    needs_cc()
    reference = tractile.load(mixed_proto())
    costs = FakeCosts({"first": (1.0, 2.0), "second": (1.0, 2.0), "joined": (1.0, 2.0)}, joined=10.0)
    choices: list = []
    auto = compile_segments(reference, cache_dir=tmp_path, by="cost", costs=costs, choices=choices)
    assert [(c.segment, c.compiled) for c in segment_rows(choices)] == [("first", True), ("second", False)]
    assert [c for c in costs.calls if c[0] == "nodes"] == [("nodes", ("second", "joined"))]
    assert compiled_ops(auto) == [("MatMul",)]
    check_outputs(reference, auto, 2)


def test_a_smaller_run_slower_again_is_not_split_again(tmp_path):
    needs_cc()
    model = tractile.load(mlp_proto(1))
    names = [n.name for n in model.nodes if n.op.name not in ("Source", "Const")]
    assert len(names) >= 3
    # the first node slower compiled, the rest faster alone but slower as a run
    per_node = {name: (1.0, 2.0) for name in names}
    per_node[names[0]] = (3.0, 2.0)
    costs = FakeCosts(per_node, joined=100.0)
    choices: list = []
    auto = compile_segments(model, cache_dir=tmp_path, by="cost", costs=costs, choices=choices)
    assert [(c.nodes, c.compiled) for c in choices] == [(len(names), False), (len(names) - 1, False)]
    assert ("model", ()) not in costs.calls  # nothing compiled: nothing to check
    assert [c for c in costs.calls if c[0] == "nodes"] == [("nodes", tuple(names))]
    assert not compiled_ops(auto)


def test_the_decision_is_cached_with_the_build_and_reused(tmp_path):
    needs_cc()
    reference = tractile.load(mixed_proto())
    costs = FakeCosts({"first": (1.0, 2.0), "second": (1.0, 2.0), "joined": (4.0, 2.0)})
    first: list = []
    compile_segments(reference, cache_dir=tmp_path, by="cost", costs=costs, choices=first)
    assert len(list(tmp_path.glob(f"*/{DECISION_FILE}"))) == 3 and len(list(tmp_path.glob("auto-models/*"))) == 1
    again: list = []
    auto = compile_segments(reference, cache_dir=tmp_path, by="cost", costs=NoCosts(), choices=again)
    assert [(c.segment, c.compiled, c.prefer) for c in again] == [(c.segment, c.compiled, c.prefer) for c in first]
    assert all(c.why.startswith("cached") for c in again)
    assert compiled_ops(auto) == [("MatMul",), ("MatMul",)]
    check_outputs(reference, auto, 3)


def test_a_segment_that_cannot_be_measured_is_compiled_and_says_why(tmp_path):
    needs_cc()

    class Failing:
        def segment(self, segment, compiled):
            raise TractileError("no inputs for this one")

        nodes = model = segment

    choices: list = []
    auto = compile_segments(tractile.load(mixed_proto()), cache_dir=tmp_path, by="cost", costs=Failing(),
                            choices=choices)
    assert len(compiled_ops(auto)) == 2 and all("not measured (no inputs for this one)" in c.why for c in choices)
    assert len(choices) == 3 and not list(tmp_path.glob(f"*/{DECISION_FILE}"))


def test_a_model_not_faster_with_its_segments_stays_interpreted(tmp_path):
    needs_cc()
    reference = tractile.load(mixed_proto())
    costs = FakeCosts({"first": (1.0, 2.0), "second": (1.0, 2.0), "joined": (1.0, 2.0)}, whole=(3.0, 3.1))
    choices: list = []
    auto = compile_segments(reference, cache_dir=tmp_path, by="cost", costs=costs, choices=choices)
    assert auto is reference and not compiled_ops(auto)
    assert [c.compiled for c in segment_rows(choices)] == [True, True] and not choices[-1].compiled
    assert choices[-1].why == "measured: interpreted is faster: no segment kept"
    again: list = []
    assert compile_segments(reference, cache_dir=tmp_path, by="cost", costs=NoCosts(), choices=again) is reference
    assert again[-1].why == "cached: interpreted is faster: no segment kept"
    unchecked = compile_segments(reference, cache_dir=tmp_path, by="cost", costs=NoCosts(), check=False)
    assert len(compiled_ops(unchecked)) == 2


def test_measure_takes_turns_and_reports_medians_of_the_clock(compile_cache):
    needs_cc()
    model = tractile.load(mlp_proto(1))
    built = compile_segments(model, cache_dir=compile_cache)
    compiled = next(n.op.compiled for n in built.nodes if isinstance(n.op, CompiledSegment))
    # the clock advances 5 over each compiled run, 1 over each interpreted one, 3 between runs
    steps = itertools.cycle([3.0, 5.0, 3.0, 1.0])
    now = [0.0]

    def clock() -> float:
        now[0] += next(steps)
        return now[0]

    assert measure(model, compiled, clock=clock, runs=9, budget=1e9) == (5.0, 1.0)
    ticks = now[0]
    assert measure(model, compiled, clock=clock, runs=9, budget=10.0) == (5.0, 1.0)
    assert now[0] - ticks == 5 * 12  # stopped after 5 pairs once past the budget


def test_measured_costs_per_node_name_every_node(tmp_path):
    needs_cc()
    model = tractile.load(mlp_proto(1))
    per_node = MeasuredCosts(tmp_path).nodes(model)
    names = {n.name for n in model.nodes if n.op.name not in ("Source", "Const")}
    assert set(per_node) == names
    assert all(c >= 0 and i > 0 for c, i in per_node.values())


def test_measured_costs_per_node_follow_the_nodes_through_the_layout_change(tmp_path):
    """Lowering puts a channels-first convolution between layout changes, so the program's node
    ids are those of another model than the segment's: the times still go to the right names."""
    needs_cc()
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="first_relu"),
         helper.make_node("Conv", ["r", "w"], ["y"], pads=[1, 1, 1, 1], name="the_conv")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [weights])
    model = tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    per_node = MeasuredCosts(tmp_path).nodes(model)
    assert set(per_node) == {"first_relu", "the_conv"}
    assert per_node["the_conv"][0] > 0


def test_load_auto_keeps_outputs_and_rejects_unknown_modes():
    needs_cc()
    reference = tractile.load(mlp_proto(1))
    auto = tractile.load(mlp_proto(1), compile="auto")
    x = np.random.default_rng(4).standard_normal((1, 1)).astype(np.float32)
    assert_same_outputs(reference.run([x]), auto.run([x]))
    with pytest.raises(TractileError, match="compile must be 'auto' or 'all'"):
        tractile.load(mlp_proto(1), compile="fast")
    with pytest.raises(TractileError, match="by must be 'all' or 'cost'"):
        compile_segments(reference, by="fast")


def test_run_and_profile_show_the_choices(tmp_path, capsys, monkeypatch):
    needs_cc()
    from tractile.cli.main import main as cli_main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_proto(1), path)
    assert cli_main(["run", str(path), "--compiled", "auto"]) == 0
    out = capsys.readouterr().out
    assert "compile='auto'" in out and "interpreted µs" in out and "measured:" in out
    assert cli_main(["profile", str(path), "--compiled", "auto", "--iters", "2", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert "cached:" in out and "of 1 candidate segments" in out and WHOLE_MODEL in out
