"""tl_rnn.h's vectorised sigmoid and tanh (64-bit hosts) and tl_exp.h's sigmoid (the element-wise
loops') against the exact functions, over their whole range, built with the host build's flags
and with the portable fallback."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import tractile.compile
from tractile.compile.host import OPT_FLAGS, find_c_compiler

from .harness import needs_cc

KERNELS = Path(tractile.compile.__file__).parent / "kernels"

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "tl_rnn.h"
int main(int argc, char **argv) {
  float v[4096], w[4096], s[4096];
  int32_t k, n = 0;
  (void)argc; (void)argv;
  while (n < 4096 && scanf("%f", &v[n]) == 1) { w[n] = v[n]; s[n] = tl_exp_sigmoid_f32(v[n]); ++n; }
  tl_rnn_apply(v, n, tl_rnn_sigmoid);
  tl_rnn_apply(w, n, tl_rnn_tanh);
  for (k = 0; k < n; ++k) printf("%.9g %.9g %.9g\n", v[k], w[k], s[k]);
  return 0;
}
"""


def arguments() -> np.ndarray:
    rng = np.random.default_rng(0)
    near = rng.uniform(-1, 1, 1000) * np.logspace(-8, 0, 1000)
    wide = rng.uniform(-120, 120, 1000)
    edges = np.array([0.0, -0.0, 0.625, -0.625, 0.62499, 87.0, -87.0, 88.5, -88.5, 1e-30, 200.0, -200.0])
    return np.concatenate([near, wide, rng.standard_normal(1000) * 4, edges]).astype(np.float32)


@pytest.mark.parametrize("vector", [True, False])
def test_sigmoid_and_tanh_over_their_range(tmp_path: Path, vector: bool):
    needs_cc()
    (tmp_path / "main.c").write_text(PROGRAM)
    binary = tmp_path / "activations"
    flags = [*OPT_FLAGS["speed"], f"-DTL_RNN_VECTOR_ACT={int(vector)}", f"-DTL_VECTOR_EXP={int(vector)}"]
    subprocess.run([*find_c_compiler().split(), "-std=c99", *flags, f"-I{KERNELS}", "-o", str(binary),
                    str(tmp_path / "main.c"), "-lm"], check=True, capture_output=True)
    x = arguments()
    done = subprocess.run([str(binary)], input="\n".join(f"{v:.9g}" for v in x), capture_output=True, text=True,
                          check=True)
    got = np.array([line.split() for line in done.stdout.splitlines()], np.float64)
    assert got.shape == (x.size, 3)
    exact = x.astype(np.float64)
    sigmoid = 1.0 / (1.0 + np.exp(-exact))
    np.testing.assert_allclose(got[:, 0], sigmoid, rtol=5e-7, atol=1e-37)
    np.testing.assert_allclose(got[:, 1], np.tanh(exact), rtol=5e-7, atol=0)
    np.testing.assert_allclose(got[:, 2], sigmoid, rtol=5e-7, atol=1e-37)
