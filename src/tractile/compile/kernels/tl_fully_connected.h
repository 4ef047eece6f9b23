/* tl_fully_connected.h: dense layers (TFLite FULLY_CONNECTED, ONNX MatMul/Gemm) and matmuls.
 *
 * Float weights are stored transposed, depth-major (wt[d * units + u]), so the inner loop
 * runs over contiguous outputs and vectorises without reassociating sums. Integer weights
 * are unit-major (w[u * depth + d]) with int32 (int64 for 16-bit inputs) accumulators.
 * The input zero point is folded into the bias on the host: bias[u] - x_zero * sum_d w[u][d].
 * Per-channel parameters are indexed u * per_channel (one value when per_channel is 0).
 *
 * int32 accumulators wrap as TFLite's do (two's complement, modulo 2^32): sums run on
 * uint32_t, where wrapping is defined, and come back through tl_wrap_s32; the folded bias
 * was reduced modulo 2^32 on the host, which the sum does not notice. */
#ifndef TL_FULLY_CONNECTED_H
#define TL_FULLY_CONNECTED_H

#include "tl_common.h"

/* u as a two's complement int32_t, without C's implementation-defined conversion */
static inline int32_t tl_wrap_s32(uint32_t u) {
  return u <= 0x7fffffffu ? (int32_t)u : (int32_t)(u - 0x80000000u) - 0x7fffffff - 1;
}

/* a + b modulo 2^32, as int32 arithmetic wraps in TFLite (no signed overflow) */
static inline int32_t tl_add_wrap_s32(int32_t a, int32_t b) { return tl_wrap_s32((uint32_t)a + (uint32_t)b); }

/* y[b][u] = clamp(bias[u] + sum_d x[b][d] * wt[d][u], low, high); bias may be NULL */
static inline void tl_dense_f32(const float *x, const float *wt, const float *bias, float *y, int batches,
                                int depth, int units, float low, float high) {
  int b, d, u;
  for (b = 0; b < batches; ++b) {
    const float *row = x + b * depth;
    float *out = y + b * units;
    for (u = 0; u < units; ++u) out[u] = bias ? TL_READ_F32(bias + u) : 0.0f;
    for (d = 0; d < depth; ++d) {
      const float value = row[d];
      const float *w = wt + d * units;
      for (u = 0; u < units; ++u) out[u] += value * TL_READ_F32(w + u);
    }
    for (u = 0; u < units; ++u) out[u] = tl_clamp_f32(out[u], low, high);
  }
}

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TL_MATMUL_F32_X86
/* y = a b on four rows of a (`depth` apart) and 16 columns of b and y (`cols` apart), the sums
 * over all of depth in eight ymm registers */
static inline void tl_matmul_x86_four(const float *a, const float *b, float *y, int32_t depth, int32_t cols) {
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  int32_t k;
  for (k = 0; k < depth; ++k, b += cols) {
    const __m256 w0 = _mm256_loadu_ps(b), w1 = _mm256_loadu_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a + k);
    s00 = _mm256_fmadd_ps(x, w0, s00);
    s01 = _mm256_fmadd_ps(x, w1, s01);
    x = _mm256_broadcast_ss(a + depth + k);
    s10 = _mm256_fmadd_ps(x, w0, s10);
    s11 = _mm256_fmadd_ps(x, w1, s11);
    x = _mm256_broadcast_ss(a + 2 * depth + k);
    s20 = _mm256_fmadd_ps(x, w0, s20);
    s21 = _mm256_fmadd_ps(x, w1, s21);
    x = _mm256_broadcast_ss(a + 3 * depth + k);
    s30 = _mm256_fmadd_ps(x, w0, s30);
    s31 = _mm256_fmadd_ps(x, w1, s31);
  }
  _mm256_storeu_ps(y, s00);
  _mm256_storeu_ps(y + 8, s01);
  _mm256_storeu_ps(y + cols, s10);
  _mm256_storeu_ps(y + cols + 8, s11);
  _mm256_storeu_ps(y + 2 * cols, s20);
  _mm256_storeu_ps(y + 2 * cols + 8, s21);
  _mm256_storeu_ps(y + 3 * cols, s30);
  _mm256_storeu_ps(y + 3 * cols + 8, s31);
}

/* one row by 16 columns */
static inline void tl_matmul_x86_one(const float *a, const float *b, float *y, int32_t depth, int32_t cols) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  int32_t k;
  for (k = 0; k < depth; ++k, b += cols) {
    const __m256 x = _mm256_broadcast_ss(a + k);
    s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b), s0);
    s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(b + 8), s1);
  }
  _mm256_storeu_ps(y, s0);
  _mm256_storeu_ps(y + 8, s1);
}
#endif

