/* tl_fft.h: TFLite Micro's real FFT and its inverse, kissfft 1.3.0 as its signal library builds
 * it: fixed point (int16 Q15, int32 Q31) and float.
 *
 * The arithmetic is the interpreter's (tractile/ops/audio/kissfft.py): every butterfly divides
 * its inputs by its radix first and rounds every product; the tables (twiddles, factors, the
 * digit-reversal order that replaces kissfft's recursion) are computed on the host. Fixed-point
 * values live in int32_t buffers, wrapped to 16 bits after every store for int16 transforms, as
 * kissfft's int16 kiss_fft_scalar does. */
#ifndef TL_FFT_H
#define TL_FFT_H

#include "tl_common.h"

/* --------------------------------------------------------------------------------------------
 * kissfft, fixed point: interleaved (real, imaginary) int32_t values of `width` (16 or 32) bits.
 * Products are formed in 32 bits for 16-bit values (kissfft's SAMPPROD; they cannot overflow
 * with twiddles of magnitude below 1), in 64 bits for 32-bit values. */

static inline int32_t tl_kf_wrap(int64_t v, int32_t width) { return width == 16 ? (int16_t)v : (int32_t)v; }

/* sround(a * b) */
static inline int32_t tl_kf_smul(int32_t a, int32_t b, int32_t width) {
  if (width == 16) return (int16_t)((a * b + (1 << 14)) >> 15);
  return (int32_t)(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);
}

/* C_MUL by the twiddle at tw */
static inline void tl_kf_cmul(int32_t *m, int32_t ar, int32_t ai, const int32_t *tw, int32_t width) {
  const int32_t br = TL_READ_S32(&tw[0]), bi = TL_READ_S32(&tw[1]);
  if (width == 16) {
    m[0] = (int16_t)((ar * br - ai * bi + (1 << 14)) >> 15);
    m[1] = (int16_t)((ar * bi + ai * br + (1 << 14)) >> 15);
  } else {
    m[0] = (int32_t)(((int64_t)ar * br - (int64_t)ai * bi + ((int64_t)1 << 30)) >> 31);
    m[1] = (int32_t)(((int64_t)ar * bi + (int64_t)ai * br + ((int64_t)1 << 30)) >> 31);
  }
}

/* C_FIXDIV: both parts times (SAMP_MAX / k), rounded */
static inline void tl_kf_fixdiv(int32_t *c, int32_t k, int32_t width) {
  const int32_t factor = (width == 16 ? 32767 : 2147483647) / k;
  c[0] = tl_kf_smul(c[0], factor, width);
  c[1] = tl_kf_smul(c[1], factor, width);
}

#define TL_KF_ADD(a, b) tl_kf_wrap((int64_t)(a) + (b), width)
#define TL_KF_SUB(a, b) tl_kf_wrap((int64_t)(a) - (b), width)

static inline void tl_kf_bfly2(int32_t *f, int32_t m, int32_t fstride, const int32_t *tw, int32_t width) {
  int32_t u;
  for (u = 0; u < m; ++u) {
    int32_t *a = f + 2 * u, *b = f + 2 * (u + m);
    int32_t t[2];
    tl_kf_fixdiv(a, 2, width);
    tl_kf_fixdiv(b, 2, width);
    tl_kf_cmul(t, b[0], b[1], tw + 2 * u * fstride, width);
    b[0] = TL_KF_SUB(a[0], t[0]);
    b[1] = TL_KF_SUB(a[1], t[1]);
    a[0] = TL_KF_ADD(a[0], t[0]);
    a[1] = TL_KF_ADD(a[1], t[1]);
  }
}

