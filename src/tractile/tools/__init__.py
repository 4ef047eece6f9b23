"""Tools around the engine: comparison with reference engines, graph pages, profile plots.

Nothing here is needed to run a model; the modules import their optional
dependencies (onnxruntime, ai-edge-litert, kiwisolver, matplotlib) when used.
"""
from __future__ import annotations

from ..dim import TDim
from ..errors import TractileError


def parse_pulse(text: str | None) -> tuple[str | None, int] | None:
    """``"T=8"`` as ``("T", 8)``, ``"8"`` as ``(None, 8)`` (symbol to find); None stays None."""
    if not text:
        return None
    symbol, _, size = text.rpartition("=")
    if not size.strip().isdigit() or int(size) < 1:
        raise TractileError(f"--pulse expects FRAMES or SYMBOL=FRAMES with FRAMES >= 1 (e.g. --pulse T=8), "
                            f"got {text!r}")
    return symbol.strip() or None, int(size)


def stream_symbol(model, wanted: str | None) -> str:
    """The streamed symbol: ``wanted``, else ``T``, else the only symbol of the input facts."""
    if wanted:
        return wanted
    symbols: set[str] = set()
    for fact in model.input_facts:
        for dim in fact.shape:
            if isinstance(dim, TDim):
                symbols |= dim.symbols()
    if "T" in symbols or not symbols:
        return "T"
    if len(symbols) == 1:
        return symbols.pop()
    raise TractileError(f"the inputs have symbols {', '.join(sorted(symbols))}: say which one streams with "
                        "--pulse SYM=P")


def pulsed_model(model, pulse: tuple[str | None, int]):
    """The :class:`~tractile.pulse.PulsedModel` of a typed ``model`` for ``pulse`` (from :func:`parse_pulse`)."""
    if not hasattr(model, "pulse"):
        raise TractileError("streaming needs a typed model: load it up to the typed stage or later")
    symbol, frames = pulse
    return model.pulse(stream_symbol(model, symbol), frames)


def pulsed_typed_model(model, pulse: tuple[str | None, int]):
    """The stateful typed model that runs the streaming form of ``model`` one chunk per call."""
    return pulsed_model(model, pulse).into_typed()


__all__ = ["parse_pulse", "stream_symbol", "pulsed_model", "pulsed_typed_model"]
