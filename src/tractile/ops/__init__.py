"""Core ops, one module per family. See :class:`tractile.ops.base.Op` for the hooks."""
from .activations import Clip, LeakyRelu, Relu, Sigmoid, Tanh
from .array import Concat, Gather, Pad, Slice, Transpose
from .base import Op
from .binary import Add, Div, Mul, Pow, Sub
from .cast import Cast, Dropout, Identity
from .conv import Conv
from .io import Const, Source
from .matmul import Gemm, MatMul
from .nn import BatchNorm, Softmax
from .pool import AveragePool, GlobalPool, MaxPool
from .reduce import Reduce
from .shape import ConstantOfShape, Flatten, Reshape, Shape, Squeeze, Unsqueeze
from .window import Window

__all__ = [
    "Op", "Source", "Const", "Add", "Sub", "Mul", "Div", "Pow", "Relu", "Sigmoid", "Tanh", "LeakyRelu",
    "Clip", "Conv", "MatMul", "Gemm", "BatchNorm", "Softmax", "MaxPool", "AveragePool", "GlobalPool",
    "Reduce", "Reshape", "Flatten", "Shape", "Squeeze", "Unsqueeze", "ConstantOfShape", "Transpose",
    "Concat", "Slice", "Gather", "Pad", "Cast", "Identity", "Dropout", "Window",
]
