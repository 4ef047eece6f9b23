"""Models for the tools' tests (the demo CNN, a small scoped graph, the shared TFLite models) and headless Chromium."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
SHARED_TFLITE = ROOT.parent / "shared" / "models" / "tflite"

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1280,900")


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by selenium and Debian's chromedriver (skips naming what is missing)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    driver_path = shutil.which("chromedriver")
    missing = [name for name, found in (("chromium", binary), ("chromedriver (chromium-driver)", driver_path))
               if not found]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not found on PATH: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    profile = tempfile.mkdtemp(prefix="tractile-chromium-")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def scoped_model(blocks: int = 3, per_block: int = 4, width: int = 8) -> onnx.ModelProto:
    """A chain of ``blocks`` residual blocks named ``blockK/...``, each ``per_block`` MatMul+Relu
    pairs named ``blockK/layerJ/matmul`` and ``blockK/layerJ/relu``, then ``head/softmax``."""
    rng = np.random.default_rng(1)
    nodes, inits = [], []
    current = "x"
    for block in range(blocks):
        start = current
        for layer in range(per_block):
            scope = f"block{block}/layer{layer}"
            weight = f"{scope}/w"
            inits.append(numpy_helper.from_array((rng.standard_normal((width, width)) * 0.3).astype(np.float32),
                                                 weight))
            nodes.append(helper.make_node("MatMul", [current, weight], [f"{scope}/mm"], name=f"{scope}/matmul"))
            nodes.append(helper.make_node("Relu", [f"{scope}/mm"], [f"{scope}/out"], name=f"{scope}/relu"))
            current = f"{scope}/out"
        nodes.append(helper.make_node("Add", [start, current], [f"block{block}/sum"], name=f"block{block}/add"))
        current = f"block{block}/sum"
    nodes.append(helper.make_node("Softmax", [current], ["y"], axis=-1, name="head/softmax"))
    graph = helper.make_graph(nodes, "scoped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="session")
def scoped_onnx(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("scoped") / "scoped.onnx"
    onnx.save(scoped_model(), path)
    return path


def shared_tflite(name: str) -> Path:
    """A model of ../shared/models/tflite, or skip naming the missing path."""
    path = SHARED_TFLITE / name
    if not path.exists():
        pytest.skip(f"shared model {path} is not available")
    return path


def streaming_model() -> onnx.ModelProto:
    """x 1,4,T -> ``enc/conv`` (k=3, pads 1,1) -> ``enc/relu`` -> ``head/conv`` (k=1, 3 channels)."""
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), name)
             for name, shape in (("enc/w", (6, 4, 3)), ("enc/b", (6,)), ("head/w", (3, 6, 1)))]
    nodes = [helper.make_node("Conv", ["x", "enc/w", "enc/b"], ["enc/c"], pads=[1, 1], name="enc/conv"),
             helper.make_node("Relu", ["enc/c"], ["enc/r"], name="enc/relu"),
             helper.make_node("Conv", ["enc/r", "head/w"], ["y"], name="head/conv")]
    graph = helper.make_graph(nodes, "streaming", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "T"])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="session")
def streaming_onnx(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("streaming") / "streaming.onnx"
    onnx.save(streaming_model(), path)
    return path
