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
    """kissfft's scalar macros for one type, on int64 (fixed point) or float32 arrays."""

    def __init__(self, kind: str):
        self.fixed = kind != "f32"
        self.bits = FRACTION_BITS.get(kind, 0)
        self.width = 16 if kind == "i16" else 32

    def store(self, x):
        """Assignment to a kiss_fft_scalar."""
        return wrap(x, self.width) if self.fixed else x

    def sround(self, x):
        return wrap((x + (1 << (self.bits - 1))) >> self.bits, self.width)

    def smul(self, a, b):
        return self.sround(a * b) if self.fixed else a * b

    def cmul(self, ar, ai, br, bi):
        if self.fixed:
            return self.sround(ar * br - ai * bi), self.sround(ar * bi + ai * br)
        return ar * br - ai * bi, ar * bi + ai * br

    def fixdiv(self, r, i, k: int):
        if not self.fixed:
            return r, i
        factor = ((1 << self.bits) - 1) // k
        return self.sround(r * factor), self.sround(i * factor)

    def half(self, x):
        """HALF_OF of an int expression (which C evaluates in 32 bits)."""
        return wrap(x, 32) >> 1 if self.fixed else x * np.float32(0.5)


def _butterfly(a: _Arith, re, im, plan: FftPlan, p: int, m: int, fstride: int):
    """One kf_bfly pass on every block of p*m values; re/im are [batch, blocks, p, m]."""
    tw = plan.twiddles
    u = np.arange(m)
    fr = [re[:, :, q, :] for q in range(p)]
    fi = [im[:, :, q, :] for q in range(p)]
    for q in range(p):
        fr[q], fi[q] = a.fixdiv(fr[q], fi[q], p)
    store = a.store
    if p == 2:
        tr, ti = a.cmul(fr[1], fi[1], *tw[u * fstride].T)
        out = [(store(fr[0] + tr), store(fi[0] + ti)), (store(fr[0] - tr), store(fi[0] - ti))]
    elif p == 4:
        s0 = a.cmul(fr[1], fi[1], *tw[u * fstride].T)
        s1 = a.cmul(fr[2], fi[2], *tw[2 * u * fstride].T)
        s2 = a.cmul(fr[3], fi[3], *tw[3 * u * fstride].T)
        s5 = store(fr[0] - s1[0]), store(fi[0] - s1[1])
        f0 = store(fr[0] + s1[0]), store(fi[0] + s1[1])
        s3 = store(s0[0] + s2[0]), store(s0[1] + s2[1])
        s4 = store(s0[0] - s2[0]), store(s0[1] - s2[1])
        f2 = store(f0[0] - s3[0]), store(f0[1] - s3[1])
        f0 = store(f0[0] + s3[0]), store(f0[1] + s3[1])
        plus = store(s5[0] + s4[1]), store(s5[1] - s4[0])
        minus = store(s5[0] - s4[1]), store(s5[1] + s4[0])
        f1, f3 = (minus, plus) if plan.inverse else (plus, minus)
        out = [f0, f1, f2, f3]
    elif p == 3:
        epi = tw[fstride * m]
        s1 = a.cmul(fr[1], fi[1], *tw[u * fstride].T)
        s2 = a.cmul(fr[2], fi[2], *tw[2 * u * fstride].T)
        s3 = store(s1[0] + s2[0]), store(s1[1] + s2[1])
        s0 = store(s1[0] - s2[0]), store(s1[1] - s2[1])
        f1 = store(fr[0] - a.half(s3[0])), store(fi[0] - a.half(s3[1]))
        s0 = a.smul(s0[0], epi[1]), a.smul(s0[1], epi[1])
        f0 = store(fr[0] + s3[0]), store(fi[0] + s3[1])
        f2 = store(f1[0] + s0[1]), store(f1[1] - s0[0])
        f1 = store(f1[0] - s0[1]), store(f1[1] + s0[0])
        out = [f0, f1, f2]
    elif p == 5:
        ya, yb = tw[fstride * m], tw[2 * fstride * m]
        s = [a.cmul(fr[q], fi[q], *tw[q * u * fstride].T) for q in range(1, 5)]
        s7 = store(s[0][0] + s[3][0]), store(s[0][1] + s[3][1])
        s10 = store(s[0][0] - s[3][0]), store(s[0][1] - s[3][1])
        s8 = store(s[1][0] + s[2][0]), store(s[1][1] + s[2][1])
        s9 = store(s[1][0] - s[2][0]), store(s[1][1] - s[2][1])
        f0 = store(fr[0] + (s7[0] + s8[0])), store(fi[0] + (s7[1] + s8[1]))
        mul = a.smul
        s5 = (store(fr[0] + mul(s7[0], ya[0]) + mul(s8[0], yb[0])),
              store(fi[0] + mul(s7[1], ya[0]) + mul(s8[1], yb[0])))
        s6 = store(mul(s10[1], ya[1]) + mul(s9[1], yb[1])), store(-mul(s10[0], ya[1]) - mul(s9[0], yb[1]))
        s11 = (store(fr[0] + mul(s7[0], yb[0]) + mul(s8[0], ya[0])),
               store(fi[0] + mul(s7[1], yb[0]) + mul(s8[1], ya[0])))
        s12 = store(-mul(s10[1], yb[1]) + mul(s9[1], ya[1])), store(mul(s10[0], yb[1]) - mul(s9[0], ya[1]))
        out = [f0, (store(s5[0] - s6[0]), store(s5[1] - s6[1])), (store(s11[0] + s12[0]), store(s11[1] + s12[1])),
               (store(s11[0] - s12[0]), store(s11[1] - s12[1])), (store(s5[0] + s6[0]), store(s5[1] + s6[1]))]
    else:  # pragma: no cover - refused by supported_length
        raise ValueError(f"radix {p}")
    return np.stack([o[0] for o in out], axis=2), np.stack([o[1] for o in out], axis=2)


