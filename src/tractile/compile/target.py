"""What the generated C may assume about the machine it runs on."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import TractileError


@dataclass(frozen=True)
class Target:
    """A compilation target.

    ``alignment``: arena offsets are multiples of it; ``has_fpu``: float arithmetic is
    cheap (else integer models keep integer-only code paths); ``double_bits``: the width
    of C's ``double`` (32 on AVR); ``progmem``: constants live in program memory and are
    read through ``pgm_read_*`` (AVR); ``flavour``: the TFLite integer semantics integer
    kernels follow by default on this target (None: the model's own); ``dsp``: the Armv7E-M DSP
    instructions (SMLAD, SXTB16, PKHBT): int8 convolutions take weights repacked as int16 pairs.
    """

    name: str = "host"
    alignment: int = 16
    has_fpu: bool = True
    double_bits: int = 64
    progmem: bool = False
    flavour: str | None = None
    dsp: bool = False
    description: str = "this machine, built by the system C compiler"


HOST = Target()

_TARGETS: dict[str, Target] = {"host": HOST}


def register_target(target: Target) -> Target:
    """Make ``target`` available by name (microcontroller targets register themselves)."""
    _TARGETS[target.name] = target
    return target


def find_target(name: str | Target) -> Target:
    if isinstance(name, Target):
        return name
    from . import targets  # noqa: F401 - registers the microcontroller targets
    try:
        return _TARGETS[name]
    except KeyError:
        raise TractileError(f"unknown target {name!r}; known targets: {', '.join(sorted(_TARGETS))}") from None


def target_names() -> list[str]:
    from . import targets  # noqa: F401 - registers the microcontroller targets

    return sorted(_TARGETS)
