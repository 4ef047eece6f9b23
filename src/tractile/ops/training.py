"""One optimisation step of the ONNX training optimisers: Adagrad, Momentum, Adam.

Each op updates ``count`` tensors at once. Its inputs are the learning rate ``R`` and the
update count ``T`` (scalars), then the ``count`` tensors, their gradients and, per kind of
optimiser state, the ``count`` states; its outputs are the new tensors then the new states,
in the same order. The arithmetic runs in each tensor's own float type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, expect_inputs


@dataclass(frozen=True)
class Optimizer(Op):
    """Base of the optimiser steps: input layout, facts, and the per-tensor loop."""

    count: int = 1
    #: names of the per-tensor states after the gradient (Adagrad: H; Momentum: V; Adam: V, H)
    states: ClassVar[tuple[str, ...]] = ()

    @property
    def nboutputs(self) -> int:
        return self.count * (1 + len(self.states))

    def output_facts(self, inputs):
        groups = 2 + len(self.states)
        expect_inputs(inputs, 2 + groups * self.count, self)
        rate, step = inputs[0], inputs[1]
        if rate.dtype not in (DatumType.F32, DatumType.F64) or rate.volume != 1:
            raise AnalysisError(f"{self.name} learning rate R must be an f32 or f64 scalar, got {rate}")
        if step.dtype != DatumType.I64 or step.volume != 1:
            raise AnalysisError(f"{self.name} update count T must be an i64 scalar, got {step}")
        names = ("X", "G", *self.states)
        for index in range(self.count):
            tensor = inputs[2 + index]
            if tensor.dtype not in (DatumType.F32, DatumType.F64):
                raise AnalysisError(f"{self.name} optimises f32 or f64 tensors, got {tensor} for X[{index}]")
            for group in range(1, groups):
                other = inputs[2 + group * self.count + index]
                if other.dtype != tensor.dtype or other.shape != tensor.shape:
                    raise AnalysisError(f"{self.name} {names[group]}[{index}] should be like X[{index}] "
                                        f"({tensor}), got {other}")
        facts = [TypedFact(fact.dtype, fact.shape) for fact in inputs[2:2 + self.count]]
        return facts * (1 + len(self.states))

    def rules(self, s, inputs, outputs):
        for group in range(1 + len(self.states)):
            source = 2 + (group + 1 if group else 0) * self.count
            for index in range(self.count):
                s.equals_shape(inputs[source + index], outputs[group * self.count + index])
                s.equals(inputs[source + index].datum_type, outputs[group * self.count + index].datum_type)

    def eval(self, inputs):
        rate, step = inputs[0], inputs[1]
        if rate.size != 1 or step.size != 1:
            raise RunError(f"{self.name} R and T must be scalars, got shapes {rate.shape} and {step.shape}")
        groups = 2 + len(self.states)
        results = []
        for index in range(self.count):
            x, gradient, *states = (inputs[2 + group * self.count + index] for group in range(groups))
            dtype = x.dtype.type
            with np.errstate(all="ignore"):
                results.append(self.update(dtype(rate.reshape(())), int(step.reshape(())), x, gradient, *states))
        return [np.asarray(results[index][group], dtype=inputs[2 + index].dtype)
                for group in range(1 + len(self.states)) for index in range(self.count)]

    def update(self, rate, step: int, x: np.ndarray, gradient: np.ndarray, *states: np.ndarray) -> tuple:
        """The new tensor and new states of one optimised tensor."""
        raise NotImplementedError

    def cost(self, inputs):
        return {"flops": sum(fact.volume for fact in inputs[2:2 + self.count]) * 8}


@dataclass(frozen=True)
class Adagrad(Optimizer):
    """ADAGRAD: the rate decays as ``R / (1 + T * decay_factor)``, each coordinate is scaled by
    the root of its accumulated squared (L2-regularised) gradient ``H``."""

    norm_coefficient: float = 0.0
    decay_factor: float = 0.0
    epsilon: float = 1e-6
    states: ClassVar[tuple[str, ...]] = ("H",)

    def update(self, rate, step, x, gradient, squares):
        dtype = x.dtype.type
        rate = rate / (dtype(1) + dtype(step) * dtype(self.decay_factor))
        regularized = dtype(self.norm_coefficient) * x + gradient
        squares = squares + regularized * regularized
        return x - rate * regularized / (np.sqrt(squares) + dtype(self.epsilon)), squares


@dataclass(frozen=True)
class Momentum(Optimizer):
    """Stochastic gradient with momentum ``V`` (standard, or Nesterov's with ``nesterov``); the
    gradient's coefficient ``beta`` is 1 on the first step (``T == 0``)."""

    alpha: float = 0.0
    beta: float = 0.0
    norm_coefficient: float = 0.0
    nesterov: bool = False
    states: ClassVar[tuple[str, ...]] = ("V",)

    def update(self, rate, step, x, gradient, momentum):
        dtype = x.dtype.type
        regularized = dtype(self.norm_coefficient) * x + gradient
        beta = dtype(self.beta if step > 0 else 1.0)
        momentum = dtype(self.alpha) * momentum + beta * regularized
        direction = regularized + dtype(self.alpha) * momentum if self.nesterov else momentum
        return x - rate * direction, momentum


@dataclass(frozen=True)
class Adam(Optimizer):
    """Adam: running averages of the gradient ``V`` (weight ``alpha``) and of its square ``H``
    (weight ``beta``), bias-corrected rate once ``T > 0``, then ``X *= 1 - norm_coefficient_post``."""

    alpha: float = 0.9
    beta: float = 0.999
    epsilon: float = 1e-6
    norm_coefficient: float = 0.0
    norm_coefficient_post: float = 0.0
    states: ClassVar[tuple[str, ...]] = ("V", "H")

    def update(self, rate, step, x, gradient, average, squares):
        dtype = x.dtype.type
        alpha, beta = dtype(self.alpha), dtype(self.beta)
        regularized = dtype(self.norm_coefficient) * x + gradient
        average = alpha * average + (dtype(1) - alpha) * regularized
        squares = beta * squares + (dtype(1) - beta) * regularized * regularized
        if step > 0:
            rate = rate * np.sqrt(dtype(1) - beta ** step) / (dtype(1) - alpha ** step)
        x = x - rate * average / (np.sqrt(squares) + dtype(self.epsilon))
        return (dtype(1) - dtype(self.norm_coefficient_post)) * x, average, squares
