"""ONNX signal ops: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix."""
from __future__ import annotations

import numpy as np

from ....ops.signal import DFT, STFT, BlackmanWindow, HammingWindow, HannWindow, MelWeightMatrix
from ..registry import OnnxNode, Translated, onnx_op

_ABSENT = np.zeros(0, dtype=np.int64)


def _dft(node: OnnxNode) -> DFT:
    return DFT(bool(node.int("inverse", 0)), bool(node.int("onesided", 0)))


@onnx_op("DFT", since=17)
def dft_v17(node: OnnxNode):
    axis = np.asarray(node.int("axis", 1), dtype=np.int64)
    return Translated(_dft(node), [0, 1 if node.present(1) else _ABSENT, axis])


@onnx_op("DFT", since=20)
def dft(node: OnnxNode):
    axis = 2 if node.present(2) else np.asarray(-2, dtype=np.int64)
    return Translated(_dft(node), [0, 1 if node.present(1) else _ABSENT, axis])


@onnx_op("STFT", since=17)
def stft(node: OnnxNode):
    window = 2 if node.present(2) else np.zeros(0, dtype=np.float32)
    return Translated(STFT(bool(node.int("onesided", 1))), [0, 1, window, 3 if node.present(3) else _ABSENT])


def _output_type(node: OnnxNode):
    from ..types import datum_type

    return datum_type(node.int("output_datatype", 1), f"{node!r} output_datatype")


def _window(kind):
    return lambda node: kind(bool(node.int("periodic", 1)), _output_type(node))


onnx_op("HannWindow", since=17)(_window(HannWindow))
onnx_op("HammingWindow", since=17)(_window(HammingWindow))
onnx_op("BlackmanWindow", since=17)(_window(BlackmanWindow))
onnx_op("MelWeightMatrix", since=17)(lambda node: MelWeightMatrix(_output_type(node)))
