"""Coverage-guided fuzzing with atheris (libFuzzer for Python) of the TFLite reader, the ONNX
loader and the analyser: any exception other than a TractileError is a finding.

    make fuzz                                     # every target, FUZZ_SECONDS (default 60) each
    python -m tractile.tools.fuzz_atheris TARGET [libFuzzer flags, e.g. -max_total_time=60 CORPUS_DIR]

TARGET is ``tflite`` (the FlatBuffer reader and typing), ``onnx`` (protobuf parsing, checks,
translation) or ``analyse`` (ONNX models loaded, analysed, optimized and run when concrete).
Seeds: the shared models and the structural fuzzer's cases (tractile.tools.fuzz). Results are
recorded in docs/ROBUSTNESS.md.
"""
from __future__ import annotations

import sys
from pathlib import Path

TARGETS = ("tflite", "onnx", "analyse")


def make_target(kind: str):
    import numpy as np

    from ..errors import TractileError
    from .fuzz import _dims

    def target(data: bytes) -> None:
        try:
            if kind == "tflite":
                from ..formats.tflite import load_tflite

                load_tflite(b"\x1c\x00\x00\x00TFL3" + data[8:] if len(data) > 8 else data)
            elif kind == "onnx":
                from ..formats.onnx import load_onnx

                load_onnx(data)
            else:
                import tractile

                model = tractile.load(data, format="onnx")
                facts = model.input_facts
                shapes = [_dims(f) for f in facts]
                known = all(f.dtype is not None and all(isinstance(d, int) for d in dims)
                            for f, dims in zip(facts, shapes))
                if known and all(np.prod([int(d) for d in dims], dtype=float) <= 1e5 for dims in shapes):
                    model.run([np.zeros([int(d) for d in dims], f.dtype.np) for f, dims in zip(facts, shapes)])
        except TractileError:
            pass
        except RecursionError as error:  # a finding, reported as such by libFuzzer
            raise AssertionError(f"RecursionError: {error}") from None

    return target


def seeds(kind: str, folder: Path, shared: Path) -> None:
    """Write seed inputs for ``kind`` into ``folder`` (shared models, structural fuzzer cases)."""
    from .fuzz import cases

    folder.mkdir(parents=True, exist_ok=True)
    if kind == "tflite":
        for path in sorted((shared / "tflite").glob("*.tflite")):
            (folder / path.name).write_bytes(path.read_bytes())
        return
    for name, data in cases(64, seed=7, tflite_files=[]):
        (folder / name.replace("#", "_")).write_bytes(data)


def main(argv: list[str] | None = None) -> int:
    import atheris

    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] not in TARGETS:
        print(__doc__)
        return 2
    kind = argv.pop(1)
    target = make_target(kind)
    import tractile.formats.onnx
    import tractile.formats.tflite  # noqa: F401

    atheris.instrument_all()
    atheris.Setup(argv, target)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
