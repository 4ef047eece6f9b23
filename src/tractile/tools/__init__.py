"""Tools around the engine: comparison with reference engines, graph pages, profile plots.

Nothing here is needed to run a model; the modules import their optional
dependencies (onnxruntime, ai-edge-litert, kiwisolver, matplotlib) when used.
"""
from __future__ import annotations

from ..errors import TractileError


def parse_pulse(text: str | None) -> tuple[str, int] | None:
    """``"T=8"`` as ``("T", 8)`` (the streamed symbol and the frames per call); None stays None."""
    if not text:
        return None
    symbol, _, size = text.partition("=")
    if not symbol.strip() or not size.strip().isdigit() or int(size) < 1:
        raise TractileError(f"--pulse expects SYMBOL=FRAMES with FRAMES >= 1 (e.g. --pulse T=8), got {text!r}")
    return symbol.strip(), int(size)


def pulsed_typed_model(model, pulse: tuple[str, int]):
    """The stateful typed model that runs the streaming form of ``model`` one chunk per call."""
    if not hasattr(model, "pulse"):
        raise TractileError("streaming needs a typed model: load it up to the typed stage or later")
    return model.pulse(*pulse).into_typed()


__all__ = ["parse_pulse", "pulsed_typed_model"]
