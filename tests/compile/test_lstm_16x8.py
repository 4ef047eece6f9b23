"""TFLite Micro's 16x8 LSTM (``tl_lstm16.h``) compiled to C, bit-exact with the interpreter
(itself bit-exact with TFLite Micro: ``tests/tflite/test_lstm_16x8.py``) on the host and on an
emulated Cortex-M4, the states carried over the runs."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.test_lstm_16x8 import int16_runs, lstm16_model
from tractile.compile import generate

from .harness import assert_builds_without_warnings, check_against_interpreter

VARIANTS = {
    "plain": {},
    "time_major_batches": {"time_major": True, "batch": 3},
    # cell state 2^-14: the cell tanh shifts its input right; a clip on the cell state
    "wide_cell_2_-14_clip": {"units": 9, "depth": 7, "cell_scale": 2.0 ** -14, "cell_clip": 0.3},
    # cell state 2^-8: the cell tanh shifts left and saturates
    "cell_2_-8": {"cell_scale": 2.0 ** -8, "seed": 2},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_int16_lstm_compiles_bit_exact(variant, compile_cache, tmp_path):
    model = lstm16_model(**VARIANTS[variant])
    inputs = int16_runs(model, 20)
    state = model.state()
    outputs = np.concatenate([state.run(x)[0].reshape(-1) for x in inputs])
    assert len(np.unique(outputs)) > 100 and np.abs(outputs.astype(np.int64)).max() > 128
    check_against_interpreter(model, compile_cache, inputs=inputs, stateful=True, name=f"lstm_s16_{variant}")
    assert_builds_without_warnings(generate(model, name="lstm16"), tmp_path)


def test_int16_lstm_on_a_cortex_m4(tmp_path):
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available
    from tractile.compile.targets.verify import verify

    missing = toolchain_available(board_for("cortex-m4", None))
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    report = verify(lstm16_model(batch=2, cell_scale=2.0 ** -14, cell_clip=0.3), "cortex-m4", runs=20,
                    folder=tmp_path)
    assert report["verified"], report["first_difference"]
    assert report["ram_bytes"]["state"] == 2 * 2 * 4 * 2
