"""The model suites the ``onnx`` package ships as data (``onnx/backend/test/data/<suite>/``), run
through tractile's pipeline.

- ``pytorch-converted`` and ``pytorch-operator``: models exported by early PyTorch (opsets 1 to 9,
  legacy attributes such as ``broadcast``/``axis`` on binary ops), and ``simple``: small models
  (sequences, string normalisation, Expand, gradients); each case is a folder with a
  ``model.onnx`` and ``test_data_set_*/{input,output}_*.pb``.
- ``light``: the classic vision models (AlexNet, DenseNet121, Inception v1/v2, ResNet50,
  ShuffleNet, SqueezeNet, VGG19, ZFNet512) with their weights replaced by ``ConstantOfShape``
  fills: ``light_NAME.onnx`` and ``light_NAME_output_0.pb``, the output for the input the ONNX
  backend runner generates (``arange(n) / n`` in the input's shape, symbolic dims as 1).

Outputs are compared as the ONNX backend runner compares them: ``rtol=1e-3`` (DenseNet121
``2e-3``), ``atol=1e-7``.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .conformance import CaseResult, _compare, _first_line

DATA_SUITES = ("pytorch-converted", "pytorch-operator", "simple", "light")
RTOL, ATOL = 1e-3, 1e-7
#: the ONNX backend runner's relative tolerances for the light models that differ from RTOL
LIGHT_RTOL = {"light_densenet121": 2e-3}


def suite_root(suite: str) -> Path:
    """The folder of one of the data suites in the installed ``onnx`` package."""
    import onnx

    if suite not in DATA_SUITES:
        raise ValueError(f"unknown data suite {suite!r}: one of {', '.join(DATA_SUITES)}")
    return Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / suite


def suite_cases(suite: str) -> list[Path]:
    """The cases of a data suite, sorted: case folders, or the ``.onnx`` files of ``light``."""
    root = suite_root(suite)
    if suite == "light":
        return sorted(path for path in root.glob("light_*.onnx"))
    return sorted(path for path in root.iterdir() if (path / "model.onnx").exists())


def case_name(case: Path) -> str:
    """A case's name in listings: its folder's name, or its file's stem for ``light``."""
    return case.stem if case.suffix == ".onnx" else case.name


def _read_tensor(path: Path) -> np.ndarray:
    from onnx import TensorProto, numpy_helper

    proto = TensorProto()
    proto.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(proto)


def _read_tensors(folder: Path, kind: str) -> list[np.ndarray]:
    files = sorted(folder.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
    return [_read_tensor(path) for path in files]


def _run(model_path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    from . import load_onnx

    model = load_onnx(str(model_path))
    for slot, value in enumerate(inputs):
        if not model.input_fact(slot).is_complete():
            model.set_input_fact(slot, value)
    typed = model.into_optimized()
    return typed.plan().state(check_facts=True).run(list(inputs))


def light_inputs(model_path: Path) -> list[np.ndarray]:
    """The inputs the ONNX backend runner feeds a light model: ``arange(n) / n`` per graph input
    that is not an initializer, in its declared shape with symbolic dims taken as 1."""
    import onnx

    proto = onnx.load(str(model_path), load_external_data=False)
    initializers = {init.name for init in proto.graph.initializer}
    inputs = []
    for value_info in proto.graph.input:
        if value_info.name in initializers:
            continue
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in value_info.type.tensor_type.shape.dim)
        count = int(np.prod(shape))
        inputs.append((np.arange(count).reshape(shape) / count).astype(np.float32))
    return inputs


def _check_case(case: Path) -> None:
    if case.suffix == ".onnx":
        expected = [_read_tensor(case.with_name(f"{case.stem}_output_0.pb"))]
        outputs = _run(case, light_inputs(case))
        _compare(expected, outputs[:1], LIGHT_RTOL.get(case.stem, RTOL), ATOL, case.stem)
        return
    for data in sorted(case.glob("test_data_set_*")):
        inputs, expected = _read_tensors(data, "input"), _read_tensors(data, "output")
        _compare(expected, _run(case / "model.onnx", inputs), RTOL, ATOL, data.name)


def run_data_case(case: Path) -> CaseResult:
    """Load the case's model, run every data set, compare with the expected outputs."""
    from ...errors import TractileError

    name = case_name(case)
    try:
        _check_case(case)
    except AssertionError as error:
        details = [line.strip() for line in str(error).splitlines() if line.strip().startswith(("Max", "Mismatched"))]
        return CaseResult(name, False, "; ".join(["mismatch: " + _first_line(error), *details]))
    except TractileError as error:
        return CaseResult(name, False, f"{type(error).__name__}: {_first_line(error)}")
    except Exception as error:
        return CaseResult(name, False, f"crash: {type(error).__name__}: {_first_line(error)}")
    return CaseResult(name, True)