static inline void tl_kf_bfly3(int32_t *f, int32_t m, int32_t fstride, const int32_t *tw, int32_t width) {
  const int32_t epi = TL_READ_S32(&tw[2 * fstride * m + 1]);
  int32_t u, q;
  for (u = 0; u < m; ++u) {
    int32_t *x0 = f + 2 * u, *x1 = f + 2 * (u + m), *x2 = f + 2 * (u + 2 * m);
    int32_t s0[2], s1[2], s2[2], s3[2];
    tl_kf_fixdiv(x0, 3, width);
    tl_kf_fixdiv(x1, 3, width);
    tl_kf_fixdiv(x2, 3, width);
    tl_kf_cmul(s1, x1[0], x1[1], tw + 2 * u * fstride, width);
    tl_kf_cmul(s2, x2[0], x2[1], tw + 4 * u * fstride, width);
    for (q = 0; q < 2; ++q) {
      s3[q] = TL_KF_ADD(s1[q], s2[q]);
      s0[q] = TL_KF_SUB(s1[q], s2[q]);
      x1[q] = TL_KF_SUB(x0[q], s3[q] >> 1);
      s0[q] = tl_kf_smul(s0[q], epi, width);
      x0[q] = TL_KF_ADD(x0[q], s3[q]);
    }
    x2[0] = TL_KF_ADD(x1[0], s0[1]);
    x2[1] = TL_KF_SUB(x1[1], s0[0]);
    x1[0] = TL_KF_SUB(x1[0], s0[1]);
    x1[1] = TL_KF_ADD(x1[1], s0[0]);
  }
}

static inline void tl_kf_bfly4(int32_t *f, int32_t m, int32_t fstride, const int32_t *tw, int32_t inverse,
                               int32_t width) {
  int32_t u, q;
  for (u = 0; u < m; ++u) {
    int32_t *x0 = f + 2 * u, *x1 = f + 2 * (u + m), *x2 = f + 2 * (u + 2 * m), *x3 = f + 2 * (u + 3 * m);
    int32_t s0[2], s1[2], s2[2], s3[2], s4[2], s5[2];
    tl_kf_fixdiv(x0, 4, width);
    tl_kf_fixdiv(x1, 4, width);
    tl_kf_fixdiv(x2, 4, width);
    tl_kf_fixdiv(x3, 4, width);
    tl_kf_cmul(s0, x1[0], x1[1], tw + 2 * u * fstride, width);
    tl_kf_cmul(s1, x2[0], x2[1], tw + 4 * u * fstride, width);
    tl_kf_cmul(s2, x3[0], x3[1], tw + 6 * u * fstride, width);
    for (q = 0; q < 2; ++q) {
      s5[q] = TL_KF_SUB(x0[q], s1[q]);
      x0[q] = TL_KF_ADD(x0[q], s1[q]);
      s3[q] = TL_KF_ADD(s0[q], s2[q]);
      s4[q] = TL_KF_SUB(s0[q], s2[q]);
      x2[q] = TL_KF_SUB(x0[q], s3[q]);
      x0[q] = TL_KF_ADD(x0[q], s3[q]);
    }
    if (inverse) {
      x1[0] = TL_KF_SUB(s5[0], s4[1]);
      x1[1] = TL_KF_ADD(s5[1], s4[0]);
      x3[0] = TL_KF_ADD(s5[0], s4[1]);
      x3[1] = TL_KF_SUB(s5[1], s4[0]);
    } else {
      x1[0] = TL_KF_ADD(s5[0], s4[1]);
      x1[1] = TL_KF_SUB(s5[1], s4[0]);
      x3[0] = TL_KF_SUB(s5[0], s4[1]);
      x3[1] = TL_KF_ADD(s5[1], s4[0]);
    }
  }
}

