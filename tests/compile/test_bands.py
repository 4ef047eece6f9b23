"""Chains of convolutions computed in bands of rows (MCUNet's patch-based inference by rows):
bit for bit against the interpreter whatever the band height, strides, paddings and dilations,
less RAM on person_detect, and --max-ram that splits layers until the budget is met."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tractile.compile import generate, prepare
from tractile.compile.bands import Chain, band_table, chains_of
from tractile.compile.budget import fit_ram_budget, planned_ram

from ..conftest import shared_model
from ..tflite.builder import GraphBuilder, Window2D, qc
from .harness import assert_same_outputs, compiled, q, random_input


def conv_chain(dtype: str, windows: list[Window2D]):
    """conv 3×3 (windows[0]) -> depthwise 3×3 (windows[1]) -> pointwise 1×1 -> depthwise 3×3 (windows[2]),
    on a 1×13×11×3 input; int8 per-channel or float32."""
    rng = np.random.default_rng(len(dtype) + sum(w.stride_h for w in windows))
    g = GraphBuilder()
    quantized = dtype == "i8"
    act_q = (lambda zero: q(2 ** -5, zero)) if quantized else (lambda zero: None)  # noqa: E731
    x = g.input("x", dtype, (1, 13, 11, 3), act_q(3))
    layers = [("conv", (6, 3, 3, 3), windows[0]), ("dw", (1, 3, 3, 6), windows[1]), ("conv", (8, 1, 1, 6),
                                                                                      Window2D("SAME", 1, 1)),
              ("dw", (1, 3, 3, 8), windows[2])]
    for index, (kind, shape, window) in enumerate(layers):
        filters = shape[3] if kind == "dw" else shape[0]
        if quantized:
            w = g.const(f"w{index}", rng.integers(-127, 128, shape), "i8",
                        qc([2 ** -7 * (1 + k % 3) for k in range(filters)], 3 if kind == "dw" else 0))
            b = g.const(f"b{index}", rng.integers(-2000, 2000, filters), "i32", None)
        else:
            w = g.const(f"w{index}", rng.standard_normal(shape), "f32")
            b = g.const(f"b{index}", rng.standard_normal(filters), "f32")
        build = g.depthwise if kind == "dw" else g.conv
        x = build(f"y{index}", [x, w, b], window, act_q(-2 - index), "RELU6" if index or kind == "dw" else "NONE")
    return g.outputs(x)


WINDOWS = [
    [Window2D("SAME", 1, 1), Window2D("SAME", 1, 1), Window2D("SAME", 1, 1)],
    [Window2D("SAME", 2, 2), Window2D("SAME", 1, 1), Window2D("SAME", 2, 2)],
    [Window2D("VALID", 1, 1, 2, 2), Window2D("SAME", 2, 1), Window2D("VALID", 1, 1)],
]


@pytest.mark.parametrize("dtype", ["i8", "f32"])
@pytest.mark.parametrize("windows", WINDOWS, ids=lambda w: "_".join(map(str, w)))
def test_a_chain_in_bands_equals_the_interpreter(dtype, windows, compile_cache):
    model = conv_chain(dtype, windows)
    (run,) = chains_of(model.into_optimized())
    assert len(run) == 4
    rng = np.random.default_rng(0)
    inputs = [random_input(model.input_facts[0], rng) for _ in range(3)]
    expected = [model.run([x]) for x in inputs]
    for nodes, rows in ((run, 1), (run, 2), (run[1:], 3), (run[:2], 5)):
        cm = compiled(model, compile_cache, name="bands", opt="size", chains=[Chain(tuple(nodes), rows)])
        kinds = [n["op"] for n in cm.source.report["nodes"]]
        assert any(kind.startswith("Bands(") for kind in kinds)
        for x, want in zip(inputs, expected):
            assert_same_outputs(want, cm.run([x]), rtol=1e-5, atol=1e-5, what=f"{nodes} in bands of {rows}")


def test_band_rows_cover_what_each_layer_reads():
    # (in_h, out_h, stride, dilation, k_h, top): 3×3 stride 2 SAME on 9 rows, then 3×3 stride 1 SAME
    table = band_table([(9, 5, 2, 1, 3, 1), (5, 5, 1, 1, 3, 1)], 2)
    assert table.shape == (3, 10)
    # band 0: output rows 0-1 of the last layer read rows 0-2 of the middle one, which read input rows 0-5
    assert list(table[0]) == [0, 6, 0, 3, 1, 0, 3, 0, 2, 1]
    # the last band: output row 4 reads middle rows 3-4, which read input rows 5-8 (top padding 0 in the band)
    assert list(table[2]) == [5, 4, 3, 2, 0, 3, 2, 4, 1, 0]


def test_person_detect_fits_below_the_smallest_unbanded_ram():
    model = tractile.load(shared_model("tflite/person_detect.tflite"))
    typed = prepare(model)
    unbanded = planned_ram(generate(typed, "pd", "cortex-m4", optimize=False).report)
    budget = unbanded * 2 // 3
    source = fit_ram_budget(typed, budget, "pd", "cortex-m4")
    assert planned_ram(source.report) <= budget < unbanded
    split = [*source.program.chains, *source.program.regions]
    assert split and split[0].nodes[0] in chains_of(typed)[0][:2]
    # bit for bit: test_person_detect_in_bands_verifies_on_the_cortex_m4 runs a banded schedule


def test_an_unreachable_budget_is_refused_with_the_smallest_ram_reached():
    typed = prepare(conv_chain("i8", WINDOWS[0]))
    unbanded = planned_ram(generate(typed, "chain", "cortex-m4", optimize=False).report)
    with pytest.raises(tractile.TractileError,
                       match=r"needs at least (\d+) B of RAM.*(in bands of|by rows).*budget of 100 B") \
            as refused:
        fit_ram_budget(typed, 100, "chain", "cortex-m4")
    reached = int(refused.value.args[0].split("needs at least ")[1].split(" B")[0])
    assert 100 < reached < unbanded
    assert planned_ram(fit_ram_budget(typed, reached, "chain", "cortex-m4").report) == reached


def test_person_detect_in_bands_verifies_on_the_cortex_m4(tmp_path):
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available
    from tractile.compile.targets.verify import verify

    missing = toolchain_available(board_for("cortex-m4", None))
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (make test installs them with apt-get as root)")
    model = tractile.load(shared_model("tflite/person_detect.tflite"))
    unbanded = planned_ram(generate(prepare(model), "pd", "cortex-m4", optimize=False).report)
    report = verify(model, "cortex-m4", runs=1, folder=tmp_path, max_ram=30_000)
    assert report["verified"], report["first_difference"]
    ram = report["ram_bytes"]
    assert ram["arena"] + ram["state"] + ram["io"] <= 30_000 < unbanded
    assert report["schedule"] and report["layers"][0]["op"].startswith(("Bands(", "Rows("))
