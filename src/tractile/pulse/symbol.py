"""Which symbol of a model's input facts streams, when the caller does not say."""
from __future__ import annotations

from ..dim import TDim
from ..errors import TractileError


def stream_symbol(model, wanted: str | None = None) -> str:
    """``wanted`` if given; else ``T`` when the inputs use it (or no symbol at all), else their
    only symbol; a TractileError asks to choose when there are several."""
    symbols: set[str] = set()
    for fact in model.input_facts:
        for dim in fact.shape:
            if isinstance(dim, TDim):
                symbols |= dim.symbols()
    if wanted:
        return wanted
    if "T" in symbols or not symbols:
        return "T"
    if len(symbols) == 1:
        return symbols.pop()
    raise TractileError(f"the inputs have symbols {', '.join(sorted(symbols))}: say which one streams with "
                        "--symbol or --pulse SYM=P")
