/* tl_conv_one.h: the host's float NHWC convolution of ONE input channel (a spectrogram's or a
 * grey image's first layer), read in place: no im2col. Each output pixel sums its valid taps,
 * one input value broadcast times a row of the filters' weights (weights stored [tap][filter]).
 * The filters go four registers at a time (32 on x86-64 AVX2 + FMA, 16 on AArch64 NEON) over two
 * neighbouring pixels of a row where both windows lie inside the input (the weights loaded once
 * for both), then one register at a time, then one filter at a time; the portable loops
 * elsewhere. Sums start from the bias, in the taps' order, with fused multiply-adds where vectors
 * are used (float results within rounding of the interpreter's). */
#ifndef TL_CONV_ONE_H
#define TL_CONV_ONE_H

#include <stddef.h>

#include "tl_common.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TL_C1_LANES 8
typedef __m256 tl_c1_v;
#define tl_c1_load(p) _mm256_loadu_ps(p)
#define tl_c1_store(p, v) _mm256_storeu_ps((p), (v))
#define tl_c1_set(v) _mm256_set1_ps(v)
#define tl_c1_fma(acc, a, b) _mm256_fmadd_ps((a), (b), (acc))
#define tl_c1_clamp(v, lo, hi) _mm256_min_ps((hi), _mm256_max_ps((lo), (v)))
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define TL_C1_LANES 4
typedef float32x4_t tl_c1_v;
#define tl_c1_load(p) vld1q_f32(p)
#define tl_c1_store(p, v) vst1q_f32((p), (v))
#define tl_c1_set(v) vdupq_n_f32(v)
#define tl_c1_fma(acc, a, b) vfmaq_f32((acc), (a), (b))
#define tl_c1_clamp(v, lo, hi) vminq_f32((hi), vmaxq_f32((lo), (v)))
#else
#define TL_C1_LANES 0
#endif

/* Where one output pixel's window meets the input: taps [k0, k1) of a kernel of k taps, the
 * first reading input index at (0 the window's start). */
typedef struct {
  int32_t k0, k1, at;
} tl_c1_span;

static inline tl_c1_span tl_c1_window(int32_t out, int32_t stride, int32_t pad, int32_t dilation, int32_t k,
                                      int32_t size) {
  tl_c1_span s;
  s.at = out * stride - pad;
  s.k0 = 0;
  while (s.k0 < k && s.at + s.k0 * dilation < 0) {
    s.k0++;
  }
  s.k1 = k;
  while (s.k1 > s.k0 && s.at + (s.k1 - 1) * dilation >= size) {
    s.k1--;
  }
  return s;
}

/* filters [f0, f0 + count) of one pixel, one at a time (the tail, and the portable kernel) */
static inline void tl_c1_pixel_scalar(const float *x, const float *w, const float *bias, float *out, int32_t in_w,
                                      int32_t k_w, int32_t filters, int32_t dil_h, int32_t dil_w, tl_c1_span r,
                                      tl_c1_span c, int32_t f0, int32_t count, float low, float high) {
  for (int32_t f = f0; f < f0 + count; ++f) {
    float acc = bias ? bias[f] : 0.0f;
    for (int32_t ky = r.k0; ky < r.k1; ++ky) {
      const float *row = x + (ptrdiff_t)(r.at + ky * dil_h) * in_w + c.at;
      const float *taps = w + (ptrdiff_t)ky * k_w * filters + f;
      for (int32_t kx = c.k0; kx < c.k1; ++kx) {
        acc += row[kx * dil_w] * taps[(ptrdiff_t)kx * filters];
      }
    }
    out[f] = acc < low ? low : (acc > high ? high : acc);
  }
}

#if TL_C1_LANES
#define TL_C1_BLOCK (4 * TL_C1_LANES)

static inline tl_c1_v tl_c1_start(const float *bias, int32_t f) {
  return bias ? tl_c1_load(bias + f) : tl_c1_set(0.0f);
}

/* four registers of filters from f, for one pixel, or for two when `two` (the second at out +
 * filters, its window `step` inputs on) */
