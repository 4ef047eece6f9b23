"""The activation functions of ONNX recurrent ops (RNN, GRU, LSTM), as in-place kernels."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError

#: lower-case name -> (default alpha, default beta); None where the function takes no such parameter
ACTIVATION_PARAMETERS: dict[str, tuple[float | None, float | None]] = {
    "relu": (None, None),
    "tanh": (None, None),
    "sigmoid": (None, None),
    "affine": (1.0, 0.0),
    "leakyrelu": (0.01, None),
    "thresholdedrelu": (1.0, None),
    "scaledtanh": (1.0, 1.0),
    "hardsigmoid": (0.2, 0.5),
    "elu": (1.0, None),
    "softsign": (None, None),
    "softplus": (None, None),
}

#: canonical spelling of each name, for dumps and errors
CANONICAL_NAMES = {
    "relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "affine": "Affine", "leakyrelu": "LeakyRelu",
    "thresholdedrelu": "ThresholdedRelu", "scaledtanh": "ScaledTanh", "hardsigmoid": "HardSigmoid",
    "elu": "Elu", "softsign": "Softsign", "softplus": "Softplus",
}


@dataclass(frozen=True)
class RnnActivation:
    """A recurrent activation function (``kind`` is its lower-case ONNX name) and its parameters."""

    kind: str
    alpha: float | None = None
    beta: float | None = None

    @staticmethod
    def make(name: str, alpha: float | None = None, beta: float | None = None) -> RnnActivation:
        """The activation ``name`` (any case); missing parameters take the ONNX defaults."""
        kind = name.lower()
        if kind not in ACTIVATION_PARAMETERS:
            known = ", ".join(CANONICAL_NAMES.values())
            raise AnalysisError(f"unknown recurrent activation {name!r} (known: {known})")
        default_alpha, default_beta = ACTIVATION_PARAMETERS[kind]
        alpha = None if default_alpha is None else default_alpha if alpha is None else float(alpha)
        beta = None if default_beta is None else default_beta if beta is None else float(beta)
        return RnnActivation(kind, alpha, beta)

    @property
    def takes_alpha(self) -> bool:
        return ACTIVATION_PARAMETERS[self.kind][0] is not None

    @property
    def takes_beta(self) -> bool:
        return ACTIVATION_PARAMETERS[self.kind][1] is not None

    @property
    def input_scale(self) -> float:
        """A factor that the caller may fold into the pre-activations (see ``kernel(prescaled=True)``)."""
        return 0.5 if self.kind == "sigmoid" else 1.0

    def __str__(self) -> str:
        params = [str(p) for p in (self.alpha, self.beta) if p is not None]
        name = CANONICAL_NAMES[self.kind]
        return f"{name}({','.join(params)})" if params else name

    def op(self):
        """The core activation op computing this function (None for Affine and ScaledTanh, which
        have none)."""
        from .activations import HardSigmoid, LeakyRelu, Relu, Sigmoid, Tanh, ThresholdedRelu
        from .smooth import Elu, Softplus, Softsign

        made = {"relu": Relu, "tanh": Tanh, "sigmoid": Sigmoid, "softsign": Softsign, "softplus": Softplus}
        if self.kind in made:
            return made[self.kind]()
        if self.kind == "leakyrelu":
            return LeakyRelu(self.alpha)
        if self.kind == "thresholdedrelu":
            return ThresholdedRelu(self.alpha)
        if self.kind == "hardsigmoid":
            return HardSigmoid(self.alpha, self.beta)
        if self.kind == "elu":
            return Elu(self.alpha)
        return None

    def c_expression(self) -> str:
        """The function on a float ``v`` in C: its core activation op's expression."""
        from .unary import c_float

        op = self.op()
        if op is not None:
            return op.c_expression()
        if self.kind == "affine":
            return f"({c_float(self.alpha)} * v + {c_float(self.beta)})"
        return f"({c_float(self.alpha)} * tanhf({c_float(self.beta)} * v))"  # scaledtanh

    def kernel(self, dtype, prescaled: bool = False) -> Callable[[np.ndarray, np.ndarray], object]:
        """A function ``(x, out)`` that writes the activation of ``x`` into ``out`` (which may be ``x``).

        With ``prescaled``, ``x`` already holds the pre-activations times :attr:`input_scale`.
        """
        dtype = np.dtype(dtype)
        alpha = None if self.alpha is None else np.asarray(self.alpha, dtype)
        beta = None if self.beta is None else np.asarray(self.beta, dtype)
        zero, half, one = (np.asarray(v, dtype) for v in (0, 0.5, 1))
        kind = self.kind
        if kind == "tanh":
            return np.tanh
        if kind == "sigmoid":
            def sigmoid(x, out):
                if not prescaled:
                    x = np.multiply(x, half, out)
                np.tanh(x, out)
                np.multiply(out, half, out)
                np.add(out, half, out)
            return sigmoid
        if kind == "relu":
            return lambda x, out: np.maximum(x, zero, out=out)
        if kind == "affine":
            return lambda x, out: np.add(np.multiply(x, alpha, out), beta, out)
        if kind == "leakyrelu":
            return lambda x, out: np.copyto(out, np.where(x >= zero, x, x * alpha))
        if kind == "thresholdedrelu":
            return lambda x, out: np.copyto(out, np.where(x > alpha, x, zero))
        if kind == "scaledtanh":
            return lambda x, out: np.multiply(np.tanh(np.multiply(x, beta, out), out), alpha, out)
        if kind == "hardsigmoid":
            return lambda x, out: np.clip(np.add(np.multiply(x, alpha, out), beta, out), zero, one, out)
        if kind == "elu":
            return lambda x, out: np.copyto(out, np.where(x >= zero, x, alpha * np.expm1(np.minimum(x, zero))))
        if kind == "softsign":
            return lambda x, out: np.divide(x, np.abs(x) + one, out)
        return lambda x, out: np.logaddexp(x, zero, out)  # softplus