static inline void tl_kf_bfly5(int32_t *f, int32_t m, int32_t fstride, const int32_t *tw, int32_t width) {
  const int32_t yar = TL_READ_S32(&tw[2 * fstride * m]), yai = TL_READ_S32(&tw[2 * fstride * m + 1]);
  const int32_t ybr = TL_READ_S32(&tw[4 * fstride * m]), ybi = TL_READ_S32(&tw[4 * fstride * m + 1]);
  int32_t u, q;
  for (u = 0; u < m; ++u) {
    int32_t *x[5];
    int32_t s[13][2];
    for (q = 0; q < 5; ++q) {
      x[q] = f + 2 * (u + q * m);
      tl_kf_fixdiv(x[q], 5, width);
    }
    for (q = 1; q < 5; ++q) tl_kf_cmul(s[q], x[q][0], x[q][1], tw + 2 * q * u * fstride, width);
    for (q = 0; q < 2; ++q) {
      s[7][q] = TL_KF_ADD(s[1][q], s[4][q]);
      s[10][q] = TL_KF_SUB(s[1][q], s[4][q]);
      s[8][q] = TL_KF_ADD(s[2][q], s[3][q]);
      s[9][q] = TL_KF_SUB(s[2][q], s[3][q]);
      s[0][q] = x[0][q];
      x[0][q] = tl_kf_wrap((int64_t)x[0][q] + ((int64_t)s[7][q] + s[8][q]), width);
      s[5][q] = tl_kf_wrap((int64_t)s[0][q] + tl_kf_smul(s[7][q], yar, width) + tl_kf_smul(s[8][q], ybr, width), width);
      s[11][q] = tl_kf_wrap((int64_t)s[0][q] + tl_kf_smul(s[7][q], ybr, width) + tl_kf_smul(s[8][q], yar, width), width);
    }
    s[6][0] = TL_KF_ADD(tl_kf_smul(s[10][1], yai, width), tl_kf_smul(s[9][1], ybi, width));
    s[6][1] = TL_KF_SUB(-(int64_t)tl_kf_smul(s[10][0], yai, width), tl_kf_smul(s[9][0], ybi, width));
    s[12][0] = TL_KF_ADD(-(int64_t)tl_kf_smul(s[10][1], ybi, width), tl_kf_smul(s[9][1], yai, width));
    s[12][1] = TL_KF_SUB(tl_kf_smul(s[10][0], ybi, width), tl_kf_smul(s[9][0], yai, width));
    for (q = 0; q < 2; ++q) {
      x[1][q] = TL_KF_SUB(s[5][q], s[6][q]);
      x[4][q] = TL_KF_ADD(s[5][q], s[6][q]);
      x[2][q] = TL_KF_ADD(s[11][q], s[12][q]);
      x[3][q] = TL_KF_SUB(s[11][q], s[12][q]);
    }
  }
}

#undef TL_KF_ADD
#undef TL_KF_SUB

/* the butterfly passes of a complex FFT of n values already in digit-reversed order:
 * factors = (p, m) per stage, outermost first */
static inline void tl_kf_passes_fixed(int32_t *f, int32_t n, const int32_t *factors, int32_t stages,
                                      const int32_t *tw, int32_t inverse, int32_t width) {
  int32_t stage, block;
  for (stage = stages - 1; stage >= 0; --stage) {
    const int32_t p = factors[2 * stage], m = factors[2 * stage + 1], blocks = n / (p * m);
    for (block = 0; block < blocks; ++block) {
      int32_t *at = f + 2 * block * p * m;
      if (p == 4)
        tl_kf_bfly4(at, m, blocks, tw, inverse, width);
      else if (p == 2)
        tl_kf_bfly2(at, m, blocks, tw, width);
      else if (p == 3)
        tl_kf_bfly3(at, m, blocks, tw, width);
      else
        tl_kf_bfly5(at, m, blocks, tw, width);
    }
  }
}

static inline void tl_kf_put(void *y, int32_t at, int32_t value, int32_t width) {
  if (width == 16)
    ((int16_t *)y)[at] = (int16_t)value;
  else
    ((int32_t *)y)[at] = value;
}

/* HALF_OF of a sum evaluated in 32 bits */
static inline int32_t tl_kf_half(uint32_t sum, int32_t width) { return tl_kf_wrap((int32_t)sum >> 1, width); }

/* kiss_fftr, fixed point: rows of `length` samples (int16 if width is 16, else int32), zero-padded
 * to 2n, to n + 1 complex bins; work: 2n int32_t */