def complex_fft(plan: FftPlan, re: np.ndarray, im: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """kiss_fft on [batch, n] real and imaginary parts (int64 or float32)."""
    a = _Arith(plan.kind)
    n = plan.half
    re, im = re[:, plan.order], im[:, plan.order]
    batch = re.shape[0]
    strides = [1]
    for p, _ in plan.factors[:-1]:
        strides.append(strides[-1] * p)
    for (p, m), fstride in reversed(list(zip(plan.factors, strides))):
        shape = (batch, fstride, p, m)
        re, im = _butterfly(a, re.reshape(shape), im.reshape(shape), plan, p, m, fstride)
        re, im = re.reshape(batch, n), im.reshape(batch, n)
    return re, im


def rfft(plan: FftPlan, x: np.ndarray) -> np.ndarray:
    """kiss_fftr: [batch, fft_length] samples to [batch, n + 1, 2] (real, imaginary)."""
    a = _Arith(plan.kind)
    n = plan.half
    work = x.astype(np.float32 if plan.kind == "f32" else np.int64)
    tr, ti = complex_fft(plan, work[:, 0::2], work[:, 1::2])
    out = np.zeros((x.shape[0], n + 1, 2), dtype=work.dtype)
    dr, di = a.fixdiv(tr[:, 0], ti[:, 0], 2)
    out[:, 0, 0] = a.store(dr + di)
    out[:, n, 0] = a.store(dr - di)
    k = np.arange(1, n // 2 + 1)
    pr, pi = a.fixdiv(tr[:, k], ti[:, k], 2)
    nr, ni = a.fixdiv(tr[:, n - k], a.store(-ti[:, n - k]), 2)
    f1 = a.store(pr + nr), a.store(pi + ni)
    f2 = a.store(pr - nr), a.store(pi - ni)
    twr, twi = a.cmul(f2[0], f2[1], *plan.super_twiddles[k - 1].T)
    out[:, k, 0] = a.store(a.half(f1[0] + twr))
    out[:, k, 1] = a.store(a.half(f1[1] + twi))
    out[:, n - k, 0] = a.store(a.half(f1[0] - twr))
    out[:, n - k, 1] = a.store(a.half(twi - f1[1]))
    return out


def irfft(plan: FftPlan, spectrum: np.ndarray) -> np.ndarray:
    """kiss_fftri: [batch, n + 1, 2] (real, imaginary) to [batch, fft_length] samples (unscaled)."""
    a = _Arith(plan.kind)
    n = plan.half
    f = spectrum.astype(np.float32 if plan.kind == "f32" else np.int64)
    tr = np.zeros((f.shape[0], n), dtype=f.dtype)
    ti = np.zeros_like(tr)
    tr[:, 0], ti[:, 0] = a.fixdiv(a.store(f[:, 0, 0] + f[:, n, 0]), a.store(f[:, 0, 0] - f[:, n, 0]), 2)
    k = np.arange(1, n // 2 + 1)
    kr, ki = a.fixdiv(f[:, k, 0], f[:, k, 1], 2)
    cr, ci = a.fixdiv(f[:, n - k, 0], a.store(-f[:, n - k, 1]), 2)
    ek = a.store(kr + cr), a.store(ki + ci)
    dr, di = a.store(kr - cr), a.store(ki - ci)
    ok = a.cmul(dr, di, *plan.super_twiddles[k - 1].T)
    tr[:, k], ti[:, k] = a.store(ek[0] + ok[0]), a.store(ek[1] + ok[1])
    tr[:, n - k], ti[:, n - k] = a.store(ek[0] - ok[0]), a.store(-a.store(ek[1] - ok[1]))
    re, im = complex_fft(plan, tr, ti)
    return np.stack([re, im], axis=2).reshape(f.shape[0], 2 * n)