/* y[b][m][n] = sum_k a[b][m][k] * bm[b][k][n] with the batch offsets given per product
 * (a_offsets[b], b_offsets[b], in elements), for MatMul on two computed operands; with AVX2,
 * blocks of 16 columns in registers (tl_matmul_x86_four), the other columns by the loop */
static inline void tl_matmul_f32(const float *a, const float *bm, float *y, int batches, const int32_t *a_offsets,
                                 const int32_t *b_offsets, int rows, int depth, int cols) {
  int b, m, k, n, first = 0;
  for (b = 0; b < batches; ++b) {
    const float *pa = a + TL_READ_S32(a_offsets + b);
    const float *pb = bm + TL_READ_S32(b_offsets + b);
    float *py = y + b * rows * cols;
#ifdef TL_MATMUL_F32_X86
    first = cols - cols % 16;
    for (m = 0; m + 4 <= rows; m += 4)
      for (n = 0; n < first; n += 16) tl_matmul_x86_four(pa + m * depth, pb + n, py + m * cols + n, depth, cols);
    for (; m < rows; ++m)
      for (n = 0; n < first; n += 16) tl_matmul_x86_one(pa + m * depth, pb + n, py + m * cols + n, depth, cols);
#endif
    for (m = 0; m < rows; ++m) {
      float *out = py + m * cols;
      for (n = first; n < cols; ++n) out[n] = 0.0f;
      for (k = 0; k < depth; ++k) {
        const float value = pa[m * depth + k];
        const float *w = pb + k * cols;
        for (n = first; n < cols; ++n) out[n] += value * w[n];
      }
    }
  }
}

#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
/* Cortex-M4/M7: four int8 products per two SMLAD (each pair sign-extended by one SXTB16) */
static inline int32_t tl_dot_s8(const int8_t *x, const int8_t *w, int depth) {
  int32_t acc = 0; /* SMLAD wraps */
  uint32_t tail = 0;
  int d = 0;
  for (; d + 4 <= depth; d += 4) {
    uint32_t a, b;
    a = tl_load_word(x + d);
    b = tl_load_word(w + d);
    acc = __smlad(__sxtb16(a), __sxtb16(b), acc);
    acc = __smlad(tl_sxtb16_odd(a), tl_sxtb16_odd(b), acc);
  }
  for (; d < depth; ++d) tail += (uint32_t)(x[d] * w[d]);
  return tl_wrap_s32((uint32_t)acc + tail);
}
/* two rows of weights against one input row: the input is loaded and widened once */
static inline void tl_dot2_s8(const int8_t *x, const int8_t *w0, const int8_t *w1, int depth, int32_t *acc0,
                              int32_t *acc1) {
  int32_t s0 = 0, s1 = 0;
  int d = 0;
  for (; d + 4 <= depth; d += 4) {
    uint32_t a, b0, b1, even, odd;
    a = tl_load_word(x + d);
    b0 = tl_load_word(w0 + d);
    b1 = tl_load_word(w1 + d);
    even = __sxtb16(a);
    odd = tl_sxtb16_odd(a);
    s0 = __smlad(even, __sxtb16(b0), s0);
    s0 = __smlad(odd, tl_sxtb16_odd(b0), s0);
    s1 = __smlad(even, __sxtb16(b1), s1);
    s1 = __smlad(odd, tl_sxtb16_odd(b1), s1);
  }
  *acc0 = tl_add_wrap_s32(s0, tl_dot_s8(x + d, w0 + d, depth - d));
  *acc1 = tl_add_wrap_s32(s1, tl_dot_s8(x + d, w1 + d, depth - d));
}
#else
static inline int32_t tl_dot_s8(const int8_t *x, const int8_t *w, int depth) {
  uint32_t acc = 0;
  int d;
  /* int8 x int8 fits an int everywhere (16 bits on AVR, where this keeps the multiply 8-bit) */
  for (d = 0; d < depth; ++d) acc += (uint32_t)(x[d] * TL_READ_S8(w + d));
  return tl_wrap_s32(acc);
}
static inline void tl_dot2_s8(const int8_t *x, const int8_t *w0, const int8_t *w1, int depth, int32_t *acc0,
                              int32_t *acc1) {
  *acc0 = tl_dot_s8(x, w0, depth);
  *acc1 = tl_dot_s8(x, w1, depth);
}
#endif

static inline int32_t tl_dot_u8_s16(const uint8_t *x, const int16_t *w, int depth) {
  uint32_t acc = 0;
  int d;
  for (d = 0; d < depth; ++d) acc += (uint32_t)((int32_t)x[d] * (int32_t)TL_READ_S16(w + d));
  return tl_wrap_s32(acc);
}

