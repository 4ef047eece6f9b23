"""ONNX models exported from PyTorch for the benchmarks (fixed random weights, batch 1):
a small transformer encoder, a conformer block and a CRNN. Needs torch (skipped without it)."""
from __future__ import annotations

import io

import numpy as np
import onnx


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _export(module, example, opset: int = 17):
    import torch

    module.eval()
    buffer = io.BytesIO()
    # traced with gradients on, so that PyTorch takes no fused inference path (which has no ONNX form)
    try:
        torch.onnx.export(module, (example,), buffer, opset_version=opset, input_names=["x"],
                          output_names=["y"], dynamo=False)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(module, (example,), buffer, opset_version=opset, input_names=["x"],
                          output_names=["y"])
    return onnx.load_from_string(buffer.getvalue()), [example.numpy().astype(np.float32)]


def transformer_encoder(width: int = 128, heads: int = 4, layers: int = 2, steps: int = 64):
    """Two post-norm transformer encoder layers (4 heads, width 128, FFN 256) on 64 tokens."""
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=0.0,
                                             batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    return _export(encoder, torch.randn(1, steps, width))


def conformer_block(width: int = 144, heads: int = 4, kernel: int = 15, steps: int = 64):
    """One conformer block (Gulati et al.): half-step feed-forward, multi-head self-attention,
    convolution module (pointwise + GLU, depthwise, batch norm, SiLU, pointwise), half-step
    feed-forward, layer norm; width 144 on 64 frames."""
    import torch
    from torch import nn

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.SiLU(),
                                     nn.Linear(4 * width, width))

        def forward(self, x):
            return self.net(x)

    class Convolution(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.pointwise = nn.Conv1d(width, 2 * width, 1)
            self.depthwise = nn.Conv1d(width, width, kernel, padding=kernel // 2, groups=width)
            self.batch_norm = nn.BatchNorm1d(width)
            self.out = nn.Conv1d(width, width, 1)

        def forward(self, x):
            y = self.norm(x).transpose(1, 2)
            y = nn.functional.glu(self.pointwise(y), dim=1)
            y = nn.functional.silu(self.batch_norm(self.depthwise(y)))
            return self.out(y).transpose(1, 2)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ff1, self.ff2 = FeedForward(), FeedForward()
            self.attention_norm = nn.LayerNorm(width)
            self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
            self.conv = Convolution()
            self.norm = nn.LayerNorm(width)

        def forward(self, x):
            x = x + 0.5 * self.ff1(x)
            y = self.attention_norm(x)
            x = x + self.attention(y, y, y, need_weights=False)[0]
            x = x + self.conv(x)
            x = x + 0.5 * self.ff2(x)
            return self.norm(x)

    torch.manual_seed(1)
    return _export(Block(), torch.randn(1, steps, width))


def crnn(mels: int = 40, frames: int = 100, hidden: int = 64, classes: int = 12):
    """A CRNN on a log-mel spectrogram (1 x 1 x 40 x 100): two conv + batch norm + ReLU + max-pool
    stages, a bidirectional GRU over time, a per-frame classifier."""
    import torch
    from torch import nn

    class Crnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d((2, 1)),
                nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d((2, 1)))
            self.gru = nn.GRU(64 * (mels // 4), hidden, batch_first=True, bidirectional=True)
            self.classify = nn.Linear(2 * hidden, classes)

        def forward(self, x):
            y = self.features(x)  # 1, 64, mels/4, frames
            y = y.flatten(1, 2).transpose(1, 2)  # 1, frames, 64 * mels/4
            y, _ = self.gru(y)
            return self.classify(y)

    torch.manual_seed(2)
    return _export(Crnn(), torch.randn(1, 1, mels, frames))
