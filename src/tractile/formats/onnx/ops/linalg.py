"""ONNX linear algebra: Det."""
from __future__ import annotations

from ....ops.linalg import Det
from ..registry import onnx_op

onnx_op("Det", since=11)(lambda node: Det())
