"""The ONNX backend node conformance suite, run through tractile's whole pipeline.

The ``onnx`` package ships its node test cases as code. :func:`materialize` writes
them once into a cache folder (model + data sets); :func:`run_case` loads a case
with :func:`tractile.load`, runs every data set and compares as the ONNX backend
runner does (same shapes and dtypes, ``assert_allclose`` at the case's tolerance,
strings equal).
"""
from __future__ import annotations

import functools
import json
import os
import pickle
import signal
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tractile"
CASE_TIMEOUT_SECONDS = 60


@dataclass
class CaseResult:
    name: str
    passed: bool
    reason: str = ""
    op_types: tuple[str, ...] = ()


def suite_dir(cache: Path | None = None) -> Path:
    import onnx

    return Path(cache or DEFAULT_CACHE) / f"onnx-node-{onnx.__version__}"


def materialize(cache: Path | None = None, progress=None) -> list[Path]:
    """Write every node test case to the cache (once) and return the case folders, sorted."""
    folder = suite_dir(cache)
    marker = folder / "complete.json"
    if folder.exists() and not marker.exists():
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    if marker.exists():
        names = json.loads(marker.read_text())["cases"]
        return [folder / name for name in names]
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    staging = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    staging.mkdir(parents=True, exist_ok=True)
    names = []
    for case in cases:
        case_folder = staging / case.name
        case_folder.mkdir(exist_ok=True)
        (case_folder / "model.onnx").write_bytes(case.model.SerializeToString())
        with open(case_folder / "data.pkl", "wb") as handle:
            pickle.dump(_plain(case.data_sets), handle)
        ops = sorted({n.op_type for n in case.model.graph.node})
        (case_folder / "meta.json").write_text(json.dumps({"rtol": case.rtol, "atol": case.atol, "ops": ops}))
        names.append(case.name)
        if progress:
            progress(case.name)
    names.sort()
    (staging / "complete.json").write_text(json.dumps({"cases": names}))
    try:
        os.rename(staging, folder)
    except OSError:  # another process finished first: use its copy
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return [folder / name for name in names]


