"""Writing generated files: only plain names inside the chosen folder, never through a link."""
from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Iterator, MutableMapping
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
    temporary = ""
    try:
        for _ in range(100):  # a new name each time: O_EXCL never opens what is there (a planted link)
            candidate = str(folder / f".{filename}.{secrets.token_hex(6)}.tmp")
            try:
                handle = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
            except FileExistsError:
                continue
            temporary = candidate
            break
        else:
            raise TractileError(f"cannot write {target}: no free temporary name beside it")
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except OSError as error:
        raise TractileError(f"cannot write {target}: {error.strerror or error}") from None
    finally:
        if temporary and os.path.exists(temporary):
            os.unlink(temporary)
    return target


class GeneratedFiles(MutableMapping[str, str]):
    """File name -> text, where a text may be made only when first read (a model's C, whose
    constants as text take long to render and a host build does not need)."""

    def __init__(self, texts: dict[str, str] | None = None):
        self._texts: dict[str, str | Callable[[], str]] = dict(texts or {})

    def defer(self, filename: str, render: Callable[[], str]) -> None:
        """``filename``'s text is ``render()``, called once, when first read."""
        self._texts[filename] = render

    def __getitem__(self, filename: str) -> str:
        text = self._texts[filename]
        if not isinstance(text, str):
            text = self._texts[filename] = text()
        return text

    def __setitem__(self, filename: str, text: str) -> None:
        self._texts[filename] = text

    def __delitem__(self, filename: str) -> None:
        del self._texts[filename]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __repr__(self) -> str:
        return f"GeneratedFiles({list(self._texts)})"