static inline void tl_rfft_fixed(const void *x, void *y, int32_t rows, int32_t length, int32_t n,
                                 const int16_t *order, const int32_t *factors, int32_t stages, const int32_t *tw,
                                 const int32_t *super_tw, int32_t *work, int32_t width) {
  int32_t r, k, q;
  for (r = 0; r < rows; ++r) {
    const int32_t base = r * 2 * (n + 1);
    int32_t dc[2];
    for (k = 0; k < n; ++k)
      for (q = 0; q < 2; ++q) {
        const int32_t idx = 2 * TL_READ_S16(&order[k]) + q;
        const int32_t at = r * length + idx;
        work[2 * k + q] = idx >= length ? 0 : (width == 16 ? ((const int16_t *)x)[at] : ((const int32_t *)x)[at]);
      }
    tl_kf_passes_fixed(work, n, factors, stages, tw, 0, width);
    dc[0] = work[0];
    dc[1] = work[1];
    tl_kf_fixdiv(dc, 2, width);
    tl_kf_put(y, base, tl_kf_wrap((int64_t)dc[0] + dc[1], width), width);
    tl_kf_put(y, base + 1, 0, width);
    tl_kf_put(y, base + 2 * n, tl_kf_wrap((int64_t)dc[0] - dc[1], width), width);
    tl_kf_put(y, base + 2 * n + 1, 0, width);
    for (k = 1; k <= n / 2; ++k) {
      int32_t f1[2], f2[2], pk[2], pnk[2], t[2];
      pk[0] = work[2 * k];
      pk[1] = work[2 * k + 1];
      pnk[0] = work[2 * (n - k)];
      pnk[1] = tl_kf_wrap(-(int64_t)work[2 * (n - k) + 1], width);
      tl_kf_fixdiv(pk, 2, width);
      tl_kf_fixdiv(pnk, 2, width);
      for (q = 0; q < 2; ++q) {
        f1[q] = tl_kf_wrap((int64_t)pk[q] + pnk[q], width);
        f2[q] = tl_kf_wrap((int64_t)pk[q] - pnk[q], width);
      }
      tl_kf_cmul(t, f2[0], f2[1], super_tw + 2 * (k - 1), width);
      tl_kf_put(y, base + 2 * k, tl_kf_half((uint32_t)f1[0] + (uint32_t)t[0], width), width);
      tl_kf_put(y, base + 2 * k + 1, tl_kf_half((uint32_t)f1[1] + (uint32_t)t[1], width), width);
      tl_kf_put(y, base + 2 * (n - k), tl_kf_half((uint32_t)f1[0] - (uint32_t)t[0], width), width);
      tl_kf_put(y, base + 2 * (n - k) + 1, tl_kf_half((uint32_t)t[1] - (uint32_t)f1[1], width), width);
    }
  }
}

/* kiss_fftri, fixed point: rows of `stride` values holding n + 1 complex bins (int16 if width is
 * 16, else int32) to 2n samples, unscaled beyond kissfft's own; work: 4n int32_t */
static inline void tl_irfft_fixed(const void *x, void *y, int32_t rows, int32_t stride, int32_t n,
                                  const int16_t *order, const int32_t *factors, int32_t stages, const int32_t *tw,
                                  const int32_t *super_tw, int32_t *work, int32_t width) {
  int32_t *spectrum = work, *out = work + 2 * n;
  int32_t r, k, q;
  for (r = 0; r < rows; ++r) {
#define TL_KF_IN(i) (width == 16 ? (int32_t)((const int16_t *)x)[r * stride + (i)] : ((const int32_t *)x)[r * stride + (i)])
    spectrum[0] = tl_kf_wrap((int64_t)TL_KF_IN(0) + TL_KF_IN(2 * n), width);
    spectrum[1] = tl_kf_wrap((int64_t)TL_KF_IN(0) - TL_KF_IN(2 * n), width);
    tl_kf_fixdiv(spectrum, 2, width);
    for (k = 1; k <= n / 2; ++k) {
      int32_t fk[2], fnkc[2], ek[2], d[2], ok[2];
      fk[0] = TL_KF_IN(2 * k);
      fk[1] = TL_KF_IN(2 * k + 1);
      fnkc[0] = TL_KF_IN(2 * (n - k));
      fnkc[1] = tl_kf_wrap(-(int64_t)TL_KF_IN(2 * (n - k) + 1), width);
      tl_kf_fixdiv(fk, 2, width);
      tl_kf_fixdiv(fnkc, 2, width);
      for (q = 0; q < 2; ++q) {
        ek[q] = tl_kf_wrap((int64_t)fk[q] + fnkc[q], width);
        d[q] = tl_kf_wrap((int64_t)fk[q] - fnkc[q], width);
      }
      tl_kf_cmul(ok, d[0], d[1], super_tw + 2 * (k - 1), width);
      spectrum[2 * k] = tl_kf_wrap((int64_t)ek[0] + ok[0], width);
      spectrum[2 * k + 1] = tl_kf_wrap((int64_t)ek[1] + ok[1], width);
      spectrum[2 * (n - k)] = tl_kf_wrap((int64_t)ek[0] - ok[0], width);
      spectrum[2 * (n - k) + 1] = tl_kf_wrap(-(int64_t)tl_kf_wrap((int64_t)ek[1] - ok[1], width), width);
    }
#undef TL_KF_IN
    for (k = 0; k < n; ++k) {
      const int32_t from = TL_READ_S16(&order[k]);
      out[2 * k] = spectrum[2 * from];
      out[2 * k + 1] = spectrum[2 * from + 1];
    }
    tl_kf_passes_fixed(out, n, factors, stages, tw, 1, width);
    for (k = 0; k < 2 * n; ++k) tl_kf_put(y, r * 2 * n + k, out[k], width);
  }
}

