"""Regions computed by rows with line buffers (residual additions, branches joined by a
concatenation, window and global pools): bit for bit against the interpreter whatever the
region and the rows per step, each row computed once, line buffers no taller than the
windows need, and --max-ram meeting budgets on MLPerf Tiny's residual network."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tractile.compile import generate, prepare
from tractile.compile.budget import fit_ram_budget, planned_ram
from tractile.compile.budget_search import memory_order, row_runs
from tractile.compile.rows import Region, schedule_region
from tractile.ops.array import Concat
from tractile.ops.binary import Add

from ..conftest import shared_model
from ..tflite.builder import GraphBuilder, Window2D, qc
from .harness import assert_same_outputs, compiled, q, random_input


def residual_net(dtype: str, second_output: bool = False):
    """conv 3x3 -> [depthwise 3x3 dilated -> conv 1x1] + (residual add) -> [conv 3x3 stride 2 |
    conv 1x1 stride 2] -> concatenation -> max pool 2x2 -> global average pool, on 1x13x10x3."""
    rng = np.random.default_rng(len(dtype) + second_output)
    g = GraphBuilder()
    quantized = dtype == "i8"
    act_q = (lambda zero: q(2 ** -4, zero)) if quantized else (lambda zero: None)  # noqa: E731
    x = g.input("x", dtype, (1, 13, 10, 3), act_q(5))
    count = [0]

    def conv(x, kind: str, shape, window: Window2D, zero: int):
        count[0] += 1
        filters = shape[3] if kind == "dw" else shape[0]
        if quantized:
            w = g.const(f"w{count[0]}", rng.integers(-127, 128, shape), "i8",
                        qc([2 ** -7 * (1 + k % 3) for k in range(filters)], 3 if kind == "dw" else 0))
            b = g.const(f"b{count[0]}", rng.integers(-3000, 3000, filters), "i32", None)
        else:
            w = g.const(f"w{count[0]}", rng.standard_normal(shape) / 3, "f32")
            b = g.const(f"b{count[0]}", rng.standard_normal(filters), "f32")
        if kind == "dw":
            return g.depthwise(f"y{count[0]}", [x, w, b], window, act_q(zero), "RELU6")
        return g.conv(f"y{count[0]}", [x, w, b], window, act_q(zero), "RELU")

    x0 = conv(x, "conv", (8, 3, 3, 3), Window2D("SAME", 1, 1), -4)
    a = conv(x0, "dw", (1, 3, 3, 8), Window2D("SAME", 1, 1, 2, 1), -5)
    b = conv(a, "conv", (8, 1, 1, 8), Window2D("SAME", 1, 1), 3)
    r = g.binary("residual", "add", [x0, b], act_q(-20))
    c1 = conv(r, "conv", (5, 3, 3, 8), Window2D("SAME", 2, 2), -6)
    c2 = conv(r, "conv", (4, 1, 1, 8), Window2D("SAME", 2, 2), -6)
    joined = g.op("joined", Concat(axis=3), [c1, c2])
    pooled = g.pool("pooled", "max", joined, Window2D("SAME", 1, 1), 2, 2)
    average = g.pool("average", "average", pooled, Window2D("VALID", 1, 1), 7, 5, act_q(-6))
    return g.outputs(average, r) if second_output else g.outputs(average)


@pytest.mark.parametrize("dtype", ["i8", "f32"])
@pytest.mark.parametrize("second_output", [False, True])
def test_a_region_equals_the_interpreter(dtype, second_output, compile_cache):
    model = residual_net(dtype, second_output)
    typed = prepare(model)
    (run,) = row_runs(typed)
    assert len(run) == 9
    rng = np.random.default_rng(1)
    inputs = [random_input(model.input_facts[0], rng) for _ in range(3)]
    expected = [model.run([x]) for x in inputs]
    for nodes, rows in ((run, 1), (run, 2), (run[1:5], 3), (run[3:], 1), (run[:4], 8)):
        cm = compiled(typed, compile_cache, name="rows", opt="size", regions=[Region(tuple(nodes), rows)])
        kinds = [n["op"] for n in cm.source.report["nodes"]]
        assert sum(kind.startswith("Rows(") for kind in kinds) == 1
        for x, want in zip(inputs, expected):
            assert_same_outputs(want, cm.run([x]), rtol=1e-5, atol=1e-5, what=f"{nodes} by {rows} rows")


def test_every_row_is_computed_once_and_buffers_hold_the_windows():
    typed = prepare(residual_net("i8"))
    (run,) = row_runs(typed)
    schedule = schedule_region(typed, Region(tuple(run), 1))
    heights = {layer.node: schedule.tensors[layer.output].height for layer in schedule.layers}
    computed = schedule.rows_computed()
    assert {schedule.layers[i].node: rows for i, rows in computed.items()} == heights
    capacity = {outlet.node: rows for outlet, rows in schedule.capacity.items()}
    x0, a, b, residual = run[:4]
    # the depthwise layer dilated by 2 reads 5 rows of x0, which the addition reads 2 rows behind
    assert capacity[x0] == 5 and capacity[a] == 1 and capacity[b] == 1
    # the residual sum feeds two stride-2 layers (3 rows and 1 row): 3 rows kept
    assert capacity[residual] == 3
    assert schedule.buffer_bytes < sum(t.height * t.row_bytes for t in schedule.tensors.values() if not t.whole)


def test_budgets_between_the_unconstrained_ram_and_the_smallest_are_met(compile_cache):
    typed = prepare(residual_net("i8"))
    unconstrained = planned_ram(generate(typed, "net", "cortex-m4", optimize=False, inputs_in_arena=True).report)
    with pytest.raises(tractile.TractileError, match=r"needs at least (\d+) B of RAM.*by rows.*budget of 100 B") \
            as refused:
        fit_ram_budget(typed, 100, "net", "cortex-m4", inputs_in_arena=True)
    smallest = int(refused.value.args[0].split("needs at least ")[1].split(" B")[0])
    assert smallest < unconstrained * 2 // 3
    for budget in (unconstrained - 64, (unconstrained + smallest) // 2, smallest):
        source = fit_ram_budget(typed, budget, "net", "cortex-m4", inputs_in_arena=True)
        assert planned_ram(source.report) <= budget
        assert source.report["budget"]["schedule"] and source.report["budget"]["unconstrained_ram"] == unconstrained
        parts = source.program.regions + source.program.chains
        cm = compiled(typed, compile_cache, name="net", inputs_in_arena=True, regions=source.program.regions,
                      chains=source.program.chains)
        rng = np.random.default_rng(budget)
        x = random_input(cm.input_facts[0], rng)
        assert_same_outputs(typed.run([x]), cm.run([x]), what=f"budget {budget}: {parts}")


def test_resnet8_meets_the_ic_budget_with_the_whole_network_by_rows():
    model = tractile.load(shared_model("mlperf_tiny/resnet8_int8.tflite"))
    typed = prepare(model)
    source = fit_ram_budget(typed, 20_000, "ic", "cortex-m4", inputs_in_arena=True)
    assert planned_ram(source.report) <= 20_000 < source.report["budget"]["unconstrained_ram"]
    (region,) = source.program.regions
    adds = [n for n in region.nodes if isinstance(typed.nodes[n].op, Add)]
    assert len(adds) >= 2, "the residual additions run by rows"


def _verify_budget(name: str, budget: int, **options) -> dict:
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available
    from tractile.compile.targets.verify import verify

    missing = toolchain_available(board_for("cortex-m4", None))
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    model = tractile.load(shared_model(f"mlperf_tiny/{name}.tflite"))
    report = verify(model, "cortex-m4", max_ram=budget, inputs_in_arena=True, profile=False, opt="speed", **options)
    assert report["verified"], report["first_difference"]
    return report


def test_kws_runs_in_8000_bytes_on_the_cortex_m4_at_most_twice_as_long(tmp_path):
    sample = np.load(shared_model("mlperf_tiny/testdata/kws_dscnn_int8_sample.npy")).reshape(1, 49, 10, 1)
    report = _verify_budget("kws_dscnn_int8", 7_500, runs=1, inputs=[[sample.astype(np.int8)]], folder=tmp_path)
    ram, base = report["ram_bytes"], report["unconstrained"]
    assert ram["total"] <= 8_000 < base["ram_total"], (ram, base)
    assert report["cycles_per_inference"] <= 2 * base["cycles_per_inference"]
    assert report["schedule"][0]["kind"] == "rows"


def test_resnet8_runs_in_21000_bytes_on_the_cortex_m4(tmp_path):
    report = _verify_budget("resnet8_int8", 20_000, runs=1, folder=tmp_path, compare_unconstrained=False)
    assert report["ram_bytes"]["total"] <= 21_000, report["ram_bytes"]


def two_branches():
    """add(conv 1x1 stride 2 of x, conv 1x1 stride 2 of a 16 KB expansion of x): computed in the
    model's order, the first branch's result waits beside the second's expansion."""
    rng = np.random.default_rng(7)
    g = GraphBuilder()
    x = g.input("x", "i8", (1, 16, 16, 4), q(0.05, 0))

    def conv(x, cin: int, cout: int, stride: int, name: str):
        w = g.const(f"w_{name}", rng.integers(-127, 128, (cout, 1, 1, cin)), "i8", qc([0.01] * cout, 0))
        b = g.const(f"b_{name}", rng.integers(-100, 100, cout), "i32")
        return g.conv(name, [x, w, b], Window2D("SAME", stride, stride), q(0.05, 0))

    small = conv(conv(x, 4, 64, 1, "wide"), 64, 32, 2, "small")
    return g.outputs(g.binary("sum", "add", [conv(x, 4, 32, 2, "big"), small], q(0.1, 0)))


