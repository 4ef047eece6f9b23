"""Input files of a batch job: finding them, reading them into model inputs, writing results.

Readers by extension: ``.npy`` (one array, the model's only input), ``.npz`` (arrays by input
name, or ``arr_0``, ``arr_1``... in input order), ``.wav``/``.flac``/``.ogg`` (audio through
``soundfile``: float32 samples, mono, channels averaged), images (``.png``, ``.jpg``, ``.bmp``
through Pillow: the pixel array, height × width × channels). An array with fewer dimensions
than its input gets leading axes of 1 (a 16,000-sample clip for a ``1,T`` input) and is cast
to the input's datum type.
"""
from __future__ import annotations

import glob
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import TractileError
from ..fact import InferenceFact

AUDIO = {".wav", ".flac", ".ogg"}
IMAGES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"}
READABLE = {".npy", ".npz"} | AUDIO | IMAGES


def find_inputs(patterns: Sequence[str] | str) -> list[Path]:
    """Every readable file matching the glob ``patterns`` (``**`` recurses), sorted, once each."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [str(patterns)]
    found: dict[str, Path] = {}
    for pattern in patterns:
        for name in glob.glob(str(pattern), recursive=True):
            path = Path(name)
            if path.is_file() and path.suffix.lower() in READABLE:
                found.setdefault(str(path.resolve()), path)
    if not found:
        raise TractileError(f"no input files match {', '.join(map(str, patterns))} (readable: "
                            f"{', '.join(sorted(READABLE))})")
    return sorted(found.values())


def read_arrays(path: Path, names: list[str]) -> list[np.ndarray]:
    """The arrays of one input file, in the model's input order."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            arrays = [np.load(path, allow_pickle=False)]
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                keys = list(data.keys())
                if all(name in data for name in names):
                    arrays = [data[name] for name in names]
                elif len(keys) >= len(names) and all(f"arr_{i}" in data for i in range(len(names))):
                    arrays = [data[f"arr_{i}"] for i in range(len(names))]
                else:
                    raise TractileError(f"{path}: holds {', '.join(keys)}; the model's inputs are "
                                        f"{', '.join(names)} (or give arr_0, arr_1... in order)")
        elif suffix in AUDIO:
            arrays = [_read_audio(path)]
        elif suffix in IMAGES:
            arrays = [_read_image(path)]
        else:
            raise TractileError(f"{path}: no reader for {suffix} files (readable: {', '.join(sorted(READABLE))})")
    except TractileError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise TractileError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None
    if len(arrays) != len(names):
        raise TractileError(f"{path}: {len(arrays)} array(s) for the model's {len(names)} inputs ({', '.join(names)})")
    return arrays


def _read_audio(path: Path) -> np.ndarray:
    try:
        import soundfile
    except ImportError:
        raise TractileError("reading audio needs soundfile: pip install 'tractile[audio]'") from None
    try:
        samples, _ = soundfile.read(str(path), dtype="float32", always_2d=True)
    except RuntimeError as error:  # soundfile's LibsndfileError
        raise TractileError(f"{path}: not readable audio ({error})") from None
    return samples.mean(axis=1).astype(np.float32)


def _read_image(path: Path) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError:
        raise TractileError("reading images needs Pillow: pip install 'tractile[image]'") from None
    with Image.open(path) as image:
        return np.asarray(image)


def fit(array: np.ndarray, fact, name: str, path: Path) -> np.ndarray:
    """``array`` with leading axes of 1 up to the input's rank, in the input's datum type (a
    model typed at its first run may not know the rank: the array stays as it is)."""
    if isinstance(fact, InferenceFact):
        if fact.shape.open:
            return array.astype(fact.dtype.np, copy=False) if fact.dtype is not None else array
        rank = len(fact.shape.dims)
    else:
        rank = len(fact.shape)
    if array.ndim > rank:
        raise TractileError(f"{path}: input {name!r} has {array.ndim} dims, the model wants {rank} ({fact})")
    array = array.reshape((1,) * (rank - array.ndim) + array.shape)
    return array.astype(fact.dtype.np, copy=False) if fact.dtype is not None else array


def result_path(out: Path, path: Path, root: Path) -> Path:
    """Where the result of ``path`` goes: its path under ``root``, under ``out``, as ``.npz``."""
    try:
        relative = path.resolve().relative_to(root)
    except ValueError:
        relative = Path(path.name)
    return out / relative.parent / f"{relative.name}.npz"


def write_atomically(target: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``target`` (.npz) through a temporary file renamed into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, **arrays)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def result_is_valid(target: Path, names: list[str]) -> bool:
    """Whether ``target`` is a complete result holding every output."""
    try:
        with np.load(target, allow_pickle=False) as data:
            return all(name in data for name in names)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return False


def common_root(paths: list[Path], patterns: Sequence[str] | str = ()) -> Path:
    """The folder the results mirror: the fixed part of the patterns (before any wildcard) when
    every input lies under it, so reruns with narrower patterns keep the same layout; else the
    deepest folder holding every input."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [str(patterns)]
    fixed = []
    for pattern in patterns:
        parts = Path(pattern).parts
        cut = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts) - 1)
        fixed.append(Path(*parts[:cut]).resolve() if cut else Path.cwd())
    resolved = [p.resolve() for p in paths]
    if fixed and len(set(fixed)) == 1 and all(root in p.parents for p in resolved for root in fixed[:1]):
        return fixed[0]
    return Path(os.path.commonpath([str(p.parent) for p in resolved]))