static inline void tl_c1_block(const float *x, const float *w, const float *bias, float *out, int two,
                               ptrdiff_t step, int32_t in_w, int32_t k_w, int32_t filters, int32_t dil_h,
                               int32_t dil_w, tl_c1_span r, tl_c1_span c, int32_t f, tl_c1_v lo, tl_c1_v hi) {
  tl_c1_v a0 = tl_c1_start(bias, f), a1 = tl_c1_start(bias, f + TL_C1_LANES);
  tl_c1_v a2 = tl_c1_start(bias, f + 2 * TL_C1_LANES), a3 = tl_c1_start(bias, f + 3 * TL_C1_LANES);
  tl_c1_v b0 = a0, b1 = a1, b2 = a2, b3 = a3;
  for (int32_t ky = r.k0; ky < r.k1; ++ky) {
    const float *row = x + (ptrdiff_t)(r.at + ky * dil_h) * in_w + c.at;
    const float *taps = w + (ptrdiff_t)ky * k_w * filters + f;
    for (int32_t kx = c.k0; kx < c.k1; ++kx) {
      const float *tap = taps + (ptrdiff_t)kx * filters;
      const tl_c1_v w0 = tl_c1_load(tap), w1 = tl_c1_load(tap + TL_C1_LANES);
      const tl_c1_v w2 = tl_c1_load(tap + 2 * TL_C1_LANES), w3 = tl_c1_load(tap + 3 * TL_C1_LANES);
      const tl_c1_v v = tl_c1_set(row[kx * dil_w]);
      a0 = tl_c1_fma(a0, v, w0);
      a1 = tl_c1_fma(a1, v, w1);
      a2 = tl_c1_fma(a2, v, w2);
      a3 = tl_c1_fma(a3, v, w3);
      if (two) {
        const tl_c1_v u = tl_c1_set(row[kx * dil_w + step]);
        b0 = tl_c1_fma(b0, u, w0);
        b1 = tl_c1_fma(b1, u, w1);
        b2 = tl_c1_fma(b2, u, w2);
        b3 = tl_c1_fma(b3, u, w3);
      }
    }
  }
  tl_c1_store(out + f, tl_c1_clamp(a0, lo, hi));
  tl_c1_store(out + f + TL_C1_LANES, tl_c1_clamp(a1, lo, hi));
  tl_c1_store(out + f + 2 * TL_C1_LANES, tl_c1_clamp(a2, lo, hi));
  tl_c1_store(out + f + 3 * TL_C1_LANES, tl_c1_clamp(a3, lo, hi));
  if (two) {
    float *out2 = out + filters;
    tl_c1_store(out2 + f, tl_c1_clamp(b0, lo, hi));
    tl_c1_store(out2 + f + TL_C1_LANES, tl_c1_clamp(b1, lo, hi));
    tl_c1_store(out2 + f + 2 * TL_C1_LANES, tl_c1_clamp(b2, lo, hi));
    tl_c1_store(out2 + f + 3 * TL_C1_LANES, tl_c1_clamp(b3, lo, hi));
  }
}

/* one register of filters from f, for one pixel */
static inline void tl_c1_single(const float *x, const float *w, const float *bias, float *out, int32_t in_w,
                                int32_t k_w, int32_t filters, int32_t dil_h, int32_t dil_w, tl_c1_span r,
                                tl_c1_span c, int32_t f, tl_c1_v lo, tl_c1_v hi) {
  tl_c1_v a = tl_c1_start(bias, f);
  for (int32_t ky = r.k0; ky < r.k1; ++ky) {
    const float *row = x + (ptrdiff_t)(r.at + ky * dil_h) * in_w + c.at;
    const float *taps = w + (ptrdiff_t)ky * k_w * filters + f;
    for (int32_t kx = c.k0; kx < c.k1; ++kx) {
      a = tl_c1_fma(a, tl_c1_set(row[kx * dil_w]), tl_c1_load(taps + (ptrdiff_t)kx * filters));
    }
  }
  tl_c1_store(out + f, tl_c1_clamp(a, lo, hi));
}
#endif

/* one output pixel, its window clipped to the input (at the edges) */
static inline void tl_c1_pixel(const float *x, const float *w, const float *bias, float *out, int32_t in_w,
                               int32_t k_w, int32_t filters, int32_t dil_h, int32_t dil_w, tl_c1_span r, tl_c1_span c,
                               float low, float high) {
  int32_t f = 0;
#if TL_C1_LANES
  const tl_c1_v lo = tl_c1_set(low), hi = tl_c1_set(high);
  for (; f + TL_C1_BLOCK <= filters; f += TL_C1_BLOCK) {
    tl_c1_block(x, w, bias, out, 0, 0, in_w, k_w, filters, dil_h, dil_w, r, c, f, lo, hi);
  }
  for (; f + TL_C1_LANES <= filters; f += TL_C1_LANES) {
    tl_c1_single(x, w, bias, out, in_w, k_w, filters, dil_h, dil_w, r, c, f, lo, hi);
  }
#endif
  tl_c1_pixel_scalar(x, w, bias, out, in_w, k_w, filters, dil_h, dil_w, r, c, f, filters - f, low, high);
}