def _plain(value):
    """Data sets with TensorProtos (exotic dtypes) turned into arrays."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _compare(expected, got, rtol: float, atol: float, where: str) -> None:
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            raise AssertionError(f"{where}: expected a sequence of {len(expected)}, got {type(got).__name__}")
        for index, (e, g) in enumerate(zip(expected, got)):
            _compare(e, g, rtol, atol, f"{where}[{index}]")
        return
    if expected is None or got is None:
        if expected is not got:
            raise AssertionError(f"{where}: expected {expected!r}, got {got!r}")
        return
    got = np.asarray(got)
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise AssertionError(f"{where}: shape {got.shape}, expected {expected.shape}")
    if expected.dtype == object:
        np.testing.assert_array_equal(got, expected, err_msg=where)
        return
    if got.dtype != expected.dtype:
        raise AssertionError(f"{where}: dtype {got.dtype}, expected {expected.dtype}")
    if got.dtype.name == "bfloat16":
        rtol = max(rtol, 2 ** -6)
        got, expected = got.astype(np.float32), expected.astype(np.float32)
    try:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    except TypeError:
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def run_case(folder: Path) -> CaseResult:
    """Load, analyse, optimize and run one case; compare each data set."""
    from ...errors import TractileError
    from . import load_onnx

    meta = json.loads((folder / "meta.json").read_text())
    ops = tuple(meta["ops"])
    with open(folder / "data.pkl", "rb") as handle:
        data_sets = pickle.load(handle)
    try:
        for index, (inputs, expected) in enumerate(data_sets):
            model = load_onnx(str(folder / "model.onnx"))
            for slot, value in enumerate(inputs):
                if isinstance(value, np.ndarray) and not model.input_fact(slot).is_complete():
                    model.set_input_fact(slot, value)
            typed = model.into_optimized()
            outputs = typed.plan().state(check_facts=True).run(list(inputs))
            _compare(list(expected), outputs, meta["rtol"], meta["atol"], f"data set {index}")
    except AssertionError as error:
        return CaseResult(folder.name, False, "mismatch: " + _first_line(error), ops)
    except TractileError as error:
        return CaseResult(folder.name, False, f"{type(error).__name__}: {_first_line(error)}", ops)
    except _Timeout:
        return CaseResult(folder.name, False, f"timeout after {CASE_TIMEOUT_SECONDS}s", ops)
    except Exception as error:
        return CaseResult(folder.name, False, f"crash: {type(error).__name__}: {_first_line(error)}", ops)
    return CaseResult(folder.name, True, "", ops)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    lines = [line.strip() for line in text if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {lines[1]}"[:600]
    return (lines[0] if lines else type(error).__name__)[:600]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_case_with_timeout(folder: Path, runner: Callable[[Path], CaseResult] | None = None) -> CaseResult:
    """Run one case with ``runner`` (default: a node-suite case), at most CASE_TIMEOUT_SECONDS."""
    if hasattr(signal, "SIGALRM"):
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(CASE_TIMEOUT_SECONDS)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return (runner or run_case)(folder)
    except _Timeout:
        return CaseResult(folder.stem if folder.suffix == ".onnx" else folder.name, False,
                          f"timeout after {CASE_TIMEOUT_SECONDS}s")
    finally:
        if hasattr(signal, "SIGALRM"):
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)


def run_suite(folders: list[Path], jobs: int = 1, progress=None,
              runner: Callable[[Path], CaseResult] | None = None) -> list[CaseResult]:
    """Run cases (in ``jobs`` worker processes) with ``runner`` (default: node-suite cases);
    ``progress(result)`` is called after each."""
    results = []
    if jobs <= 1:
        for folder in folders:
            result = run_case_with_timeout(folder, runner)
            results.append(result)
            if progress:
                progress(result)
        return results
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=200) as pool:
        run_one = functools.partial(run_case_with_timeout, runner=runner)
        for result in pool.imap_unordered(run_one, folders, chunksize=4):
            results.append(result)
            if progress:
                progress(result)
    results.sort(key=lambda r: r.name)
    return results


#: why some cases cannot pass, by the op that causes it
EXPLANATIONS = {
    "Bernoulli": "random draws: the suite's expected values come from NumPy's global generator, and the "
                 "ONNX test generator itself notes that they cannot match across implementations "
                 "(shapes and datum types do match)",
}


def _group(result: CaseResult, by_name: dict[str, CaseResult]) -> str:
    """The op a case is about: its single op, or the op of the case it is the expansion of."""
    if result.name.endswith("_expanded"):
        base = by_name.get(result.name[: -len("_expanded")])
        if base is not None:
            return _group(base, by_name)
    if len(result.op_types) == 1:
        return result.op_types[0]
    return "+".join(result.op_types) or "?"


def coverage_markdown(results: list[CaseResult], onnx_version: str) -> str:
    """The failing cases grouped by op, with reasons, as Markdown."""
    passed = sum(r.passed for r in results)
    lines = [
        "# ONNX node conformance coverage",
        "",
        f"onnx {onnx_version}: **{passed} passed, {len(results) - passed} failed of {len(results)}** "
        "(produced by `tractile conformance --coverage docs/ONNX_COVERAGE.md`; every case goes through "
        "load, analysis, the typed pipeline and an optimized run, with every value checked against its "
        "wire's fact).",
        "",
        "Failing cases, grouped by op, with the reason tractile gives:",
        "",
    ]
    by_name = {r.name: r for r in results}
    by_op: dict[str, list[CaseResult]] = {}
    for result in results:
        if not result.passed:
            by_op.setdefault(_group(result, by_name), []).append(result)
    for op in sorted(by_op):
        lines.append(f"## {op} ({len(by_op[op])})")
        lines.append("")
        if op in EXPLANATIONS:
            lines += [f"Why: {EXPLANATIONS[op]}.", ""]
        for result in by_op[op]:
            reason = result.reason.replace("|", "\\|").replace("\n", " ")
            lines.append(f"- `{result.name}`: {reason}")
        lines.append("")
    return "\n".join(lines)
