"""The compiler: lower an optimized model with concrete shapes to portable C99 with statically
planned memory, and run it on this machine.

    cm = tractile.load("model.tflite").compile()      # generate, build (cached), bind
    y, = cm.run([x])
    cm.source.write("out/")                           # model.h, model.c and the kernels it uses
    cm.report["arena_bytes"]

See docs/COMPILE.md.
"""
from __future__ import annotations

import os
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import TractileError
from .ctext import program_name
from .files import GeneratedFiles, write_file
from .layout import channels_last
from .lower import lower
from .memory import MemoryPlan
from .ops.conv_gemm import lower_within_arena
from .program import Program
from .render import mark_used, render_header, render_source
from .report import build_report
from .target import Target, find_target

__all__ = ["CSource", "generate", "compile_model", "Target", "find_target"]


@dataclass
class CSource:
    """The generated C of one model: file name -> text, with what produced it."""

    name: str
    files: MutableMapping[str, str]
    program: Program
    plan: MemoryPlan
    target: Target
    report: dict = field(default_factory=dict)
    #: what the model was made from, as the files' first comments say
    origin: str = "a tractile model"

    def write(self, directory: str | os.PathLike) -> list[Path]:
        """Write every file into ``directory`` (created if needed; links in it are replaced, not
        followed); the paths written."""
        folder = Path(directory)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise TractileError(f"cannot create the output folder {folder}: {error.strerror}") from None
        return [write_file(folder, filename, text) for filename, text in self.files.items()]

    def report_html(self, path: str | os.PathLike, verification: dict | None = None,
                    tflite: str | os.PathLike | None = None, origin: str | None = None):
        """Write the compile report as one self-contained HTML page (docs/COMPILE.md): summary,
        the memory plan drawn, the per-layer table. ``verification``: the report of a run on an
        emulated board (:func:`~tractile.compile.targets.verify.verify_source`) for flash, stack
        and instructions; ``tflite``: the model's TFLite file, for TFLite Micro's arena beside
        tractile's (when the tflite-micro package is installed). Returns what was written."""
        from ..hooks import provided

        return provided("report_html")(self, path, verification=verification, tflite=tflite, origin=origin)

    @property
    def header(self) -> str:
        return self.files[f"{self.name}.h"]

    @property
    def source(self) -> str:
        return self.files[f"{self.name}.c"]


def kernel_header(filename: str) -> str:
    """The text of one of tractile's C kernel headers."""
    return resources.files(__package__).joinpath("kernels").joinpath(filename).read_text()


def prepare(model, inputs: Sequence | None = None, optimize: bool = True):
    """The typed, optimized model to lower (input facts applied to a copy first), its
    convolutions and pools channels last (:func:`~tractile.compile.layout.channels_last`), its
    constant channels folded away (:func:`~tractile.passes.dead_channels.drop_dead_channels`)."""
    from ..passes.dead_channels import drop_dead_channels

    return drop_dead_channels(_optimized(model, inputs, optimize))


def _optimized(model, inputs: Sequence | None, optimize: bool):
    from ..model import InferenceModel, TypedModel

    if isinstance(model, InferenceModel):
        for index, spec in enumerate(inputs or ()):
            model.set_input_fact(index, spec)
        return channels_last(model.into_optimized())
    if not isinstance(model, TypedModel):
        raise TractileError(f"compile takes a loaded model, got {type(model).__name__}")
    if inputs:
        model = model.compact()
        for index, spec in enumerate(inputs):
            model.set_input_fact(index, spec)
        return channels_last(model.into_optimized())
    return channels_last(model.into_optimized() if optimize else model)


def generate(model, name: str = "model", target: str | Target = "host", inputs: Sequence | None = None,
             optimize: bool = True, origin: str = "a tractile model", profile: bool = False,
             macros: dict | None = None, chains: Sequence = (), inputs_in_arena: bool = False,
             regions: Sequence = (), order: Sequence[int] = ()) -> CSource:
    """Lower ``model`` to C: ``NAME.h``, ``NAME.c`` and the kernel headers they include.

    ``profile`` adds per-node timers, active when the code is built with ``-DTL_PROFILE``;
    ``macros`` (``{"DELAY": (3, "what it means")}``) adds ``#define NAME_DELAY 3`` to the header;
    ``chains`` (:class:`~tractile.compile.bands.Chain`) are computed in bands of rows, ``regions``
    (:class:`~tractile.compile.rows.Region`) by rows with line buffers, the nodes in ``order``
    (an evaluation order; default the model's);
    ``inputs_in_arena`` plans the inputs in the arena like intermediate values (the header's
    ``NAME_INPUTi_IN(ctx)`` gives their address; invoke copies an input passed from elsewhere).

    Raises UnsupportedOpError naming every node that cannot be lowered (nothing is
    written), or a TractileError naming the symbols left unbound.
    """
    c_name = program_name(name)
    target = find_target(target)
    typed = prepare(model, inputs, optimize)
    program, plan = lower_within_arena(lambda: lower(typed, c_name, target, chains, inputs_in_arena, regions, order),
                                       target.alignment)
    program.profile = profile
    program.macros = dict(macros or {})
    files = GeneratedFiles({f"{c_name}.h": render_header(program, plan, origin)})
    files.defer(f"{c_name}.c", lambda: render_source(program, plan, origin, target))
    for header in ["tl_common.h", *program.headers]:
        files[header] = kernel_header(header)
    source = CSource(c_name, files, program, plan, target, origin=origin)
    mark_used(program)  # what rendering NAME.c marks, for the report made before it
    source.report = build_report(source, typed)
    return source


def compile_model(model, name: str = "model", opt: str = "speed", inputs: Sequence | None = None,
                  cache_dir: str | os.PathLike | None = None, target: str | Target = "host",
                  optimize: bool = True, origin: str = "a tractile model", profile: bool = False,
                  macros: dict | None = None, chains: Sequence = (), inputs_in_arena: bool = False,
                  regions: Sequence = (), max_ram: int | None = None, order: Sequence[int] = ()):
    """Generate C for ``model``, build it with the system C compiler (cached by content) and bind
    it: a :class:`~tractile.compile.host.CompiledModel` that runs like an interpreter state.
    ``profile`` builds it with per-node timers (:meth:`CompiledState.node_seconds`); ``max_ram``
    is a budget of planned RAM (:func:`~tractile.compile.budget.fit_ram_budget`)."""
    from .host import CompiledModel, build_shared_library
    from .host_files import host_build_files

    target = find_target(target)
    if target.name != "host":
        raise TractileError(f"only the host target runs from Python; for {target.name}, generate the sources "
                            "(tractile compile --target ...) and build them with the target's tool chain")
    typed = prepare(model, inputs, optimize)
    if max_ram is not None:
        from .budget import fit_ram_budget

        source = fit_ram_budget(typed, max_ram, name, target, origin=origin, profile=profile, macros=macros,
                                inputs_in_arena=inputs_in_arena)
    else:
        source = generate(typed, name, target, optimize=False, origin=origin, profile=profile, macros=macros,
                          chains=chains, inputs_in_arena=inputs_in_arena, regions=regions, order=order)
    defines = ("-DTL_PROFILE", "-D_POSIX_C_SOURCE=199309L") if profile else ()
    library = build_shared_library(host_build_files(source), source.name, opt, cache_dir, defines)
    return CompiledModel(source, library, typed)