static inline int64_t tl_dot_s16_s8(const int16_t *x, const int8_t *w, int depth) {
  int64_t acc = 0;
  int d;
  for (d = 0; d < depth; ++d) acc += (int32_t)x[d] * (int32_t)TL_READ_S8(w + d);
  return acc;
}

/* outputs first..units-1 of one row of int8 inputs, two at a time (TFLite Micro's requantization) */
static inline void tl_fc_s8_units(const int8_t *row, const int8_t *w, const int32_t *bias, int8_t *out, int depth,
                                  int first, int units, const int32_t *multiplier, const int32_t *shift,
                                  int per_channel, int32_t y_zero, int32_t low, int32_t high) {
  int u, k;
  for (u = first; u < units; u += 2) {
    int32_t acc[2];
    const int pair = u + 1 < units ? 2 : 1;
    if (pair == 2) tl_dot2_s8(row, w + (int32_t)u * depth, w + (int32_t)(u + 1) * depth, depth, &acc[0], &acc[1]);
    else acc[0] = tl_dot_s8(row, w + (int32_t)u * depth, depth);
    for (k = 0; k < pair; ++k) {
      const int c = (u + k) * per_channel;
      const int32_t v = tl_mbqm(tl_add_wrap_s32(acc[k], TL_READ_S32(bias + u + k)), TL_READ_S32(multiplier + c),
                                TL_READ_S32(shift + c)) + y_zero;
      out[u + k] = (int8_t)tl_clamp_i32(v, low, high);
    }
  }
}

/* int8 (TFLite Micro's fixed-point requantization) */
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
/* Cortex-M4/M7: four rows of weights at a time against one input row, so that each word of
 * inputs is loaded and widened once for four outputs (16 MACs per 4 loads, 5 SXTB16 pairs and
 * 8 SMLAD); the last units % 4 outputs two and one at a time */
#define TL_SMLAD4(v, even, odd, s) (s = __smlad(odd, tl_sxtb16_odd(v), __smlad(even, __sxtb16(v), s)))
static inline void tl_fc_s8(const int8_t *x, const int8_t *w, const int32_t *bias, int8_t *y, int batches,
                            int depth, int units, const int32_t *multiplier, const int32_t *shift, int per_channel,
                            int32_t y_zero, int32_t low, int32_t high) {
  int b, u, d;
  for (b = 0; b < batches; ++b) {
    const int8_t *row = x + (int32_t)b * depth;
    int8_t *out = y + (int32_t)b * units;
    for (u = 0; u + 4 <= units; u += 4) {
      const int8_t *w0 = w + (int32_t)u * depth, *w1 = w0 + depth, *w2 = w1 + depth, *w3 = w2 + depth;
      int32_t s0 = bias[u], s1 = bias[u + 1], s2 = bias[u + 2], s3 = bias[u + 3];
      for (d = 0; d + 4 <= depth; d += 4) {
        const uint32_t a = tl_load_word(row + d);
        const uint32_t even = __sxtb16(a), odd = tl_sxtb16_odd(a);
        TL_SMLAD4(tl_load_word(w0 + d), even, odd, s0);
        TL_SMLAD4(tl_load_word(w1 + d), even, odd, s1);
        TL_SMLAD4(tl_load_word(w2 + d), even, odd, s2);
        TL_SMLAD4(tl_load_word(w3 + d), even, odd, s3);
      }
      if (d < depth) {
        s0 = tl_add_wrap_s32(s0, tl_dot_s8(row + d, w0 + d, depth - d));
        s1 = tl_add_wrap_s32(s1, tl_dot_s8(row + d, w1 + d, depth - d));
        s2 = tl_add_wrap_s32(s2, tl_dot_s8(row + d, w2 + d, depth - d));
        s3 = tl_add_wrap_s32(s3, tl_dot_s8(row + d, w3 + d, depth - d));
      }
      out[u] = (int8_t)tl_clamp_s8(tl_mbqm(s0, multiplier[u * per_channel], shift[u * per_channel]) + y_zero, low,
                                   high);
      out[u + 1] = (int8_t)tl_clamp_s8(tl_mbqm(s1, multiplier[(u + 1) * per_channel],
                                               shift[(u + 1) * per_channel]) + y_zero, low, high);
      out[u + 2] = (int8_t)tl_clamp_s8(tl_mbqm(s2, multiplier[(u + 2) * per_channel],
                                               shift[(u + 2) * per_channel]) + y_zero, low, high);
      out[u + 3] = (int8_t)tl_clamp_s8(tl_mbqm(s3, multiplier[(u + 3) * per_channel],
                                               shift[(u + 3) * per_channel]) + y_zero, low, high);
    }
    tl_fc_s8_units(row, w, bias, out, depth, u, units, multiplier, shift, per_channel, y_zero, low, high);
  }
}
#undef TL_SMLAD4
#else
/* int8 (TFLite Micro's fixed-point requantization) */
static inline void tl_fc_s8(const int8_t *x, const int8_t *w, const int32_t *bias, int8_t *y, int batches,
                            int depth, int units, const int32_t *multiplier, const int32_t *shift, int per_channel,
                            int32_t y_zero, int32_t low, int32_t high) {
  int b;
  for (b = 0; b < batches; ++b) {
    tl_fc_s8_units(x + (int32_t)b * depth, w, bias, y + (int32_t)b * units, depth, 0, units, multiplier, shift,
                   per_channel, y_zero, low, high);
  }
}

