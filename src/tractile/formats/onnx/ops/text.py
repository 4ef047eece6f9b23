"""ONNX text ops (translations registered on import)."""
from __future__ import annotations
