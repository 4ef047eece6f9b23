"""tractile: a small, hackable neural-network inference engine on NumPy.

    import tractile
    model = tractile.load("model.onnx", inputs={"x": "N,3,224,224,f32"})
    y, = model.run([x])
"""
from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from . import entry_points  # noqa: F401 - registers what the model classes call in upper layers
from .datum import DatumType
from .dim import TDim, symbol
from .dim_parse import parse_dim
from .errors import AnalysisError, ModelFormatError, RunError, RunTimeFactsError, TractileError, UnsupportedOpError
from .fact import InferenceFact, QParams, ShapeFactoid, TypedFact
from .fact_spec import parse_fact
from .fact_unify import unify
from .graph import InletId, Node, Outlet, OutletId
from .model import InferenceModel, TypedModel
from .ops.base import Limits
from .patch import ModelPatch
from .runtime.threads import set_threads

__version__ = "0.1.0"

FactSpecs = Mapping[str, Any] | Sequence[Any] | None


def _apply_facts(model, specs: FactSpecs, outputs: bool) -> None:
    if not specs:
        return
    items = specs.items() if isinstance(specs, Mapping) else enumerate(specs)
    for which, spec in items:
        if spec is None:
            continue
        if outputs:
            model.set_output_fact(which, spec)
        else:
            model.set_input_fact(which, spec)


def load(source, inputs: FactSpecs = None, outputs: FactSpecs = None, optimize: bool = True,
         format: str | None = None, compile: str | None = None, values: Mapping[str | int, Any] | None = None,
         threads: int | None = None):
    """Load a model file (or bytes, or an ``onnx.ModelProto``): ONNX, TFLite, or TensorFlow (a frozen
    GraphDef ``.pb`` or a SavedModel folder, whose ``serving_default`` signature is loaded).

    ``inputs``: facts for the model inputs, by name or position: ``"N,3,224,224,f32"``
    (symbols such as ``N`` stay symbolic), ``(shape, dtype)``, or an array (its shape
    and type). ``outputs``: hints about the outputs, which analysis can propagate back.

    With ``optimize`` (the default) the model is analysed, typed, decluttered and
    optimized: the result runs with ``.run(...)``. With ``optimize=False`` you get the
    model as loaded, and can call ``analyse()``, ``into_typed()``, ``declutter()``,
    ``optimize()`` yourself.

    A model that cannot be typed before its inputs are seen (inputs without shapes, ranks
    that depend on data, as in silero-vad) comes back as a
    :class:`~tractile.runtime.dynamic.DynamicModel`: it runs the same way, and its first run
    with each input signature (shapes, datum types, the values of small integer inputs that
    decide an If or a shape) types, optimizes and plans it for that signature, once.

    ``compile="auto"`` runs each maximal run of nodes the C compiler supports as one compiled
    function (built once for this machine with the system C compiler, cached) when it runs faster
    compiled than interpreted (timed once on the model's shapes, the decision cached with the
    build), and the rest in the interpreter; ``compile="all"`` compiles every such run (see
    docs/COMPILE.md). Shapes must then be concrete where it compiles.

    ``values``: inputs whose value is known, by name or position (``{"sr": 16000}``): they
    become constants and stop being inputs, so an If on them folds away (see
    ``with_input_values``).

    ``threads``: at most that many threads for matrix products and OpenMP loops, process-wide
    (as :func:`set_threads`, which needs the ``fast`` extra).
    """
    if threads is not None:
        set_threads(threads)
    with _without_cycle_collection():
        return _load(source, inputs, outputs, optimize, format, compile, values)


@contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Loading builds graphs of many small acyclic objects: the cycle collector would traverse
    the growing heap again and again for nothing (a fifth of the time on 10,000 nodes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load(source, inputs, outputs, optimize, format, compile, values):
    kind = format or _guess_format(source)
    model = _read(source, kind, inputs, outputs, values, optimize)
    if not optimize:
        return model
    try:
        model = model.into_optimized()
    except RunTimeFactsError as error:
        if not isinstance(model, InferenceModel):
            raise
        return _typed_at_first_run(_read(source, kind, inputs, outputs, values, optimize), model, error, compile)
    if compile is not None:
        if compile not in ("auto", "all"):
            raise TractileError(f"compile must be 'auto' or 'all' (or None), got {compile!r}; "
                                "for a whole compiled model use model.compile()")
        from .compile.segments import compile_segments

        model = compile_segments(model, by="cost" if compile == "auto" else "all")
    return model


def _typed_at_first_run(source: InferenceModel, failed: InferenceModel, error: RunTimeFactsError, compile):
    """A model that analysis cannot type before its inputs are seen: typed and planned at its
    first run with each input signature (shapes, datum types, deciding values)."""
    from .runtime.dynamic import DynamicModel

    if compile is not None:
        raise TractileError(f"compile={compile!r} needs the model typed when loading, and {error}; give the "
                            "inputs' facts (inputs=..., values=...), or compile model.typed_for(inputs)")
    failed.analyse(obstinate=True)  # every fact analysis can establish, for input_facts / output_facts
    return DynamicModel(source, failed, str(error))


def _read(source, kind: str, inputs, outputs, values, optimize: bool):
    """The model as the file has it, with the facts and values given to ``load``."""
    if kind == "onnx":
        from .formats.onnx import load_onnx

        model = load_onnx(source)
    elif kind == "tflite":
        from .formats.tflite import load_tflite

        model = load_tflite(source)
    elif kind == "tf":
        from .formats.tf import load_tf

        model = load_tf(source)
    else:
        raise TractileError(f"unknown model format {kind!r}: tractile reads .onnx and .tflite files, "
                            "TensorFlow frozen graphs (.pb) and SavedModel folders")
    _apply_facts(model, inputs, outputs=False)
    _apply_facts(model, outputs, outputs=True)
    if values:
        model = model.with_input_values(values, optimize=optimize) if isinstance(model, TypedModel) \
            else model.with_input_values(values)
    return model


def _guess_format(source) -> str:
    from .formats.detect import detect_format

    return detect_format(source)


def set_limits(max_tensor_bytes: int | None = None, max_loop_iterations: int | None = None,
               max_run_seconds: float | None = None) -> None:
    """Change run-time resource limits: a larger tensor, a longer loop (default 2**18 iterations)
    or a run past ``max_run_seconds`` (checked at each loop iteration; default none, and
    ``math.inf`` removes it again) raises RunError."""
    if max_tensor_bytes is not None:
        Limits.max_tensor_bytes = int(max_tensor_bytes)
    if max_loop_iterations is not None:
        Limits.max_loop_iterations = int(max_loop_iterations)
    if max_run_seconds is not None:
        if max_run_seconds <= 0:
            raise TractileError(f"max_run_seconds must be positive, got {max_run_seconds}")
        Limits.max_run_seconds = None if max_run_seconds == float("inf") else float(max_run_seconds)


__all__ = [
    "load", "set_limits", "set_threads", "DatumType", "TDim", "symbol", "parse_dim", "TypedFact", "InferenceFact",
    "ShapeFactoid", "QParams", "parse_fact", "unify", "OutletId", "InletId", "Outlet", "Node",
    "InferenceModel", "TypedModel", "ModelPatch", "TractileError", "ModelFormatError",
    "UnsupportedOpError", "AnalysisError", "RunError",
]
