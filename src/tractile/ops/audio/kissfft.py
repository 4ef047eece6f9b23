"""TFLite Micro's real FFT: kissfft 1.3.0 as the signal library builds it, in NumPy.

The signal library's Rfft and Irfft run kissfft's real transform (``kiss_fftr``) on int16
(Q15), int32 (Q31) or float samples. In fixed point every butterfly divides its inputs by
its radix first (``C_FIXDIV``), so a transform of length N scales by 1/N, and every product
rounds (``sround``); this module reproduces that arithmetic operation by operation, wrapping
where the C stores into 16- or 32-bit integers, so that results are bit-exact.

The recursion of ``kf_work`` is flattened: a digit-reversal permutation of the input
(``FftPlan.order``) followed by one butterfly pass per factor, innermost factor first. The
tables (factors, twiddles, the real transform's "super twiddles") are computed on the host
exactly as ``kiss_fft_alloc`` does; the C kernels receive the same tables.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .fixed import wrap

#: kissfft's scalar types: fraction bits of the fixed-point ones
FRACTION_BITS = {"i16": 15, "i32": 31}
RADICES = (2, 3, 4, 5)


def factorize(n: int) -> list[tuple[int, int]]:
    """kf_factor: the (radix, remaining length) pairs, fours first, then twos, then odd primes."""
    p, floor_sqrt, out = 4, math.floor(math.sqrt(n)), []
    while True:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > floor_sqrt:
                p = n
        n //= p
        out.append((p, n))
        if n <= 1:
            return out


def supported_length(fft_length: int) -> str | None:
    """Why TFLite Micro cannot run a real FFT of this length (None when it can): kissfft's real
    transform needs an even length, and the generic butterfly (a radix above 5) allocates
    memory, which TFLite Micro's build of kissfft cannot."""
    if fft_length < 2 or fft_length % 2:
        return f"the FFT length must be even and at least 2, got {fft_length}"
    bad = [p for p, _ in factorize(fft_length // 2) if p not in RADICES]
    if bad:
        return f"half the FFT length ({fft_length // 2}) has the prime factor {bad[0]}: only radices 2, 3, 4, 5 run"
    return None


def _cexp(phases: np.ndarray, kind: str) -> np.ndarray:
    """kf_cexp for each phase: [count, 2] (real, imaginary) in the scalar type."""
    cos = np.array([math.cos(p) for p in phases.tolist()])
    sin = np.array([math.sin(p) for p in phases.tolist()])
    if kind == "f32":
        return np.stack([cos, sin], axis=1).astype(np.float32)
    limit = (1 << FRACTION_BITS[kind]) - 1
    return np.floor(0.5 + limit * np.stack([cos, sin], axis=1)).astype(np.int64)


@dataclass(frozen=True, eq=False)
class FftPlan:
    """Everything ``kiss_fftr_alloc`` computes for one length, direction and scalar type."""

    kind: str
    fft_length: int
    inverse: bool
    #: (radix, m) per stage, outermost first (kf_factor)
    factors: tuple[tuple[int, int], ...]
    #: complex twiddles of the half-length transform, [n, 2]
    twiddles: np.ndarray
    #: the real transform's twiddles, [n // 2, 2]
    super_twiddles: np.ndarray
    #: Fout[k] = input[order[k]] before the butterflies (kf_work's decimation)
    order: np.ndarray

    @property
    def half(self) -> int:
        return self.fft_length // 2


@lru_cache(maxsize=32)
def fft_plan(kind: str, fft_length: int, inverse: bool) -> FftPlan:
    n = fft_length // 2
    factors = tuple(factorize(n))
    phases = np.array([-2 * math.pi * i / n for i in range(n)]) * (-1 if inverse else 1)
    supers = np.array([-math.pi * ((i + 1) / n + 0.5) for i in range(n // 2)]) * (-1 if inverse else 1)
    order: list[int] = []

    def visit(level: int, stride: int, base: int) -> None:
        p, m = factors[level]
        if m == 1:
            order.extend(base + j * stride for j in range(p))
        else:
            for k in range(p):
                visit(level + 1, stride * p, base + k * stride)

    visit(0, 1, 0)
    return FftPlan(kind, fft_length, inverse, factors, _cexp(phases, kind), _cexp(supers, kind),
                   np.array(order, dtype=np.int64))


class _Arith:
    """kissfft's macros for one scalar type, on complex values stored as [..., 2] (real,
    imaginary) int64 (fixed point) or float32 arrays."""

    def __init__(self, kind: str):
        self.fixed = kind != "f32"
        self.bits = FRACTION_BITS.get(kind, 0)
        self.width = 16 if kind == "i16" else 32

    def store(self, x):
        """Assignment to kiss_fft_scalars."""
        return wrap(x, self.width) if self.fixed else x

    def sround(self, x):
        return wrap((x + (1 << (self.bits - 1))) >> self.bits, self.width)

    def smul(self, a, b):
        """S_MUL / C_MULBYSCALAR."""
        return self.sround(a * b) if self.fixed else a * b

    def cmul(self, a, b):
        """C_MUL of complex arrays (broadcasting)."""
        ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
        product = np.stack([ar * br - ai * bi, ar * bi + ai * br], axis=-1)
        return self.sround(product) if self.fixed else product

    def fixdiv(self, c, k: int):
        """C_FIXDIV: times SAMP_MAX / k, rounded (nothing in float)."""
        if not self.fixed:
            return c
        return self.sround(c * (((1 << self.bits) - 1) // k))

    def half(self, x):
        """HALF_OF of an int expression (which C evaluates in 32 bits)."""
        return wrap(x, 32) >> 1 if self.fixed else x * np.float32(0.5)


def _rot(z):
    """(z.i, -z.r): z times -j."""
    return np.stack([z[..., 1], -z[..., 0]], axis=-1)


def _conj(a: _Arith, z):
    return np.stack([z[..., 0], a.store(-z[..., 1])], axis=-1)


def _butterfly(a: _Arith, x, plan: FftPlan, p: int, m: int, fstride: int):
    """One kf_bfly pass on every block of p*m values; x is [batch, blocks, p, m, 2]."""
    tw = plan.twiddles
    u = np.arange(m)
    x = a.fixdiv(x, p)
    store = a.store
    f = [x[:, :, q] for q in range(p)]
    if p == 2:
        t = a.cmul(f[1], tw[u * fstride])
        out = [store(f[0] + t), store(f[0] - t)]
    elif p == 4:
        s = a.cmul(x[:, :, 1:], tw[np.outer(np.arange(1, 4), u * fstride)])
        s0, s1, s2 = s[:, :, 0], s[:, :, 1], s[:, :, 2]
        s5 = store(f[0] - s1)
        f0 = store(f[0] + s1)
        s3, s4 = store(s0 + s2), store(s0 - s2)
        f2 = store(f0 - s3)
        f0 = store(f0 + s3)
        turned = _rot(s4)
        plus, minus = store(s5 + turned), store(s5 - turned)
        out = [f0, minus, f2, plus] if plan.inverse else [f0, plus, f2, minus]
    elif p == 3:
        epi = tw[fstride * m][1]
        s = a.cmul(x[:, :, 1:], tw[np.outer(np.arange(1, 3), u * fstride)])
        s3 = store(s[:, :, 0] + s[:, :, 1])
        s0 = store(s[:, :, 0] - s[:, :, 1])
        f1 = store(f[0] - a.half(s3))
        s0 = a.smul(s0, epi)
        f0 = store(f[0] + s3)
        turned = _rot(s0)
        out = [f0, store(f1 - turned), store(f1 + turned)]
    elif p == 5:
        ya, yb = tw[fstride * m], tw[2 * fstride * m]
        s = a.cmul(x[:, :, 1:], tw[np.outer(np.arange(1, 5), u * fstride)])
        s7, s10 = store(s[:, :, 0] + s[:, :, 3]), store(s[:, :, 0] - s[:, :, 3])
        s8, s9 = store(s[:, :, 1] + s[:, :, 2]), store(s[:, :, 1] - s[:, :, 2])
        f0 = store(f[0] + (s7 + s8))
        mul = a.smul
        s5 = store(f[0] + mul(s7, ya[0]) + mul(s8, yb[0]))
        s11 = store(f[0] + mul(s7, yb[0]) + mul(s8, ya[0]))
        s6 = store(np.stack([mul(s10[..., 1], ya[1]) + mul(s9[..., 1], yb[1]),
                             -mul(s10[..., 0], ya[1]) - mul(s9[..., 0], yb[1])], axis=-1))
        s12 = store(np.stack([-mul(s10[..., 1], yb[1]) + mul(s9[..., 1], ya[1]),
                              mul(s10[..., 0], yb[1]) - mul(s9[..., 0], ya[1])], axis=-1))
        out = [f0, store(s5 - s6), store(s11 + s12), store(s11 - s12), store(s5 + s6)]
    else:  # pragma: no cover - refused by supported_length
        raise ValueError(f"radix {p}")
    return np.stack(out, axis=2)


def complex_fft(plan: FftPlan, z: np.ndarray) -> np.ndarray:
    """kiss_fft on [batch, n, 2] complex values (int64 or float32)."""
    a = _Arith(plan.kind)
    n = plan.half
    z = z[:, plan.order]
    batch = z.shape[0]
    strides = [1]
    for p, _ in plan.factors[:-1]:
        strides.append(strides[-1] * p)
    for (p, m), fstride in reversed(list(zip(plan.factors, strides))):
        z = _butterfly(a, z.reshape(batch, fstride, p, m, 2), plan, p, m, fstride).reshape(batch, n, 2)
    return z


def rfft(plan: FftPlan, x: np.ndarray) -> np.ndarray:
    """kiss_fftr: [batch, fft_length] samples to [batch, n + 1, 2] (real, imaginary)."""
    a = _Arith(plan.kind)
    n = plan.half
    work = x.astype(np.float32 if plan.kind == "f32" else np.int64)
    t = complex_fft(plan, work.reshape(x.shape[0], n, 2))
    out = np.zeros((x.shape[0], n + 1, 2), dtype=work.dtype)
    dc = a.fixdiv(t[:, 0], 2)
    out[:, 0, 0] = a.store(dc[:, 0] + dc[:, 1])
    out[:, n, 0] = a.store(dc[:, 0] - dc[:, 1])
    k = np.arange(1, n // 2 + 1)
    pk = a.fixdiv(t[:, k], 2)
    pnk = a.fixdiv(_conj(a, t[:, n - k]), 2)
    f1, f2 = a.store(pk + pnk), a.store(pk - pnk)
    tw = a.cmul(f2, plan.super_twiddles[k - 1])
    out[:, k] = a.store(a.half(f1 + tw))
    out[:, n - k, 0] = a.store(a.half(f1[..., 0] - tw[..., 0]))
    out[:, n - k, 1] = a.store(a.half(tw[..., 1] - f1[..., 1]))
    return out


def irfft(plan: FftPlan, spectrum: np.ndarray) -> np.ndarray:
    """kiss_fftri: [batch, n + 1, 2] (real, imaginary) to [batch, fft_length] samples (unscaled)."""
    a = _Arith(plan.kind)
    n = plan.half
    f = spectrum.astype(np.float32 if plan.kind == "f32" else np.int64)
    t = np.zeros((f.shape[0], n, 2), dtype=f.dtype)
    t[:, 0] = a.fixdiv(a.store(np.stack([f[:, 0, 0] + f[:, n, 0], f[:, 0, 0] - f[:, n, 0]], axis=-1)), 2)
    k = np.arange(1, n // 2 + 1)
    fk = a.fixdiv(f[:, k], 2)
    fnkc = a.fixdiv(_conj(a, f[:, n - k]), 2)
    ek, d = a.store(fk + fnkc), a.store(fk - fnkc)
    ok = a.cmul(d, plan.super_twiddles[k - 1])
    t[:, k] = a.store(ek + ok)
    t[:, n - k] = _conj(a, a.store(ek - ok))
    return complex_fft(plan, t).reshape(f.shape[0], 2 * n)
