"""Make the compile report's picture in docs/: person_detect verified on the Cortex-M4 (QEMU),
its report page opened in headless Chromium, a tensor hovered, the top of the page saved.

    python examples/compile_report_screenshot.py [MODEL.tflite] [docs/img/compile-report.png]

Needs the Arm tool chain and QEMU (for the instructions per layer), selenium, chromium and
chromedriver, and the tflite-micro package for TFLite Micro's arena beside tractile's.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT.parent / "shared" / "models" / "tflite" / "person_detect.tflite"


def main(model: Path = MODEL, picture: Path = ROOT / "docs" / "img" / "compile-report.png") -> None:
    from selenium import webdriver
    from selenium.webdriver import ActionChains
    from selenium.webdriver.chrome.service import Service

    from tractile.cli.main import main as tractile

    work = Path(tempfile.mkdtemp(prefix="tractile-report-"))
    page = work / "report.html"
    status = tractile(["compile", str(model), "--target", "cortex-m4", "--verify", "--runs", "1", "--report",
                       str(page), "-o", str(work / "firmware")])
    if status != 0:
        raise SystemExit(f"the verification failed (status {status})")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900",
                 f"--user-data-dir={work / 'profile'}", "--force-device-scale-factor=1"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    try:
        driver.get(page.as_uri())
        bottom = driver.execute_script(
            "const box = document.getElementById('plan-section').getBoundingClientRect(); return box.bottom")
        frame = driver.get_window_size()["height"] - driver.execute_script("return window.innerHeight")
        driver.set_window_size(1280, int(bottom) + 24 + frame)
        peak = driver.execute_script("return tractileReport.peakStep()")
        rect = driver.execute_script(
            "const data = JSON.parse(document.getElementById('report-data').textContent).report;"
            "const index = data.tensors.findIndex((t) => t.first === arguments[0]);"
            "return document.querySelector(`#plan rect.tensor[data-index='${index}']`);", peak)
        ActionChains(driver).move_to_element(rect).perform()
        picture.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(picture))
    finally:
        driver.quit()
        shutil.rmtree(work, ignore_errors=True)
    try:  # a palette of 256 colours: a third of the bytes, no visible change
        from PIL import Image

        image = Image.open(picture).convert("RGB")
        palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        palette.save(picture, optimize=True)
    except ImportError:
        pass
    print(f"wrote {picture}")


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:3]))
