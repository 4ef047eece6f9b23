import numpy as np
import pytest

import tractile
from tractile.runtime.threads import current_threads


def test_set_threads_limits_blas_and_restores_the_defaults():
    pytest.importorskip("threadpoolctl")
    np.ones((4, 4)) @ np.ones((4, 4))  # BLAS loaded
    before = current_threads()
    assert "blas" in before
    tractile.set_threads(1)
    try:
        assert current_threads()["blas"] == 1
    finally:
        tractile.set_threads(None)
    assert current_threads() == before


@pytest.mark.parametrize("bad", [0, -2, 1.5, "4", True])
def test_set_threads_refuses_what_is_not_a_count(bad):
    with pytest.raises(tractile.TractileError, match="number of threads"):
        tractile.set_threads(bad)
