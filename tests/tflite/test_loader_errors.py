"""Malformed .tflite files give ModelFormatError naming where, never a crash or a hang."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import shared_model
from tractile import load
from tractile.errors import ModelFormatError, TractileError
from tractile.formats.tflite import load_tflite


def hello_world_bytes() -> bytes:
    return shared_model("tflite/hello_world_int8.tflite").read_bytes()


def test_not_a_tflite_file():
    with pytest.raises(ModelFormatError, match="TFL3"):
        load_tflite(b"\x00" * 64)
    with pytest.raises(ModelFormatError, match="only 3 bytes"):
        load_tflite(b"abc")


@pytest.mark.parametrize("keep", [8, 40, 200, 1000, 2000])
def test_truncated_files(keep):
    data = hello_world_bytes()[:keep]
    with pytest.raises(ModelFormatError):
        load_tflite(data)


def test_random_corruption_never_escapes_as_a_bare_error():
    data = bytearray(hello_world_bytes())
    rng = np.random.default_rng(0)
    outcomes = {"loaded": 0, "rejected": 0}
    for _ in range(150):
        damaged = bytearray(data)
        for position in rng.integers(8, len(data), 6):
            damaged[position] = int(rng.integers(0, 256))
        try:
            model = load_tflite(bytes(damaged))
        except TractileError:
            outcomes["rejected"] += 1
            continue
        outcomes["loaded"] += 1
        try:
            model.into_optimized().run([np.zeros((1, 1), np.int8)])
        except TractileError:
            pass
    assert outcomes["rejected"] > 0


def test_out_of_range_tensor_index_names_the_operator():
    data = bytearray(hello_world_bytes())
    from tractile.formats.tflite.reader import read_model
    info = read_model(bytes(data))
    assert info.subgraphs[0].operators[0].opcode == "FULLY_CONNECTED"
    # the operator's input vector holds tensor 0 (the model input): find and damage it
    marker = np.array([0, 6, 5], dtype="<i4").tobytes()
    position = bytes(data).find(marker)
    assert position > 0
    data[position:position + 4] = np.array([999], dtype="<i4").tobytes()
    with pytest.raises(ModelFormatError, match="operator 0.*out of range"):
        load_tflite(bytes(data))


def test_load_dispatches_tflite_by_extension_and_magic():
    path = shared_model("tflite/hello_world_int8.tflite")
    model = load(path)
    assert model.run([np.array([[0]], np.int8)])[0].dtype == np.int8
    assert load(path.read_bytes()).run([np.array([[64]], np.int8)])[0].tolist() == [[-126]]
