"""tract (Sonos' Rust engine, through its Python package) as a peer in the benchmarks.

``pip install tract`` (the ``bench`` extra). tract optimises the model for this machine when it
becomes runnable; inputs are given as concrete facts (``"1,3,224,224,f32"``) so that it can.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence

import numpy as np


def tract_available() -> bool:
    try:
        import tract  # noqa: F401
    except ImportError:
        return False
    return True


def _spec(value: np.ndarray) -> str:
    names = {np.float32: "f32", np.float64: "f64", np.int64: "i64", np.int32: "i32", np.int8: "i8",
             np.uint8: "u8", np.bool_: "bool"}
    dtype = names[value.dtype.type]
    return ",".join([*map(str, value.shape), dtype])


def tract_runner(model: str | bytes | os.PathLike, inputs: Sequence[np.ndarray]) -> Callable[[list], list]:
    """A function running ``model`` (an ONNX path or bytes) in tract on inputs shaped like ``inputs``."""
    import tract

    if isinstance(model, (bytes, bytearray)):
        handle, path = tempfile.mkstemp(suffix=".onnx")
        with os.fdopen(handle, "wb") as stream:
            stream.write(model)
    else:
        path = os.fspath(model)
    try:
        loaded = tract.onnx().load(path)
    finally:
        if isinstance(model, (bytes, bytearray)):
            os.unlink(path)
    for index, value in enumerate(inputs):
        loaded.set_input_fact(index, _spec(np.asarray(value)))
    runnable = loaded.into_model().into_runnable()
    state = runnable.spawn_state()

    def run(values: list) -> list:
        return [t.to_numpy() for t in state.run([np.ascontiguousarray(v) for v in values])]

    return run
