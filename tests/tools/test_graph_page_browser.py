"""The graph page in headless Chromium: it loads cleanly, draws the nodes, and groups collapse.

Needs selenium (the ``test`` extra) and Debian's ``chromium`` and ``chromium-driver``
(``make test`` installs them when apt-get is usable); skips naming what is missing.
"""
from __future__ import annotations

import pytest

from tractile.cli.main import main
from tractile.tools.html_graph import write_html

from .big_graph import big_scoped_model

pytest.importorskip("kiwisolver")


def _open(driver, path) -> None:
    driver.get(path.as_uri())
    driver.execute_script("return document.readyState")
    problems = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert problems == []
    assert driver.execute_script("return window.tractileGraph.errors") == []


def _counts(driver) -> tuple[int, int]:
    """(nodes drawn, collapsed groups drawn), checked against the page's own count."""
    nodes = len(driver.find_elements("css selector", "#viewport g.node"))
    groups = len(driver.find_elements("css selector", "#viewport g.group.collapsed"))
    assert (nodes, groups) == tuple(driver.execute_script(
        "return [tractileGraph.visibleNodes(), tractileGraph.visibleGroups()]"))
    return nodes, groups


def test_small_page_collapses_expands_and_shows_details(browser, scoped_onnx, tmp_path):
    page = tmp_path / "scoped.html"
    assert main(["dump", str(scoped_onnx), "-i", "1,8,f32", "--html", str(page)]) == 0
    _open(browser, page)
    assert _counts(browser) == (2, 3)  # x and the softmax; block0..2 collapsed (depth 1)
    names = [e.text for e in browser.find_elements("css selector", "#viewport g.node text.name")]
    assert sorted(names) == ["softmax", "x"]

    block0 = browser.find_element("css selector", "#viewport g.group.collapsed")
    assert block0.text.startswith("▸ block0")
    block0.click()
    assert _counts(browser) == (7, 2)  # its 4 fused MatMuls and the residual Add
    browser.find_element("css selector", "#viewport g.group.expanded rect.bar").click()
    assert _counts(browser) == (2, 3)

    browser.execute_script("tractileGraph.reveal('block1/layer2/matmul')")
    assert _counts(browser) == (7, 2)
    details = browser.find_element("id", "details").text
    assert "MatMul" in details and "block1/layer2/matmul" in details
    assert "constant block1/layer2/w" in details and "8x8 float32, min" in details
    assert "activation" in details and "1,8,f32" in details
    assert browser.execute_script("return window.tractileGraph.errors") == []


def test_page_of_3000_nodes(browser, tmp_path):
    page = tmp_path / "big.html"
    summary = write_html(big_scoped_model(), page, title="generated")
    assert summary.nodes > 3000
    _open(browser, page)
    assert _counts(browser) == (1, 40)  # the input, then 40 collapsed blocks
    block3 = browser.find_element("css selector", "#viewport g.group.collapsed[data-key='g4']")
    assert block3.text.startswith("▸ block3")
    block3.click()
    assert _counts(browser) == (2, 39 + 26)  # block3 open: its residual Add and 26 collapsed layers
    browser.find_element("id", "expand-all").click()
    assert _counts(browser) == (summary.nodes, 0)
    assert len(browser.find_elements("css selector", "#viewport path.edge")) == summary.edges
    browser.find_element("id", "collapse-all").click()
    assert _counts(browser) == (1, 40)
    assert browser.execute_script("return window.tractileGraph.errors") == []