/* --------------------------------------------------------------------------------------------
 * kissfft, float */

static inline void tl_kf_mul_f32(float *m, const float *a, const float *tw) {
  const float br = TL_READ_F32(&tw[0]), bi = TL_READ_F32(&tw[1]);
  const float r = a[0] * br - a[1] * bi;
  m[1] = a[0] * bi + a[1] * br;
  m[0] = r;
}

static inline void tl_kf_bfly_f32(float *f, int32_t p, int32_t m, int32_t fstride, const float *tw, int32_t inverse) {
  int32_t u, q;
  for (u = 0; u < m; ++u) {
    float *x[5];
    float s[13][2];
    for (q = 0; q < p; ++q) x[q] = f + 2 * (q * m + u);
    if (p == 2) {
      tl_kf_mul_f32(s[0], x[1], tw + 2 * u * fstride);
      for (q = 0; q < 2; ++q) {
        x[1][q] = x[0][q] - s[0][q];
        x[0][q] += s[0][q];
      }
    } else if (p == 4) {
      float plus[2], minus[2];
      tl_kf_mul_f32(s[0], x[1], tw + 2 * u * fstride);
      tl_kf_mul_f32(s[1], x[2], tw + 4 * u * fstride);
      tl_kf_mul_f32(s[2], x[3], tw + 6 * u * fstride);
      for (q = 0; q < 2; ++q) {
        s[5][q] = x[0][q] - s[1][q];
        x[0][q] += s[1][q];
        s[3][q] = s[0][q] + s[2][q];
        s[4][q] = s[0][q] - s[2][q];
        x[2][q] = x[0][q] - s[3][q];
        x[0][q] += s[3][q];
      }
      plus[0] = s[5][0] + s[4][1];
      plus[1] = s[5][1] - s[4][0];
      minus[0] = s[5][0] - s[4][1];
      minus[1] = s[5][1] + s[4][0];
      for (q = 0; q < 2; ++q) {
        x[1][q] = inverse ? minus[q] : plus[q];
        x[3][q] = inverse ? plus[q] : minus[q];
      }
    } else if (p == 3) {
      const float epi = TL_READ_F32(&tw[2 * fstride * m + 1]);
      tl_kf_mul_f32(s[1], x[1], tw + 2 * u * fstride);
      tl_kf_mul_f32(s[2], x[2], tw + 4 * u * fstride);
      for (q = 0; q < 2; ++q) {
        s[3][q] = s[1][q] + s[2][q];
        s[0][q] = s[1][q] - s[2][q];
        x[1][q] = x[0][q] - s[3][q] * 0.5f;
        s[0][q] *= epi;
        x[0][q] += s[3][q];
      }
      x[2][0] = x[1][0] + s[0][1];
      x[2][1] = x[1][1] - s[0][0];
      x[1][0] -= s[0][1];
      x[1][1] += s[0][0];
    } else {
      const float yar = TL_READ_F32(&tw[2 * fstride * m]), yai = TL_READ_F32(&tw[2 * fstride * m + 1]);
      const float ybr = TL_READ_F32(&tw[4 * fstride * m]), ybi = TL_READ_F32(&tw[4 * fstride * m + 1]);
      for (q = 1; q < 5; ++q) tl_kf_mul_f32(s[q], x[q], tw + 2 * q * u * fstride);
      for (q = 0; q < 2; ++q) {
        s[7][q] = s[1][q] + s[4][q];
        s[10][q] = s[1][q] - s[4][q];
        s[8][q] = s[2][q] + s[3][q];
        s[9][q] = s[2][q] - s[3][q];
        s[0][q] = x[0][q];
        x[0][q] += s[7][q] + s[8][q];
        s[5][q] = s[0][q] + s[7][q] * yar + s[8][q] * ybr;
        s[11][q] = s[0][q] + s[7][q] * ybr + s[8][q] * yar;
      }
      s[6][0] = s[10][1] * yai + s[9][1] * ybi;
      s[6][1] = -(s[10][0] * yai) - s[9][0] * ybi;
      s[12][0] = -(s[10][1] * ybi) + s[9][1] * yai;
      s[12][1] = s[10][0] * ybi - s[9][0] * yai;
      for (q = 0; q < 2; ++q) {
        x[1][q] = s[5][q] - s[6][q];
        x[4][q] = s[5][q] + s[6][q];
        x[2][q] = s[11][q] + s[12][q];
        x[3][q] = s[11][q] - s[12][q];
      }
    }
  }
}

