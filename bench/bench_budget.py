"""RAM against instructions under ``--max-ram`` budgets, on MLPerf Tiny's reference models.

    python bench/bench_budget.py [--models kws,vww,ic] [--points 6]

For each model: the firmware without a budget, then budgets from just below its planned RAM
down to the smallest RAM the search reaches (found by asking for 0 B), evenly spaced. Each
firmware is built for the Cortex-M4 (mps2-an386) for speed (-O2), with the inputs in the arena,
run in QEMU on one random input, checked bit for bit against the interpreter, and measured:
planned RAM (arena with the input, state, outputs), RAM total (the context, the outputs and the
peak stack) and instructions per inference (QEMU -icount). The schedule column says what the
search chose: ``rows a-b/R`` computes nodes a..b by rows, R output rows a step; ``bands a-b/R``
recomputes them in bands of R rows.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

MODELS_DIR = HERE.parent.parent / "shared" / "models" / "mlperf_tiny"
MODELS = {"kws": "kws_dscnn_int8", "vww": "vww_96_int8", "ic": "resnet8_int8"}
#: the issue's goals: RAM total in bytes (HALE's min-RAM mode runs IC in 21,104 B)
GOALS = {"kws": 8_000, "vww": 36_000, "ic": 21_000}


def smallest_ram(typed, name: str) -> int:
    """The least planned RAM the budget search reaches (it refuses 0 B, naming it)."""
    import tractile
    from tractile.compile.budget import fit_ram_budget

    try:
        fit_ram_budget(typed, 0, name, "cortex-m4", inputs_in_arena=True)
    except tractile.TractileError as refused:
        return int(str(refused).split("needs at least ")[1].split(" B")[0])
    return 0


def schedule_text(schedule: list[dict]) -> str:
    return " ".join(f"{part['kind']} {part['nodes'][0]}-{part['nodes'][-1]}/{part['rows']}" for part in schedule) \
        or "-"


def main() -> int:
    import tractile
    from tractile.compile import prepare
    from tractile.compile.targets.verify import verify, with_flavour

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--points", type=int, default=6, help="budgets per model, smallest included")
    args = parser.parse_args()
    print(f"{'model':6} {'budget':>7} {'planned':>8} {'RAM total':>9} {'stack':>6} {'instructions':>13} "
          f"{'x':>5}  ok  schedule")
    for key in args.models.split(","):
        name = MODELS[key]
        model = tractile.load(MODELS_DIR / f"{name}.tflite")
        typed = with_flavour(prepare(model), "micro")
        least = smallest_ram(typed, name)
        base = None
        with tempfile.TemporaryDirectory() as work:
            first = verify(typed, "cortex-m4", runs=1, opt="speed", profile=False, inputs_in_arena=True,
                           folder=Path(work) / "base", name=name)
            planned = first["ram_bytes"]["arena"] + first["ram_bytes"]["state"] + first["ram_bytes"]["io"]
            budgets = [None] + sorted({least + (planned - 1 - least) * k // (args.points - 1)
                                       for k in range(args.points)}, reverse=True)
            for budget in budgets:
                report = first if budget is None else verify(
                    typed, "cortex-m4", runs=1, opt="speed", profile=False, inputs_in_arena=True, max_ram=budget,
                    compare_unconstrained=False, folder=Path(work) / str(budget), name=name)
                ram = report["ram_bytes"]
                base = base or report["cycles_per_inference"]
                print(f"{key:6} {budget or '-':>7} {ram['arena'] + ram['state'] + ram['io']:>8} {ram['total']:>9} "
                      f"{ram['stack_peak']:>6} {report['cycles_per_inference']:>13} "
                      f"{report['cycles_per_inference'] / base:>5.2f}  {'yes' if report['verified'] else 'NO':3} "
                      f"{schedule_text(report['schedule'])}", flush=True)
        print(f"{key:6} goal: RAM total <= {GOALS[key]} B at most 2x the instructions; smallest planned RAM {least} B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
