"""The compile report page in headless Chromium: it loads cleanly, draws one rectangle per
planned tensor, marks the report's peak step, sorts its layer table, shows a tensor on hover,
and keeps hostile model text as text.

Needs selenium and Debian's ``chromium`` and ``chromium-driver``; skips naming what is missing.
"""
from __future__ import annotations

import json
import re

import pytest

import tractile
from tractile.cli.main import main
from tractile.compile import generate

from ..compile.test_report import chain_model
from .conftest import shared_tflite, streaming_model

HOSTILE = '</script><img src=x onerror="window.owned=1"><b>'


def _open(driver, path) -> None:
    driver.get(path.as_uri())
    driver.execute_script("return document.readyState")
    problems = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert problems == []
    assert driver.execute_script("return window.tractileReport.errors") == []


def _page_data(path) -> dict:
    text = path.read_text(encoding="utf-8")
    payload = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', text, re.S).group(1)
    return json.loads(payload)


def test_report_of_a_shared_model(browser, tmp_path):
    page = tmp_path / "kws.html"
    model = shared_tflite("../mlperf_tiny/kws_dscnn_int8.tflite")
    assert main(["compile", str(model), "--target", "cortex-m4", "--report", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=|@import|url\(\s*['"]?(https?:|//)""", text)  # self-contained
    data = _page_data(page)
    report = data["report"]
    _open(browser, page)
    assert browser.execute_script("return tractileReport.tensorsDrawn()") == len(report["tensors"]) > 5
    assert browser.execute_script("return tractileReport.peakStep()") == report["peak"]["step"]
    assert browser.execute_script("return tractileReport.peakRow()") == report["peak"]["step"]
    rows = browser.find_elements("css selector", "#layers tbody tr")
    assert len(rows) == len(report["nodes"])
    browser.find_element("css selector", "#layers th[data-key='macs']").click()
    macs = [int(v.replace(",", "")) for v in browser.execute_script("return tractileReport.tableColumn('macs')") if v]
    assert macs == sorted(macs, reverse=True) and macs[0] == max(n["macs"] or 0 for n in report["nodes"])
    browser.find_element("css selector", "#layers th[data-key='macs']").click()
    assert browser.execute_script("return tractileReport.tableColumn('macs')")[0] != f"{macs[0]:,}"
    tensor = report["tensors"][-1]
    from selenium.webdriver import ActionChains

    rect = browser.find_element("css selector", f"#plan rect.tensor[data-index='{len(report['tensors']) - 1}']")
    ActionChains(browser).move_to_element(rect).perform()
    tip = browser.find_element("id", "tip")
    assert tip.is_displayed() and tensor["var"] in tip.text and f"{tensor['bytes']:,} B" in tip.text
    summary = browser.find_element("id", "summary").text
    assert f"{report['arena_bytes']:,}" in summary and "tflite micro arena" in summary.lower()
    if "head" in data["micro"]:  # measured by the tflite-micro package
        assert f"{data['micro']['head']:,}" in summary


def test_verified_report_shows_instructions_per_layer(browser, tmp_path):
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available

    if toolchain_available(board_for("cortex-m3")):
        pytest.skip("the Arm tool chain or QEMU is not installed")
    page = tmp_path / "sine.html"
    model = shared_tflite("hello_world_int8.tflite")
    assert main(["compile", str(model), "--target", "cortex-m3", "--verify", "--runs", "2", "--report", str(page),
                 "-o", str(tmp_path / "fw")]) == 0
    data = _page_data(page)
    check = data["verification"]
    assert check["verified"] and check["code_bytes"]
    _open(browser, page)
    counts = [int(v.replace(",", "")) for v in browser.execute_script("return tractileReport.tableColumn('count')")]
    assert counts == [layer["count"] for layer in check["layers"]] and all(c > 0 for c in counts)
    summary = browser.find_element("id", "summary").text
    assert f"{check['cycles_per_inference']:,}" in summary and "bit-exact" in summary
    assert f"{check['ram_bytes']['stack_peak']:,} B" in summary
    assert data["micro"] is not None


def test_hostile_names_stay_text_and_pulsed_state_is_listed(browser, tmp_path):
    source = generate(tractile.load(chain_model(HOSTILE)), name="chain")
    page = tmp_path / "hostile.html"
    written = source.report_html(page)
    text = page.read_text(encoding="utf-8")
    assert text.count("<script") == 2 and "<img" not in text
    _open(browser, page)
    assert written.tensors == browser.execute_script("return tractileReport.tensorsDrawn()")
    assert browser.execute_script("return window.owned === undefined && document.querySelectorAll('img').length")\
        == 0
    names = browser.execute_script("return tractileReport.tableColumn('name')")
    assert HOSTILE + "mm" in names
    outputs = browser.find_element("id", "summary").text
    assert HOSTILE + "y" in outputs

    pulsed = tractile.load(streaming_model(), inputs=["1,4,T,f32"]).pulse("T", 2)
    source = generate(pulsed.model, name="stream", macros={"PULSE": (2, ""), "DELAY": (pulsed.delay, "")})
    page = tmp_path / "stream.html"
    source.report_html(page)
    _open(browser, page)
    rows = browser.find_elements("css selector", "#state tbody tr")
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == [f["var"] for f in source.report["state"]]
    assert "consumes 2 frames" in browser.find_element("id", "state-hint").text
