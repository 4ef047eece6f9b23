"""Writing generated files: only plain names inside the chosen folder, never through a link."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from ..errors import TractileError

_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def write_file(folder: str | os.PathLike, filename: str, text: str) -> Path:
    """Write ``text`` as ``folder/filename``; the path written.

    ``filename`` must be a plain name (no folder part, no leading dot). The text goes to a new
    file renamed over the old one, so a symbolic or hard link planted in the folder under that
    name is replaced, never followed: nothing is written outside ``folder``.
    """
    if not _FILE_NAME.fullmatch(filename) or ".." in filename:
        raise TractileError(f"refusing to write a generated file named {filename!r}: not a plain file name")
    folder = Path(folder)
    target = folder / filename
    if target.is_dir() and not target.is_symlink():
        raise TractileError(f"cannot write {target}: a folder of that name is in the way")
    handle, temporary = tempfile.mkstemp(prefix=f".{filename}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except OSError as error:
        raise TractileError(f"cannot write {target}: {error.strerror or error}") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target