static inline void tl_kf_passes_f32(float *f, int32_t n, const int32_t *factors, int32_t stages, const float *tw,
                                    int32_t inverse) {
  int32_t stage, block;
  for (stage = stages - 1; stage >= 0; --stage) {
    const int32_t p = factors[2 * stage], m = factors[2 * stage + 1], blocks = n / (p * m);
    for (block = 0; block < blocks; ++block) tl_kf_bfly_f32(f + 2 * block * p * m, p, m, blocks, tw, inverse);
  }
}

/* kiss_fftr, float; work: 2n floats */
static inline void tl_rfft_f32(const float *x, float *y, int32_t rows, int32_t length, int32_t n, const int16_t *order,
                               const int32_t *factors, int32_t stages, const float *tw, const float *super_tw,
                               float *work) {
  int32_t r, k, q;
  for (r = 0; r < rows; ++r) {
    float *row = y + r * 2 * (n + 1);
    for (k = 0; k < n; ++k)
      for (q = 0; q < 2; ++q) {
        const int32_t idx = 2 * TL_READ_S16(&order[k]) + q;
        work[2 * k + q] = idx >= length ? 0.0f : x[r * length + idx];
      }
    tl_kf_passes_f32(work, n, factors, stages, tw, 0);
    row[0] = work[0] + work[1];
    row[1] = 0.0f;
    row[2 * n] = work[0] - work[1];
    row[2 * n + 1] = 0.0f;
    for (k = 1; k <= n / 2; ++k) {
      float f1[2], f2[2], t[2];
      const float pk[2] = {work[2 * k], work[2 * k + 1]};
      const float pnk[2] = {work[2 * (n - k)], -work[2 * (n - k) + 1]};
      for (q = 0; q < 2; ++q) {
        f1[q] = pk[q] + pnk[q];
        f2[q] = pk[q] - pnk[q];
      }
      tl_kf_mul_f32(t, f2, super_tw + 2 * (k - 1));
      row[2 * k] = (f1[0] + t[0]) * 0.5f;
      row[2 * k + 1] = (f1[1] + t[1]) * 0.5f;
      row[2 * (n - k)] = (f1[0] - t[0]) * 0.5f;
      row[2 * (n - k) + 1] = (t[1] - f1[1]) * 0.5f;
    }
  }
}

/* kiss_fftri, float, divided by the FFT length as TFLite Micro does; work: 4n floats */
static inline void tl_irfft_f32(const float *x, float *y, int32_t rows, int32_t stride, int32_t n,
                                const int16_t *order, const int32_t *factors, int32_t stages, const float *tw,
                                const float *super_tw, float *work) {
  float *spectrum = work, *out = work + 2 * n;
  int32_t r, k, q;
  for (r = 0; r < rows; ++r) {
    const float *in = x + r * stride;
    spectrum[0] = in[0] + in[2 * n];
    spectrum[1] = in[0] - in[2 * n];
    for (k = 1; k <= n / 2; ++k) {
      float ek[2], d[2], ok[2];
      const float fnkc[2] = {in[2 * (n - k)], -in[2 * (n - k) + 1]};
      for (q = 0; q < 2; ++q) {
        ek[q] = in[2 * k + q] + fnkc[q];
        d[q] = in[2 * k + q] - fnkc[q];
      }
      tl_kf_mul_f32(ok, d, super_tw + 2 * (k - 1));
      spectrum[2 * k] = ek[0] + ok[0];
      spectrum[2 * k + 1] = ek[1] + ok[1];
      spectrum[2 * (n - k)] = ek[0] - ok[0];
      spectrum[2 * (n - k) + 1] = -(ek[1] - ok[1]);
    }
    for (k = 0; k < n; ++k) {
      const int32_t from = TL_READ_S16(&order[k]);
      out[2 * k] = spectrum[2 * from];
      out[2 * k + 1] = spectrum[2 * from + 1];
    }
    tl_kf_passes_f32(out, n, factors, stages, tw, 1);
    for (k = 0; k < 2 * n; ++k) y[r * 2 * n + k] = out[k] / (float)(2 * n);
  }
}

#endif /* TL_FFT_H */
