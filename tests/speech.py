"""A speech-like test signal and silero-vad's chunk loop (used by tests and bench/bench_silero_vad.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

#: silero-vad at 16 kHz: 512 new samples per call, after the last 64 of the previous call
CHUNK, CONTEXT, RATE = 512, 64, 16000


def speech_like(seconds: float, rate: int = RATE, seed: int = 0) -> np.ndarray:
    """Voiced syllables (a gliding 100-200 Hz pitch with 11 harmonics, 4 per second, in phrases
    with pauses) over faint noise, plus bursts of loud noise (clicks, breath): what a VAD must
    tell apart. Float32 in [-1, 1]."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    pitch = 140 + 40 * np.sin(2 * np.pi * 0.7 * t) + 15 * np.sin(2 * np.pi * 3.1 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    syllables = np.sqrt(np.clip(np.sin(2 * np.pi * 4.0 * t), 0, None))
    phrases = np.sin(2 * np.pi * 0.25 * t) > -0.3
    signal = 0.3 * voiced * syllables * phrases + 0.01 * rng.standard_normal(n)
    bursts = np.repeat(rng.random(n // 1600 + 1) < 0.15, 1600)[:n]
    signal += 0.2 * bursts * rng.standard_normal(n)
    return np.clip(signal, -1, 1).astype(np.float32)


def chunks(audio: np.ndarray, chunk: int = CHUNK, context: int = CONTEXT):
    """The model inputs, shape (1, context + chunk): each chunk after the previous one's tail."""
    tail = np.zeros((1, context), np.float32)
    for start in range(0, len(audio) - chunk + 1, chunk):
        x = np.concatenate([tail, audio[None, start:start + chunk]], axis=1)
        tail = x[:, -context:]
        yield x


def silero_vad_files() -> dict[str, Path]:
    """The ONNX files the silero-vad package ships, by name (empty when it is not installed)."""
    try:
        import silero_vad
    except ImportError:
        return {}
    data = Path(silero_vad.__file__).parent / "data"
    return {name: data / name for name in ("silero_vad.onnx", "silero_vad_16k_op15.onnx") if (data / name).exists()}