#endif

/* int8 (TFLite's reference kernel: the accumulator rescaled in double, halves away from zero) */
static inline void tl_fc_s8_ref(const int8_t *x, const int8_t *w, const int32_t *bias, int8_t *y, int batches,
                                int depth, int units, const double *scale, int per_channel, int32_t y_zero,
                                int32_t low, int32_t high) {
  int b, u;
  for (b = 0; b < batches; ++b) {
    for (u = 0; u < units; ++u) {
      const int32_t acc = tl_add_wrap_s32(tl_dot_s8(x + b * depth, w + u * depth, depth), TL_READ_S32(bias + u));
      const int64_t v = tl_round_half_away((double)acc * scale[u * per_channel]) + y_zero;
      y[b * units + u] = (int8_t)(v < low ? low : (v > high ? high : v));
    }
  }
}

/* uint8 with a weight zero point (weights stored offset, as int16) */
static inline void tl_fc_u8(const uint8_t *x, const int16_t *w, const int32_t *bias, uint8_t *y, int batches,
                            int depth, int units, const int32_t *multiplier, const int32_t *shift, int per_channel,
                            int32_t y_zero, int32_t low, int32_t high) {
  int b, u;
  for (b = 0; b < batches; ++b) {
    for (u = 0; u < units; ++u) {
      const int c = u * per_channel;
      const int32_t acc = tl_add_wrap_s32(tl_dot_u8_s16(x + b * depth, w + u * depth, depth),
                                          TL_READ_S32(bias + u));
      const int32_t v = tl_mbqm(acc, TL_READ_S32(multiplier + c), TL_READ_S32(shift + c)) + y_zero;
      y[b * units + u] = (uint8_t)tl_clamp_i32(v, low, high);
    }
  }
}

static inline void tl_fc_u8_ref(const uint8_t *x, const int16_t *w, const int32_t *bias, uint8_t *y, int batches,
                                int depth, int units, const double *scale, int per_channel, int32_t y_zero,
                                int32_t low, int32_t high) {
  int b, u;
  for (b = 0; b < batches; ++b) {
    for (u = 0; u < units; ++u) {
      const int32_t acc = tl_add_wrap_s32(tl_dot_u8_s16(x + b * depth, w + u * depth, depth),
                                          TL_READ_S32(bias + u));
      const int64_t v = tl_round_half_away((double)acc * scale[u * per_channel]) + y_zero;
      y[b * units + u] = (uint8_t)(v < low ? low : (v > high ? high : v));
    }
  }
}

/* int16 activations, int8 weights (16x8): int64 accumulators and bias */
static inline void tl_fc_s16(const int16_t *x, const int8_t *w, const int64_t *bias, int16_t *y, int batches,
                             int depth, int units, const int32_t *multiplier, const int32_t *shift, int per_channel,
                             int32_t y_zero, int32_t low, int32_t high) {
  int b, u;
  for (b = 0; b < batches; ++b) {
    for (u = 0; u < units; ++u) {
      const int c = u * per_channel;
      const int64_t acc = tl_dot_s16_s8(x + b * depth, w + u * depth, depth) + TL_READ_S64(bias + u);
      const int32_t v = tl_mbqm64(acc, TL_READ_S32(multiplier + c), TL_READ_S32(shift + c)) + y_zero;
      y[b * units + u] = (int16_t)tl_clamp_i32(v, low, high);
    }
  }
}

static inline void tl_fc_s16_ref(const int16_t *x, const int8_t *w, const int64_t *bias, int16_t *y, int batches,
                                 int depth, int units, const double *scale, int per_channel, int32_t y_zero,
                                 int32_t low, int32_t high) {
  int b, u;
  for (b = 0; b < batches; ++b) {
    for (u = 0; u < units; ++u) {
      const int64_t acc = tl_dot_s16_s8(x + b * depth, w + u * depth, depth) + TL_READ_S64(bias + u);
      const int64_t v = tl_round_half_away((double)acc * scale[u * per_channel]) + y_zero;
      y[b * units + u] = (int16_t)(v < low ? low : (v > high ? high : v));
    }
  }
}

#endif /* TL_FULLY_CONNECTED_H */
