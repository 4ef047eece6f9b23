"""NumPy's broadcasting rules over shapes whose dims may be symbolic."""
from __future__ import annotations

from ..dim import TDim
from ..errors import AnalysisError


def broadcast_shapes(*shapes) -> tuple:
    """NumPy broadcasting over dims that may be symbolic (a symbol against n>1 gives n)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        dims = [s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0]
        result = 1
        for dim in dims:
            if dim == 1 or dim == result:
                continue
            if result == 1:
                result = dim
            elif isinstance(result, TDim) and isinstance(dim, int):
                result = dim
            elif isinstance(result, int) and isinstance(dim, TDim):
                continue
            elif isinstance(result, TDim) and isinstance(dim, TDim):
                continue
            else:
                raise AnalysisError(
                    "cannot broadcast shapes " + " and ".join("(" + ",".join(map(str, s)) + ")" for s in shapes)
                    + f": axis {axis} has {result} and {dim}")
        out.append(result)
    return tuple(out)


def broadcast_volume(inputs) -> object:
    total = 1
    for dim in broadcast_shapes(*(f.shape for f in inputs)):
        total = total * dim
    return total
