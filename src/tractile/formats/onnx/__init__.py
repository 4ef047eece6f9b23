"""ONNX front end: ``load_onnx`` and the op registry."""
from .loader import load_onnx
from .registry import REGISTRY, OnnxNode, Translated, onnx_op, supported_ops

__all__ = ["load_onnx", "onnx_op", "OnnxNode", "Translated", "REGISTRY", "supported_ops"]