/* `count` pixels of a row whose windows lie whole inside the input, the first at column c.at */
static inline void tl_c1_run(const float *x, const float *w, const float *bias, float *out, int32_t count,
                             int32_t stride_w, int32_t in_w, int32_t k_w, int32_t filters, int32_t dil_h,
                             int32_t dil_w, tl_c1_span r, tl_c1_span c, float low, float high) {
  int32_t f = 0;
#if TL_C1_LANES
  const tl_c1_v lo = tl_c1_set(low), hi = tl_c1_set(high);
  for (; f + TL_C1_BLOCK <= filters; f += TL_C1_BLOCK) {
    tl_c1_span at = c;
    int32_t p = 0;
    for (; p + 2 <= count; p += 2, at.at += 2 * stride_w) {
      float *o = out + (ptrdiff_t)p * filters;
      tl_c1_block(x, w, bias, o, 1, stride_w, in_w, k_w, filters, dil_h, dil_w, r, at, f, lo, hi);
    }
    if (p < count) {
      tl_c1_block(x, w, bias, out + (ptrdiff_t)p * filters, 0, 0, in_w, k_w, filters, dil_h, dil_w, r, at, f, lo,
                  hi);
    }
  }
  for (; f + TL_C1_LANES <= filters; f += TL_C1_LANES) {
    tl_c1_span at = c;
    for (int32_t p = 0; p < count; ++p, at.at += stride_w) {
      tl_c1_single(x, w, bias, out + (ptrdiff_t)p * filters, in_w, k_w, filters, dil_h, dil_w, r, at, f, lo, hi);
    }
  }
#endif
  if (f < filters) {
    tl_c1_span at = c;
    for (int32_t p = 0; p < count; ++p, at.at += stride_w) {
      tl_c1_pixel_scalar(x, w, bias, out + (ptrdiff_t)p * filters, in_w, k_w, filters, dil_h, dil_w, r, at, f,
                         filters - f, low, high);
    }
  }
}

/* y[b, oy, ox, f] = clamp(bias[f] + sum over the valid taps of x[b, iy, ix] * w[ky, kx, f]) */
static inline void tl_conv_one_f32(const float *x, const float *w, const float *bias, float *y, int32_t batches,
                                   int32_t in_h, int32_t in_w, int32_t out_h, int32_t out_w, int32_t filters,
                                   int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t dil_h,
                                   int32_t dil_w, int32_t top, int32_t left, float low, float high) {
  /* the columns whose windows lie whole inside the input: [first, end) */
  int32_t first = 0, end = out_w;
  while (first < out_w && first * stride_w - left < 0) {
    first++;
  }
  while (end > first && (end - 1) * stride_w - left + (k_w - 1) * dil_w >= in_w) {
    end--;
  }
  for (int32_t b = 0; b < batches; ++b) {
    const float *image = x + (ptrdiff_t)b * in_h * in_w;
    for (int32_t oy = 0; oy < out_h; ++oy) {
      const tl_c1_span r = tl_c1_window(oy, stride_h, top, dil_h, k_h, in_h);
      float *out = y + (((ptrdiff_t)b * out_h + oy) * out_w) * filters;
      for (int32_t ox = 0; ox < out_w; ++ox) {
        if (ox == first && end > first) {
          tl_c1_run(image, w, bias, out + (ptrdiff_t)ox * filters, end - first, stride_w, in_w, k_w, filters, dil_h,
                    dil_w, r, tl_c1_window(ox, stride_w, left, dil_w, k_w, in_w), low, high);
          ox = end - 1;
          continue;
        }
        tl_c1_pixel(image, w, bias, out + (ptrdiff_t)ox * filters, in_w, k_w, filters, dil_h, dil_w, r,
                    tl_c1_window(ox, stride_w, left, dil_w, k_w, in_w), low, high);
      }
    }
  }
}

#endif