def test_reordering_independent_branches_meets_a_budget_without_splitting_layers(compile_cache):
    typed = prepare(two_branches())
    default = typed.eval_order(typed.outputs)
    order = memory_order(typed)
    assert sorted(order) == sorted(default) and order != tuple(default)
    for position, node in enumerate(order):
        assert all(order.index(o.node) < position for o in typed.nodes[node].inputs), "a topological order"
    unconstrained = planned_ram(generate(typed, "net", "cortex-m4", optimize=False).report)
    reordered = planned_ram(generate(typed, "net", "cortex-m4", optimize=False, order=order).report)
    assert reordered < unconstrained
    source = fit_ram_budget(typed, reordered, "net", "cortex-m4")
    assert planned_ram(source.report) == reordered and not source.program.regions and not source.program.chains
    assert [part["kind"] for part in source.report["budget"]["schedule"]] == ["order"]
    cm = compiled(typed, compile_cache, name="net", order=order)
    x = random_input(cm.input_facts[0], np.random.default_rng(2))
    assert_same_outputs(typed.run([x]), cm.run([x]))


def test_a_residual_network_too_big_for_the_atmega328p_fits_by_rows(tmp_path):
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available
    from tractile.compile.targets.verify import verify

    missing = toolchain_available(board_for("avr", None))
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    model = residual_net("i8")
    with pytest.raises(tractile.TractileError, match="does not fit atmega328p"):
        verify(model, "avr", runs=1, inputs_in_arena=True, profile=False, folder=tmp_path / "whole")
    report = verify(model, "avr", runs=2, max_ram=1_500, inputs_in_arena=True, profile=False, folder=tmp_path / "rows")
    assert report["verified"], report["first_difference"]
    assert report["schedule"] and report["ram_bytes"]["firmware"] <= 2_048
