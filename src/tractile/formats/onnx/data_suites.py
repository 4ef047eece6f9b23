"""The model suites the ``onnx`` package ships as data (``onnx/backend/test/data/<suite>/<case>/``:
a ``model.onnx`` and ``test_data_set_*/{input,output}_*.pb``), run through tractile's pipeline.

``pytorch-converted`` and ``pytorch-operator`` hold models exported by early PyTorch (opsets
1 to 9, legacy attributes such as ``broadcast``/``axis`` on binary ops); they are compared as
the ONNX backend runner compares them (``rtol=1e-3``, ``atol=1e-7``).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .conformance import CaseResult, _compare, _first_line

DATA_SUITES = ("pytorch-converted", "pytorch-operator")
RTOL, ATOL = 1e-3, 1e-7


def suite_cases(suite: str) -> list[Path]:
    """The case folders of one of the data suites the installed ``onnx`` package ships, sorted."""
    import onnx

    root = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / suite
    return sorted(path for path in root.iterdir() if (path / "model.onnx").exists())


def _read_tensors(folder: Path, kind: str) -> list[np.ndarray]:
    from onnx import TensorProto, numpy_helper

    files = sorted(folder.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
    tensors = []
    for path in files:
        proto = TensorProto()
        proto.ParseFromString(path.read_bytes())
        tensors.append(numpy_helper.to_array(proto))
    return tensors


def run_data_case(folder: Path) -> CaseResult:
    """Load the case's model, run every data set, compare with the expected outputs."""
    from ...errors import TractileError
    from . import load_onnx

    try:
        data_sets = sorted(folder.glob("test_data_set_*"))
        for data in data_sets:
            inputs, expected = _read_tensors(data, "input"), _read_tensors(data, "output")
            model = load_onnx(str(folder / "model.onnx"))
            for slot, value in enumerate(inputs):
                if not model.input_fact(slot).is_complete():
                    model.set_input_fact(slot, value)
            typed = model.into_optimized()
            outputs = typed.plan().state(check_facts=True).run(list(inputs))
            _compare(expected, outputs, RTOL, ATOL, data.name)
    except AssertionError as error:
        return CaseResult(folder.name, False, "mismatch: " + _first_line(error))
    except TractileError as error:
        return CaseResult(folder.name, False, f"{type(error).__name__}: {_first_line(error)}")
    except Exception as error:
        return CaseResult(folder.name, False, f"crash: {type(error).__name__}: {_first_line(error)}")
    return CaseResult(folder.name, True)
