"""Host execution: build the generated C into a shared library (cached), call it through ctypes.

:class:`CompiledModel` behaves like a run state of the interpreter: ``run`` takes a list or
a dict of inputs, checks them the same way, and keeps the model's state (recurrent
variables, streaming buffers) in its own context between calls; ``state()`` gives another,
independent context; ``reset()`` clears the state.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import RunError, TractileError
from ..runtime.state import order_inputs
from ..runtime.threads import _HOST as _HOST_THREADS  # read on each call: the count set_threads gave
from ..runtime.threads import check_thread_count, host_threads

#: -fno-trapping-math (clang's default; no value changes, only floating-point exception flags) lets
#: gcc vectorise loops with float comparisons and float-to-integer conversions (tl_rnn.h's activations)
OPT_FLAGS = {"speed": ["-O3", "-march=native", "-fno-trapping-math"], "size": ["-Os"]}
#: the host build splits large layers across threads (tl_threads.h); firmware builds never define it
HOST_DEFINES = ("-DTL_HOST_THREADS", "-D_GNU_SOURCE", "-pthread")  # _GNU_SOURCE: tl_threads.h pins its workers


def default_cache_dir() -> Path:
    """Where built libraries are kept: ``$XDG_CACHE_HOME/tractile/compiled`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tractile" / "compiled"


def find_c_compiler() -> str:
    """``$CC``, else ``cc``, ``gcc`` or ``clang`` on the PATH; a TractileError saying how to get one."""
    candidates = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    for candidate in candidates:
        found = shutil.which(candidate.split()[0])
        if found:
            return candidate
    raise TractileError(
        "no C compiler found to build the compiled model: install one (Debian/Ubuntu: sudo apt-get install gcc; "
        "macOS: xcode-select --install; Windows: use WSL) or set $CC to its path")


def _compiler_identity(cc: str) -> str:
    try:
        done = subprocess.run([*cc.split(), "--version"], capture_output=True, text=True, timeout=30)
        return done.stdout.splitlines()[0] if done.stdout else cc
    except (OSError, subprocess.TimeoutExpired):
        return cc


def build_shared_library(files: Mapping[str, str | bytes], name: str, opt: str = "speed",
                         cache_dir: str | os.PathLike | None = None, defines: Sequence[str] = ()) -> Path:
    """Build ``files`` (the generated sources: texts, and binary files as bytes) into a shared
    library, or reuse the cached one; the ``.c`` and ``.S`` files are compiled."""
    if opt not in OPT_FLAGS:
        raise TractileError(f"--opt must be 'speed' or 'size', got {opt!r}")
    cc = find_c_compiler()
    flags = ["-std=c99", *OPT_FLAGS[opt], "-fPIC", "-shared", "-fno-strict-aliasing", *HOST_DEFINES, *defines]
    digest = hashlib.sha256()
    for part in (_compiler_identity(cc), platform.machine(), " ".join(flags)):
        digest.update(part.encode())
    for filename in sorted(files):
        digest.update(filename.encode())
        content = files[filename]
        digest.update(content if isinstance(content, bytes) else content.encode())
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = root / f"{name}-{digest.hexdigest()[:20]}"
    library = folder / f"lib{name}{'.dylib' if platform.system() == 'Darwin' else '.so'}"
    if library.exists():
        return library
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        for filename, content in files.items():
            if isinstance(content, bytes):
                (work / filename).write_bytes(content)
            else:
                (work / filename).write_text(content)
        sources = [filename for filename in files if filename.endswith((".c", ".S"))]
        command = [*cc.split(), *flags, "-o", library.name, *sources, "-lm"]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise TractileError(f"the C compiler failed on the generated code (a tractile bug; please report it):\n"
                                f"$ {' '.join(command)}\n{done.stderr[-4000:]}")
        try:
            work.rename(folder)
        except OSError:
            if not library.exists():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return library


class CompiledModel:
    """A model compiled to C and built for this machine; runs like an interpreter state.

    ``source`` (a :class:`~tractile.compile.CSource`) holds the generated files and the
    memory ``report``; ``library`` is the built shared library.
    """

    def __init__(self, source, library: Path, model=None):
        self.source = source
        self.library = library
        self.model = model
        self.name = source.name
        program = source.program
        self.input_names = list(program.input_names)
        self.output_names = list(program.output_names)
        self.input_facts = [t.fact for t in program.inputs]
        self.output_facts = [t.fact for t in program.outputs]
        self._outputs = [(t.dtype.np, tuple(t.shape)) for t in program.outputs]
        self._lib = ctypes.CDLL(str(library))
        self._invoke = getattr(self._lib, f"{self.name}_invoke")
        self._invoke.argtypes = [ctypes.c_void_p] * (1 + len(program.inputs) + len(program.outputs))
        self._invoke.restype = ctypes.c_int
        self._init = getattr(self._lib, f"{self.name}_init")
        self._init.argtypes = [ctypes.c_void_p]
        self._reset = getattr(self._lib, f"{self.name}_reset")
        self._reset.argtypes = [ctypes.c_void_p]
        size_of = getattr(self._lib, f"{self.name}_context_bytes")
        size_of.restype = ctypes.c_size_t
        self.context_bytes = int(size_of())
        self._checkers = _input_checkers(model, self.input_names, self.input_facts)
        self._set_threads = self._release = None
        if program.threads:
            self._set_threads = getattr(self._lib, f"{self.name}_set_threads")
            self._set_threads.argtypes = [ctypes.c_void_p, ctypes.c_int32]
            self._release = getattr(self._lib, f"{self.name}_release")
            self._release.argtypes = [ctypes.c_void_p]
        self._profile_offset = None
        if program.profile:
            offset_of = getattr(self._lib, f"{self.name}_profile_offset")
            offset_of.restype = ctypes.c_size_t
            self._profile_offset = int(offset_of())
        self._default = CompiledState(self)

    @property
    def report(self) -> dict:
        return self.source.report

    def report_html(self, path: str | os.PathLike, tflite: str | os.PathLike | None = None):
        """Write the compile report page of this model (:meth:`tractile.compile.CSource.report_html`)."""
        return self.source.report_html(path, tflite=tflite)

    def state(self) -> CompiledState:
        """An independent context (one per thread or per stream)."""
        return CompiledState(self)

    def run(self, inputs: Sequence[Any] | Mapping[str, Any] | None, feed: Mapping[str, Any] | None = None):
        """Run on this model's own context (state carries over between calls, as in TFLite);
        onnxruntime's ``run(output_names, feed)`` form too."""
        return self._default.run(inputs, feed)

    def reset(self) -> None:
        self._default.reset()

    def set_threads(self, count: int | None) -> None:
        """Split this model's large convolutions and GEMMs across ``count`` threads on its own
        context (None: follow :func:`tractile.set_threads`); results do not depend on the count."""
        self._default.set_threads(count)

    def __repr__(self) -> str:
        return f"CompiledModel({self.name!r}, arena {self.report['arena_bytes']} B, {self.library})"


#: inputs and outputs up to this size go through buffers of the state whose addresses are fixed
#: (a copy is cheaper than asking NumPy for a new array's address); larger ones are passed directly
STAGED_BYTES = 256 << 10


class CompiledState:
    """One context of a :class:`CompiledModel`: its arena and its state."""

    def __init__(self, model: CompiledModel):
        self.model = model
        self._memory = np.zeros(max(-(-model.context_bytes // 8), 1), np.uint64)
        self._context = self._memory.ctypes.data
        model._init(self._context)
        if model._release is not None:  # the threads the context starts stop with it
            weakref.finalize(self, _release_context, model._release, self._context, self._memory)
        self._in_stage = [np.empty(tuple(f.shape), f.dtype.np) for f in model.input_facts]
        self._out_stage = [np.empty(shape, dtype) for dtype, shape in model._outputs]
        self._staged = all(a.nbytes <= STAGED_BYTES for a in self._in_stage + self._out_stage)
        self._args = (self._context, *[a.ctypes.data for a in self._in_stage + self._out_stage])
        self._one_output = len(self._out_stage) == 1
        self._invoke = model._invoke
        self._threads: int | None = None
        self._applied = 1
        #: ``run`` on a list of inputs that match the input facts exactly, else None (nothing run)
        self.fast_run = _fast_run(self)

    def set_threads(self, count: int | None) -> None:
        """Split the large convolutions and GEMMs of this context across ``count`` threads (None:
        follow :func:`tractile.set_threads`, one thread by default)."""
        if count is not None:
            check_thread_count(count, "set_threads")
        self._threads = count

    def reset(self) -> None:
        """Clear the state kept across invocations."""
        self.model._reset(self._context)

    def node_seconds(self) -> np.ndarray:
        """Seconds spent in each node since the context was made (profiling builds only)."""
        offset = self.model._profile_offset
        if offset is None:
            raise TractileError("this model was not built for profiling: compile it with profile=True")
        count = max(len(self.model.source.program.nodes), 1)
        return self._memory.view(np.uint8)[offset:offset + 8 * count].view(np.uint64) / 1e9

    def run(self, inputs: Sequence[Any] | Mapping[str, Any] | None, feed: Mapping[str, Any] | None = None):
        """Run once: a list in gives a list out, a dict in gives a dict by output name; onnxruntime's
        ``run(output_names, feed)`` gives the named outputs (all for None) as a list."""
        if feed is not None:
            from ..runtime.state import onnxruntime_call

            names = onnxruntime_call(inputs, feed, self.model.output_names)
            outputs = self.run(dict(feed))
            return [outputs[name] for name in names]
        fast = self.fast_run
        if fast is not None and type(inputs) is list:
            outputs = fast(inputs)
            if outputs is not None:
                return outputs
        model = self.model
        if type(inputs) is list and len(inputs) == len(model.input_names):
            ordered, as_dict = inputs, False
        else:
            ordered, as_dict = order_inputs(model.input_names, inputs)
        bindings: dict[str, int] = {}
        outputs = self.call_checked([check(value, bindings) for check, value in zip(model._checkers, ordered)])
        if as_dict:
            return dict(zip(model.output_names, outputs))
        return outputs

    def call_checked(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Run on ``arrays``, inputs in order already of the input facts' datum types and shapes
        (any strides); the outputs are new arrays the caller owns."""
        model = self.model
        if model._set_threads is not None:
            self._apply_threads()
        if self._staged:
            for value, stage in zip(arrays, self._in_stage):
                stage[...] = value
            status = self._invoke(*self._args)
            if status == 0:
                return [self._out_stage[0].copy()] if self._one_output else [o.copy() for o in self._out_stage]
        else:
            contiguous = [np.ascontiguousarray(value) for value in arrays]
            outputs = [np.empty(shape, dtype) for dtype, shape in model._outputs]
            status = self._invoke(self._context, *[a.ctypes.data for a in contiguous],
                                  *[o.ctypes.data for o in outputs])
            if status == 0:
                return outputs
        raise RunError(model.source.program.errors.get(status, f"the compiled model returned status {status}"))

    def _apply_threads(self) -> None:
        threads = self._threads if self._threads is not None else host_threads()
        setter = self.model._set_threads
        if threads != self._applied and setter is not None:
            setter(self._context, threads)
            self._applied = threads


def _release_context(release, context: int, memory: np.ndarray) -> None:
    """Stop the threads of the context at ``context`` (``memory``, kept alive until then, holds it)."""
    release(context)


def _input_checkers(model, names: list[str], facts: list) -> list:
    """The interpreter's input checks (same messages, same conversions)."""
    from ..runtime.state import SimpleState

    checker = SimpleState.__new__(SimpleState)
    return [SimpleState._input_checker(checker, name, fact) for name, fact in zip(names, facts)]


def _fast_run(state: CompiledState):
    """``state``'s call on a list of inputs that are already arrays of the input facts' datum types
    and shapes (the common case), built once: the inputs copied into the staged buffers, the
    library called with its prebuilt arguments, the outputs copied out. It gives None, having run
    nothing, for anything else (the general path then converts or says what is wrong); None
    instead of a function when the buffers are too large to stage."""
    if not state._staged:
        return None
    invoke, args, stages, outs = state._invoke, state._args, state._in_stage, state._out_stage
    errors = state.model.source.program.errors
    threaded = state.model._set_threads is not None
    apply, host = state._apply_threads, _HOST_THREADS

    def failed(status: int) -> RunError:
        return RunError(errors.get(status, f"the compiled model returned status {status}"))

    ndarray = np.ndarray
    if len(stages) == 1 and len(outs) == 1:
        stage, out = stages[0], outs[0]
        dtype, shape = stage.dtype, stage.shape

        def run_one(inputs: list) -> list | None:
            try:
                value, = inputs
            except ValueError:
                return None
            if type(value) is ndarray and value.shape == shape and (value.dtype is dtype or value.dtype == dtype):
                stage[...] = value
                if threaded and (state._threads or host[0]) != state._applied:
                    apply()
                status = invoke(*args)
                if status == 0:
                    return [out.copy()]
                raise failed(status)
            return None

        return run_one
    count = len(stages)
    staged = [(stage, stage.dtype, stage.shape) for stage in stages]

    def run(inputs: list) -> list | None:
        if len(inputs) != count:
            return None
        for value, (_, dtype, shape) in zip(inputs, staged):
            if type(value) is not ndarray or value.shape != shape or (value.dtype is not dtype
                                                                       and value.dtype != dtype):
                return None
        for value, (stage, _, _) in zip(inputs, staged):
            stage[...] = value
        if threaded and (state._threads or host[0]) != state._applied:
            apply()
        status = invoke(*args)
        if status == 0:
            return [o.copy() for o in outs]
        raise failed(status)

    return run
