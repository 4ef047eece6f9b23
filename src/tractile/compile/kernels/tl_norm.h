/* tractile kernels: L2 normalization over the last axis (float; TFLite's int8 kernel) and the
 * fixed-point inverse square root it shares with quantized RSQRT. */
#ifndef TL_NORM_H
#define TL_NORM_H

#include <math.h>

#include "tl_common.h"

static inline int32_t tl_sat_lshift(int32_t x, int exponent) {
  const int64_t v = (int64_t)x * ((int64_t)1 << exponent);
  return v > TL_INT32_MAX ? TL_INT32_MAX : (v < TL_INT32_MIN ? TL_INT32_MIN : (int32_t)v);
}

/* TFLite's GetInvSqrtQuantizedMultiplierExp(input, reverse_shift = -1): 1 / sqrt(input) as a
 * quantized multiplier and a (non-positive) left shift; 0 and 1 give (INT32_MAX, 0) */
static inline void tl_inv_sqrt(int32_t input, int32_t *multiplier, int *shift) {
  int32_t half_input, x;
  int exponent = 11, headroom = 0, pairs, step;
  uint32_t v;
  if (input <= 1) {
    *multiplier = TL_INT32_MAX;
    *shift = 0;
    return;
  }
  while (input >= (1 << 29)) {
    input /= 4;
    ++exponent;
  }
  for (v = (uint32_t)input; !(v & 0x80000000u); v <<= 1) ++headroom;
  pairs = (headroom - 1) / 2 - 1;
  exponent -= pairs;
  input <<= 2 * pairs;
  half_input = tl_rdbpot(input >> 1, 1);
  x = 1 << 28;
  for (step = 0; step < 5; ++step) {
    const int32_t cube = tl_sat_lshift(tl_srdhm(tl_srdhm(x, x), x), 6);
    const int32_t next = (int32_t)((uint32_t)tl_srdhm((1 << 28) + (1 << 27), x) - (uint32_t)tl_srdhm(half_input, cube));
    x = tl_sat_lshift(next, 3);
  }
  x = tl_srdhm(x, 1518500250);
  if (exponent < 0) {
    x = (int32_t)((uint32_t)x << -exponent);
    exponent = 0;
  }
  *multiplier = x;
  *shift = -exponent;
}

static inline void tl_l2norm_f32(const float *x, float *y, int32_t rows, int32_t depth, float epsilon) {
  int32_t r, d;
  for (r = 0; r < rows; ++r) {
    const float *row = x + r * depth;
    float total = 0.0f, norm;
    for (d = 0; d < depth; ++d) total += row[d] * row[d];
    norm = sqrtf(total);
    if (norm < epsilon) norm = epsilon;
    for (d = 0; d < depth; ++d) y[r * depth + d] = norm == 0.0f ? 0.0f : row[d] / norm;
  }
}

static inline void tl_l2norm_s8(const int8_t *x, int8_t *y, int32_t rows, int32_t depth, int32_t zero) {
  int32_t r, d, multiplier;
  int shift;
  for (r = 0; r < rows; ++r) {
    const int8_t *row = x + r * depth;
    int32_t total = 0;
    for (d = 0; d < depth; ++d) total += (row[d] - zero) * (row[d] - zero);
    tl_inv_sqrt(total, &multiplier, &shift);
    for (d = 0; d < depth; ++d)
      y[r * depth + d] = (int8_t)tl_clamp_i32(tl_mbqm(row[d] - zero, multiplier, shift + 7), -128, 127);
  }
}

#endif /* TL_NORM_H */
