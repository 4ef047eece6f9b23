"""The seeded structural fuzzer: a few hundred hostile ONNX models and mutated TFLite files,
each in a worker process with a time limit and an address-space cap; every case must end in
a result or a TractileError (never another exception, a crash or a hang)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import tractile
from tractile.compile import render
from tractile.tools.fuzz import cases, check_generated_c, names_case, run_cases

from ..conftest import SHARED_MODELS


def test_hostile_models_end_in_a_result_or_a_tractile_error():
    tflite = sorted(Path(SHARED_MODELS, "tflite").glob("*.tflite")) if Path(SHARED_MODELS).exists() else []
    made = cases(300, seed=2026, tflite_files=tflite)
    verdicts = run_cases(made, timeout=10.0, memory_mb=4096)
    assert len(verdicts) == len(made)
    escaped = {name: verdict for name, verdict in verdicts.items() if verdict not in ("ok", "refused")}
    assert not escaped, escaped
    assert sum(v == "refused" for v in verdicts.values()) > 100 and sum(v == "ok" for v in verdicts.values()) > 10
    names = [name for name, _ in made if name.startswith("names#")]
    assert len(names) >= 20 and all(verdicts[name] == "ok" for name in names)


def test_a_name_escaping_into_c_is_caught(monkeypatch, tmp_path):
    """The names cases' check fails when a name reaches C unescaped (the issue's bug, put back)."""
    pytest.importorskip("onnx")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    rng = np.random.default_rng(5)
    model = tractile.load(names_case(rng, tmp_path / "marker"))
    assert check_generated_c(model, tmp_path / "marker") is None
    monkeypatch.setattr(render, "c_string", lambda text: '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    found = [check_generated_c(tractile.load(names_case(rng, tmp_path / "marker")), tmp_path / "marker")
             for _ in range(3)]
    assert any(problem and "does not build" in problem for problem in found), found


FAKE_WORKER = """
import json, os, sys
for line in sys.stdin:
    name, _ = json.loads(line)
    if name == "poison":
        os._exit(9)
    print(json.dumps([name, "ok"]), flush=True)
"""


def test_a_crash_is_caught_and_named_and_the_other_cases_still_run(monkeypatch):
    """The harness itself: a case that kills its worker is reported; a new worker takes the rest."""
    import sys

    import tractile.tools.fuzz as fuzz

    made = cases(3, seed=1, tflite_files=[])
    poisoned = [made[0], ("poison", b"\x00" * 8), made[1], made[2]]
    monkeypatch.setattr(fuzz, "worker_command", lambda timeout, memory_mb: [sys.executable, "-c", FAKE_WORKER])
    verdicts = run_cases(poisoned, timeout=5.0)
    assert verdicts["poison"].startswith("CRASHED (exit status 9)")
    assert [verdicts[name] for name, _ in made] == ["ok", "ok", "ok"]
