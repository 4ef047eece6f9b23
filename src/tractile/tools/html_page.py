"""Self-contained HTML pages (the graph page, the compile report): a template from ``assets/``
with its style and scripts inlined and the page's data embedded as JSON. Nothing is fetched
from the network, and no text from a model ever reaches the page as markup: the data is JSON
without ``<``, ``>`` or ``&``, which the page's script inserts as text."""
from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any

from ..errors import TractileError


def read_asset(filename: str) -> str:
    """The text of one of the pages' assets (``tractile/tools/assets``)."""
    try:
        return (resources.files("tractile.tools") / "assets" / filename).read_text(encoding="utf-8")
    except OSError as error:
        raise TractileError(f"tractile's page template is missing ({error}): reinstall tractile") from None


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside a ``<script>`` element: ASCII only (json's default), and no
    ``<``, ``>`` or ``&`` at all, so nothing in a name can close the script."""
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    return payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(template: str, data: Any, title: str, assets: dict[str, str]) -> str:
    """The ``template`` asset with ``__TITLE__`` (escaped), ``__DATA__`` (:func:`script_json`) and
    each placeholder of ``assets`` (placeholder -> asset file name) replaced."""
    parts = {placeholder: read_asset(filename) for placeholder, filename in assets.items()}
    parts["__TITLE__"] = html.escape(title)
    parts["__DATA__"] = script_json(data)
    page = read_asset(template)
    # one pass: text put in by one placeholder is never searched for the next
    return re.sub("|".join(re.escape(key) for key in parts), lambda m: parts[m.group()], page)


__all__ = ["read_asset", "script_json", "render_page"]
