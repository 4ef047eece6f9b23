"""Neural-network specific ops: Softmax / LogSoftmax / Hardmax, BatchNormalization, LRN, SwiGLU, Dropout."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from ..graph import OutletId
from ..patch import ModelPatch
from .base import Op, expect_inputs
from .binary import Add, Mul
from .quantized.softmax import log_softmax_recipe, softmax_recipe
from .unary import UnaryOp


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[-rank, rank)`` mapped to ``[0, rank)``; AnalysisError otherwise."""
    if not -rank <= axis < max(rank, 1):
        raise AnalysisError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def used_output_count(model, node) -> int:
    """How many leading outputs of ``node`` are read (by a node or as a model output)."""
    used = [slot for slot, outlet in enumerate(node.outputs)
            if outlet.successors or OutletId(node.id, slot) in model.outputs]
    return max(used, default=0) + 1


def drop_unused_outputs(model, node, field: str = "outputs") -> ModelPatch | None:
    """Replace an op with optional trailing outputs by one computing only those in use."""
    count = used_output_count(model, node)
    if count >= getattr(node.op, field):
        return None
    op = dataclasses.replace(node.op, **{field: count})
    return ModelPatch.replace_single_op(model, node, node.inputs, op, f"drop unused outputs of {node.name}")


def _flatten_last_axis(model, node) -> ModelPatch | None:
    """A legacy (flattening) op over the last axis alone is the modern op."""
    rank = model.outlet_fact(node.inputs[0]).rank
    if not node.op.legacy or rank == 0 or normalize_axis(node.op.axis, rank) != rank - 1:
        return None
    op = dataclasses.replace(node.op, axis=-1, legacy=False)
    return ModelPatch.replace_single_op(model, node, node.inputs, op, f"legacy {node.op.name} on the last axis")


@dataclass(frozen=True)
class Softmax(UnaryOp):
    """Softmax (or its log, ``log``) of ``beta * x`` along ``axis``; ``legacy`` (ONNX < 13)
    flattens every axis from ``axis`` on.

    Quantized (``quant`` set; TFLite's fixed-point kernels over the last axis), ``to`` is the
    output's datum type (None: the input's).
    """

    axis: int = -1
    legacy: bool = False
    log: bool = False
    beta: float = 1.0
    to: DatumType | None = None

    def output_facts(self, inputs):
        facts = super().output_facts(inputs)
        normalize_axis(self.axis, inputs[0].rank)
        if self.quant is not None and self._axes(inputs[0].rank) != (inputs[0].rank - 1,):
            raise AnalysisError(f"a quantized {self.name} runs over the last axis, not {self.axis}")
        return facts

    def quantized_dtype(self, x):
        return self.to or x.dtype

    def quantized_recipe(self, x):
        if self.log:
            if self.beta != 1.0:
                raise AnalysisError("a quantized log-softmax needs beta 1")
            return log_softmax_recipe(x, self.quant)
        return softmax_recipe(x, self.quant, self.beta, self.to or x.dtype)

    def _axes(self, rank: int) -> tuple[int, ...]:
        axis = normalize_axis(self.axis, rank)
        return tuple(range(axis, rank)) if self.legacy else (axis,)

    def compute(self, x):
        work = x.astype(np.float32) if x.dtype.kind == "V" else x
        if x.ndim == 0:
            out = np.zeros_like(work) if self.log else np.ones_like(work)
            return out.astype(x.dtype)
        axes = self._axes(x.ndim)
        shifted = work - np.max(work, axis=axes, keepdims=True)
        if self.beta != 1.0:
            shifted = shifted * work.dtype.type(self.beta)
        exp = np.exp(shifted)
        total = np.sum(exp, axis=axes, keepdims=True)
        if self.log:
            return (shifted - np.log(total)).astype(x.dtype, copy=False)
        exp /= total
        return exp.astype(x.dtype, copy=False)

    def cost(self, inputs):
        return {"flops": 5 * inputs[0].volume}

    def declutter(self, model, node):
        return _flatten_last_axis(model, node)


@dataclass(frozen=True)
class Hardmax(UnaryOp):
    """1 at the first maximum along ``axis``, 0 elsewhere; ``legacy`` (ONNX < 13) flattens
    every axis from ``axis`` on into one."""

    axis: int = -1
    legacy: bool = False

    def output_facts(self, inputs):
        facts = super().output_facts(inputs)
        normalize_axis(self.axis, inputs[0].rank)
        return facts

    def compute(self, x):
        if x.ndim == 0:
            return np.ones_like(x)
        axis = normalize_axis(self.axis, x.ndim)
        rows = x.reshape(*x.shape[:axis], -1) if self.legacy else np.moveaxis(x, axis, -1)
        y = np.zeros(rows.shape, dtype=x.dtype)
        if rows.size:
            np.put_along_axis(y, np.argmax(rows, axis=-1)[..., None], 1, axis=-1)
        return y.reshape(x.shape) if self.legacy else np.moveaxis(y, -1, axis)

    def declutter(self, model, node):
        return _flatten_last_axis(model, node)


