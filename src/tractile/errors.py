"""Errors a user can cause. Every one derives from :class:`TractileError`."""
from __future__ import annotations


class TractileError(Exception):
    """Base class of every error caused by a model, an input or an option."""


class ModelFormatError(TractileError):
    """The model file is malformed; the message says where."""


class UnsupportedOpError(TractileError):
    """One or more ops of a model have no implementation.

    ``ops`` lists ``(domain, op_type, opset, node names)`` for every unsupported op.
    """

    def __init__(self, message: str, ops: list[tuple[str, str, int, list[str]]] | None = None):
        super().__init__(message)
        self.ops = ops or []


class AnalysisError(TractileError):
    """Facts conflict, or an op cannot accept the facts of its inputs.

    Raised first without context by ops and solvers, then enriched by the graph
    layer with the node (index, name, op), the port and the facts involved.
    """

    def __init__(self, message: str, node: str | None = None):
        super().__init__(f"{node}: {message}" if node else message)
        self.message = message
        self.node = node


class RunTimeFactsError(AnalysisError):
    """Analysis needs facts that only a run's inputs give (an input without a shape, a rank
    that depends on data): ``tractile.load`` then types and plans the model at its first run.
    Wrapping the error in context (:func:`with_node_context`, :func:`rewrapped`) keeps its class."""


class UnknownRankError(RunTimeFactsError):
    """An op needs the rank of a value whose rank is only known at run time."""


class RunError(TractileError):
    """A run was given inputs that do not match the model, or hit a resource limit."""


def node_label(node) -> str:
    """``node #12 "conv1" (Conv)``: how errors name a node."""
    return f'node #{node.id} "{node.name}" ({node.op.name})'


def with_node_context(error: AnalysisError, node, input_facts=None) -> AnalysisError:
    """Return ``error`` enriched with the node it happened at (unless it names one already)."""
    if error.node is not None:
        return error
    message = error.message
    if input_facts:
        message += " (inputs: " + "; ".join(str(f) for f in input_facts) + ")"
    enriched = rewrapped(error, message, node=node_label(node))
    enriched.__cause__ = error.__cause__ or error
    return enriched


def error_kind(error: AnalysisError) -> type[AnalysisError]:
    """``error``'s class when it means something to callers (a run-time fact is needed), else
    AnalysisError: what an error wrapping it in context should be."""
    return type(error) if isinstance(error, RunTimeFactsError) else AnalysisError


def rewrapped(error: AnalysisError, message: str, node: str | None = None) -> AnalysisError:
    """An AnalysisError saying ``message``, of ``error``'s kind (:func:`error_kind`)."""
    return error_kind(error)(message, node=node)
