"""The compile report as one self-contained HTML page (``tractile compile --report``,
``CompiledModel.report_html``): the summary (arena, state, inputs and outputs, constants;
flash, code per kernel family, stack and instructions when the model was verified on an
emulated board; TFLite Micro's arena for the same model), the memory plan drawn (one row per
node, the arena left to right, every planned tensor a rectangle over its lifetime at its
offset), the sortable per-layer table and the state (ring buffers of streaming models).

Everything drawn comes from the compiler's own report (:mod:`tractile.compile.report`)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TractileError
from .html_page import render_page


@dataclass
class ReportPage:
    """What was written: the path, the tensors drawn, the peak step, the page's size."""

    path: str
    tensors: int
    peak_step: int
    bytes: int


def report_page_data(source, verification: dict | None = None, micro: dict | None = None,
                     origin: str | None = None) -> dict[str, Any]:
    """The page's data: ``source``'s compile report, the ``verification`` report of
    :func:`~tractile.compile.targets.verify.verify_source` (or None), TFLite Micro's arena
    (:func:`~tractile.tools.micro_arena.tflite_micro_arena`, or None) and where the model came from."""
    report = source.report
    if verification is not None and len(verification.get("layers", [])) != len(report["nodes"]):
        raise TractileError("the verification report is of another build: its layers do not match the nodes")
    return {"title": report["name"], "origin": origin or "", "report": report, "verification": verification,
            "micro": micro}


def render_report(data: dict[str, Any]) -> str:
    """The page of :func:`report_page_data`'s ``data``."""
    return render_page("report.html", data, str(data["report"]["name"]),
                       {"/*__STYLE__*/": "report.css", "/*__SCRIPT__*/": "report.js"})


def write_report(source, path: str | os.PathLike, verification: dict | None = None,
                 tflite: str | os.PathLike | None = None, origin: str | None = None) -> ReportPage:
    """Write the report page of ``source`` (a :class:`~tractile.compile.CSource`) to ``path``;
    ``tflite``: the model's TFLite file, run in TFLite Micro (when installed) for its arena."""
    micro = None
    if tflite is not None:
        from .micro_arena import tflite_micro_arena

        micro = tflite_micro_arena(tflite)
    data = report_page_data(source, verification, micro, origin)
    page = render_report(data)
    try:
        Path(path).write_text(page, encoding="utf-8")
    except OSError as error:
        raise TractileError(f"cannot write {path}: {error.strerror or error}") from None
    return ReportPage(str(path), len(source.report["tensors"]), source.report["peak"]["step"],
                      len(page.encode("utf-8")))


__all__ = ["report_page_data", "render_report", "write_report", "ReportPage"]
