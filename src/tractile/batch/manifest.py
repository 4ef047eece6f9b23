"""The job's manifest: one JSON line per input (input, output, status, error, seconds), appended
by the coordinating process only, so lines never interleave; a rerun reads it to resume."""
from __future__ import annotations

import json
from pathlib import Path

from .files import result_is_valid

MANIFEST = "manifest.jsonl"


class Manifest:
    """Appends records to ``out/manifest.jsonl`` and knows what earlier runs finished."""

    def __init__(self, out: Path):
        self.path = Path(out) / MANIFEST
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.last: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by an interruption
                if isinstance(record, dict) and "input" in record:
                    self.last[record["input"]] = record

    def pending(self, inputs: list[Path], output_names: list[str], retry_failed: bool) -> tuple[list[Path], int, int]:
        """(inputs still to run, how many are done and verified, how many failed before and are left)."""
        todo, done, failed = [], 0, 0
        for path in inputs:
            record = self.last.get(str(path))
            if record and record.get("status") == "done" and result_is_valid(Path(record["output"]), output_names):
                done += 1
            elif record and record.get("status") == "failed" and not retry_failed:
                failed += 1
            else:
                todo.append(path)
        return todo, done, failed

    def append(self, record: dict) -> None:
        with self.path.open("a") as stream:
            stream.write(json.dumps(record) + "\n")
            stream.flush()
        self.last[record["input"]] = record
