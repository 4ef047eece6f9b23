"""The few-frames path of 1-D Conv (a streaming push) against a direct sum over taps."""
import numpy as np
import pytest

from tractile.ops import Conv, Relu, Window


def direct_conv1d(x, w, bias, dilation):
    m, channels, kernel = w.shape
    frames = x.shape[2] - (kernel - 1) * dilation
    y = np.zeros((1, m, frames), np.float64)
    for t in range(frames):
        for tap in range(kernel):
            y[0, :, t] += w[:, :, tap].astype(np.float64) @ x[0, :, t + tap * dilation].astype(np.float64)
    if bias is not None:
        y += bias[None, :, None]
    return y


@pytest.mark.parametrize("kernel,dilation", [(1, 1), (3, 1), (3, 4), (5, 2)])
@pytest.mark.parametrize("frames", [1, 2, 7, 16])
@pytest.mark.parametrize("with_bias", [True, False])
def test_few_frames_matches_direct_sum(kernel, dilation, frames, with_bias):
    rng = np.random.default_rng(kernel * 100 + dilation * 10 + frames)
    channels, m = 6, 5
    full = rng.standard_normal((1, channels, frames + (kernel - 1) * dilation + 3)).astype(np.float32)
    x = full[:, :, 2:2 + frames + (kernel - 1) * dilation]  # a non-contiguous slice, as a Delay gives
    w = rng.standard_normal((m, channels, kernel)).astype(np.float32)
    bias = rng.standard_normal(m).astype(np.float32) if with_bias else None
    op = Conv(Window.make((kernel,), None, (dilation,), None), activation=Relu())
    inputs = [x, w] + ([bias] if with_bias else [])
    got = op.eval(inputs)[0]
    want = np.maximum(direct_conv1d(x, w, bias, dilation), 0)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.all(x == full[:, :, 2:2 + x.shape[2]])  # the input is not written