@dataclass(frozen=True)
class BatchNorm(Op):
    """Inference BatchNormalization: inputs X, scale, B, mean, var (channel axis 1)."""

    weight_inputs = (1, 2, 3, 4)

    epsilon: float = 1e-5

    def output_facts(self, inputs):
        expect_inputs(inputs, 5, self)
        x = inputs[0]
        if x.rank < 2:
            raise AnalysisError(f"BatchNormalization needs an input of rank >= 2, got {x}")
        for name, fact in zip(("scale", "B", "mean", "var"), inputs[1:]):
            if fact.rank != 1 or fact.shape[0] != x.shape[1]:
                raise AnalysisError(f"{name} should have shape ({x.shape[1]},) for {x.shape[1]} channels, got {fact}")
        return [TypedFact(x.dtype, x.shape)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        for param in inputs[1:]:
            s.equals(param.rank, 1)
            s.equals(param.shape[0], inputs[0].shape[1],
                     why="BatchNormalization has {} channels but a parameter has {}")

    def affine(self, scale, bias, mean, var) -> tuple[np.ndarray, np.ndarray]:
        """Per-channel (multiplier, offset) with ``y = x * multiplier + offset``."""
        dtype = np.result_type(scale.dtype, np.float32)
        multiplier = scale.astype(dtype) / np.sqrt(var.astype(dtype) + dtype.type(self.epsilon))
        return multiplier, bias.astype(dtype) - mean.astype(dtype) * multiplier

    def eval(self, inputs):
        x = inputs[0]
        multiplier, offset = self.affine(*inputs[1:])
        shape = (-1,) + (1,) * (x.ndim - 2)
        y = x * multiplier.reshape(shape).astype(x.dtype) + offset.reshape(shape).astype(x.dtype)
        return [y.astype(x.dtype, copy=False)]

    def declutter(self, model, node):
        """With constant parameters, become a per-channel Mul and Add (which may fold further)."""
        params = [model.outlet_fact(o).konst for o in node.inputs[1:]]
        if any(p is None for p in params):
            return None
        x = model.outlet_fact(node.inputs[0])
        multiplier, offset = self.affine(*params)
        shape = (-1,) + (1,) * (x.rank - 2)
        patch = ModelPatch(model, f"batchnorm as affine {node.name}")
        data = patch.tap(node.inputs[0])
        scale = patch.add_const(f"{node.name}.multiplier", multiplier.reshape(shape).astype(x.dtype.np))
        shift = patch.add_const(f"{node.name}.offset", offset.reshape(shape).astype(x.dtype.np))
        scaled = patch.wire_node(f"{node.name}.mul", Mul(), [data, scale])[0]
        y = patch.wire_node(f"{node.name}.add", Add(), [scaled, shift])[0]
        patch.shunt(OutletId(node.id, 0), y)
        patch.obliterate(node.id)
        return patch


@dataclass(frozen=True)
class BatchNormTraining(BatchNorm):
    """Training-mode BatchNormalization (ONNX >= 14): normalises with the batch statistics and
    outputs, when ``outputs`` is 3, the updated running mean and variance too."""

    momentum: float = 0.9
    outputs: int = 1

    @property
    def nboutputs(self) -> int:
        return self.outputs

    def output_facts(self, inputs):
        facts = super().output_facts(inputs)
        x = inputs[0]
        return (facts + [TypedFact(x.dtype, (x.shape[1],))] * 2)[:self.outputs]

    def eval(self, inputs):
        x, scale, bias, mean, var = inputs
        axes = tuple(a for a in range(x.ndim) if a != 1)
        work = x.astype(np.float64 if x.dtype == np.float64 else np.float32)
        batch_mean = np.mean(work, axis=axes)
        batch_var = np.var(work, axis=axes)
        multiplier, offset = self.affine(scale, bias, batch_mean, batch_var)
        shape = (-1,) + (1,) * (x.ndim - 2)
        y = (work * multiplier.reshape(shape) + offset.reshape(shape)).astype(x.dtype)
        running_mean = mean * self.momentum + batch_mean * (1 - self.momentum)
        running_var = var * self.momentum + batch_var * (1 - self.momentum)
        return [y, running_mean.astype(x.dtype), running_var.astype(x.dtype)][:self.outputs]

    def declutter(self, model, node):
        return None


@dataclass(frozen=True)
class LRN(UnaryOp):
    """Local response normalization across channels (axis 1)."""

    size: int = 5
    alpha: float = 1e-4
    beta: float = 0.75
    bias: float = 1.0
    accepts = "float"

    def compute(self, x):
        work = x.astype(np.float32) if x.dtype == np.float16 else x
        squares = np.square(work)
        before, after = (self.size - 1) // 2, self.size - 1 - (self.size - 1) // 2
        padded = np.pad(squares, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
        cumulative = np.cumsum(padded, axis=1)
        zeros = np.zeros_like(cumulative[:, :1])
        cumulative = np.concatenate([zeros, cumulative], axis=1)
        window_sum = cumulative[:, self.size:] - cumulative[:, :-self.size]
        scale = (self.bias + (self.alpha / self.size) * window_sum) ** self.beta
        return (work / scale).astype(x.dtype, copy=False)


@dataclass(frozen=True)
class SwiGLU(Op):
    """``A * sigmoid(alpha * A) * B`` for a gate A and a value B of one shape (no broadcasting)."""

    alpha: float = 1.0

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        gate, value = inputs
        if not gate.dtype.is_float or gate.dtype != value.dtype or gate.shape != value.shape:
            raise AnalysisError(f"SwiGLU needs a gate and a value of one float type and shape, got {gate} and {value}")
        return [TypedFact(gate.dtype, gate.shape)]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])
        s.equals_shape(inputs[1], outputs[0])

    def eval(self, inputs):
        gate, value = inputs
        work = np.float64 if gate.dtype == np.float64 else np.float32
        a = gate.astype(work)
        swish = a * (0.5 + 0.5 * np.tanh(a * work(0.5 * self.alpha)))
        return [(swish * value.astype(work)).astype(gate.dtype)]


