"""Einsum: Einstein summation over labelled axes (``"bij,bjk->bik"``, ``"...ii->...i"``)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..dim import TDim
from ..errors import AnalysisError
from ..fact import TypedFact
from .axes import widened
from .base import Op
from .broadcast import broadcast_shapes

_TERM = re.compile(r"^(?:[A-Za-z]|\.\.\.)*$")


def parse_equation(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """Split an equation into the labels of each input and of the output.

    Each list holds one label per axis; the axes an ellipsis stands for are labelled
    ``"...0"``, ``"...1"``... counting from the last one (they broadcast right-aligned).
    """
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise AnalysisError(f"Einsum equation {equation!r} has {len(terms)} operands but the op has "
                            f"{len(ranks)} inputs")
    for term in terms + ([rhs] if arrow else []):
        if not _TERM.match(term) or term.count("...") > 1:
            raise AnalysisError(f"Einsum equation {equation!r}: cannot read term {term!r}")
    inputs = []
    ellipsis_rank = 0
    for term, rank in zip(terms, ranks):
        letters = term.replace("...", "")
        if "..." in term:
            width = rank - len(letters)
            if width < 0:
                raise AnalysisError(f"Einsum term {term!r} has more labels than its input has axes ({rank})")
            ellipsis_rank = max(ellipsis_rank, width)
            head, _, tail = term.partition("...")
            inputs.append(list(head) + [f"...{width - 1 - i}" for i in range(width)] + list(tail))
        else:
            if len(letters) != rank:
                raise AnalysisError(f"Einsum term {term!r} has {len(letters)} labels but its input has rank {rank}")
            inputs.append(list(term))
    ellipsis = [f"...{ellipsis_rank - 1 - i}" for i in range(ellipsis_rank)]
    if arrow:
        head, dots, tail = rhs.partition("...")
        output = list(head) + (ellipsis if dots else []) + list(tail)
        if ellipsis_rank and not dots:
            raise AnalysisError(f"Einsum equation {equation!r}: the inputs have '...' axes but the output "
                                "does not say where they go")
        known = {label for labels in inputs for label in labels}
        for label in output:
            if label not in known:
                raise AnalysisError(f"Einsum equation {equation!r}: output label {label!r} is in no input")
        if len(set(output)) != len(output):
            raise AnalysisError(f"Einsum equation {equation!r}: the output repeats a label")
    else:
        letters = [label for labels in inputs for label in labels if not label.startswith("...")]
        output = ellipsis + sorted(label for label in set(letters) if letters.count(label) == 1)
    return inputs, output


@dataclass(frozen=True)
class Einsum(Op):
    """Einstein summation given by ``equation`` over any number of inputs."""

    equation: str

    def output_facts(self, inputs):
        if not inputs:
            raise AnalysisError("Einsum needs at least one input")
        dtype = inputs[0].dtype
        for index, fact in enumerate(inputs):
            if fact.dtype != dtype:
                raise AnalysisError(f"Einsum input {index} is {fact}, input 0 is {inputs[0]}")
        labels, output = parse_equation(self.equation, [f.rank for f in inputs])
        sizes: dict[str, object] = {}
        ellipsis_shapes = []
        for fact, term in zip(inputs, labels):
            ellipsis = []
            for label, dim in zip(term, fact.shape):
                if label.startswith("..."):
                    ellipsis.append(dim)
                    continue
                known = sizes.get(label)
                if known is None or (isinstance(known, TDim) and isinstance(dim, int)):
                    sizes[label] = dim
                elif isinstance(known, int) and isinstance(dim, int) and known != dim:
                    raise AnalysisError(f"Einsum {self.equation!r}: label {label!r} is {known} in one input "
                                        f"and {dim} in another")
            ellipsis_shapes.append(ellipsis)
        broadcast = broadcast_shapes(*ellipsis_shapes)
        for axis, dim in enumerate(reversed(broadcast)):
            sizes[f"...{axis}"] = dim
        return [TypedFact(dtype, [sizes[label] for label in output])]

    def rules(self, s, inputs, outputs):
        s.equals_all(*[i.datum_type for i in inputs], outputs[0].datum_type)

    def eval(self, inputs):
        dtype = inputs[0].dtype
        operands = [widened(x) for x in inputs]
        result = np.einsum(self.equation.replace(" ", ""), *operands, optimize=len(operands) > 1)
        return [np.asarray(result).astype(dtype, copy=False)]
