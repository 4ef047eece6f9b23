"""TF1 graphs with v1 control flow loaded by tractile and run against TensorFlow: the frozen graphs
of ``test_control_v1`` as they are (the loader raises them) and already raised."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tf.test_control_v1 import CASES, Case, run_graph
from tractile.formats.tf.control_v1 import raise_control_flow_v1

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {}


def case(cases: dict[str, Case], name: str) -> Case:
    if name not in cases:
        cases[name] = CASES[name]()
    return cases[name]


def by_name(results: dict[str, np.ndarray], name: str) -> np.ndarray:
    for key in (name, f"{name}:0"):
        if key in results:
            return results[key]
    raise AssertionError(f"tractile's model has no output {name!r}; it has {sorted(results)}")


@pytest.mark.parametrize("raised", [False, True], ids=["as_built", "raised"])
@pytest.mark.parametrize("name", list(CASES))
def test_tractile_runs_v1_control_flow_like_tensorflow(cases, tmp_path, name, raised):
    import tractile

    built = case(cases, name)
    graph_def = raise_control_flow_v1(built.graph_def) if raised else built.graph_def
    path = tmp_path / f"{name}.pb"
    path.write_bytes(graph_def.SerializeToString())
    model = tractile.load(str(path))
    for _ in range(2):
        feeds = {k: np.asarray(make()) for k, make in built.inputs.items()}
        expected = run_graph(built.graph_def, feeds, built.outputs)
        got = model.run(feeds)
        for out, e in zip(built.outputs, expected):
            np.testing.assert_allclose(by_name(got, out), e, rtol=1e-5, atol=1e-5, err_msg=f"{name}: output {out}")