@dataclass(frozen=True)
class TrainingDropout(Op):
    """Dropout with run-time inputs (ONNX >= 12): x, then ratio (when ``has_ratio``, else 0.5)
    and training_mode.

    In training mode each element is kept with probability ``1 - ratio`` (NumPy's
    legacy ``RandomState(seed)`` draws, as the ONNX reference does) and scaled by
    ``1 / (1 - ratio)``; otherwise the data passes unchanged. The optional second
    output is the keep mask.
    """

    seed: int | None = None
    has_ratio: bool = True
    with_mask: bool = False
    is_random = True

    @property
    def nboutputs(self) -> int:
        return 2 if self.with_mask else 1

    def output_facts(self, inputs):
        expect_inputs(inputs, 2 + self.has_ratio, self)
        x = inputs[0]
        if self.has_ratio and (not inputs[1].dtype.is_float or inputs[1].rank != 0):
            raise AnalysisError(f"ratio should be a float scalar, got {inputs[1]}")
        if inputs[-1].dtype != DatumType.BOOL or inputs[-1].rank != 0:
            raise AnalysisError(f"training_mode should be a bool scalar, got {inputs[-1]}")
        facts = [TypedFact(x.dtype, x.shape)]
        return facts + [TypedFact(DatumType.BOOL, x.shape)] if self.with_mask else facts

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x = inputs[0]
        ratio = inputs[1] if self.has_ratio else np.asarray(0.5, dtype=np.float32)
        if not bool(inputs[-1]) or float(ratio) == 0:
            return [x, np.ones(x.shape, dtype=bool)][:self.nboutputs]
        if not 0 <= float(ratio) < 1:
            raise RunError(f"Dropout ratio must be in [0, 1), got {float(ratio)}")
        keep = np.random.RandomState(self.seed).uniform(0.0, 1.0, x.shape) >= float(ratio)
        kept_scale = (np.asarray(1, dtype=ratio.dtype) / (1 - ratio)).astype(x.dtype)
        y = np.where(keep, x * kept_scale, np.zeros((), x.dtype))
        return [y.astype(x.dtype, copy=False), keep][:self.nboutputs]

    def declutter(self, model, node):
        """With a constant false training_mode this is an inference Dropout."""
        from .cast import Dropout

        training = model.outlet_fact(node.inputs[-1]).konst
        if training is None or bool(training):
            return None
        return ModelPatch.replace_single_op(model, node, node.inputs[:1], Dropout(with_mask=self.with_mask),
                                            f"inference dropout {node.name}")
