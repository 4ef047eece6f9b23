/* tl_softmax.h: softmax. Float along one axis (rows of `depth` values `inner` apart), and
 * TFLite's fixed-point int8/uint8 kernel: exp of each 8-bit difference to the row maximum
 * comes from a table made on the host (the interpreter's own: gemmlowp's
 * exp_on_negative_values in Q5.26), summed in Q12.19 with int32 wrap-around, then scaled by
 * the fixed-point reciprocal of the sum (gemmlowp's one_over_one_plus_x_for_x_in_0_1). */
#ifndef TL_SOFTMAX_H
#define TL_SOFTMAX_H

#include <math.h>
#include <string.h>

#include "tl_common.h"
#include "tl_exp.h"

/* exp of a difference to the row maximum (<= 0): tl_exp.h's on 64-bit hosts, 0 below -87 where
 * expf gives at most 1.7e-38 (masked scores of -inf among them) */
static inline float tl_softmax_exp(float x) {
#if TL_VECTOR_EXP
  const float e = tl_exp_poly(x);
  return isless(x, -87.0f) ? 0.0f : e;
#else
  return expf(x);
#endif
}

#if TL_VECTOR_EXP
#define TL_SOFTMAX_LANES 8

/* one contiguous row: the maximum, the exps and their sum in TL_SOFTMAX_LANES independent
 * lanes (loops the compiler vectorises); y may be x */
static inline void tl_softmax_row_f32(const float *row, float *out, int32_t depth, float beta, int32_t log_output) {
  const int32_t full = depth - depth % TL_SOFTMAX_LANES;
  float top[TL_SOFTMAX_LANES], part[TL_SOFTMAX_LANES], max, total = 0.0f;
  int32_t d, j;
  for (j = 0; j < TL_SOFTMAX_LANES; ++j) {
    top[j] = row[0];
    part[j] = 0.0f;
  }
  for (d = 0; d < full; d += TL_SOFTMAX_LANES)
    for (j = 0; j < TL_SOFTMAX_LANES; ++j) top[j] = row[d + j] > top[j] ? row[d + j] : top[j];
  max = top[0];
  for (j = 1; j < TL_SOFTMAX_LANES; ++j) max = top[j] > max ? top[j] : max;
  for (d = full; d < depth; ++d) max = row[d] > max ? row[d] : max;
  if (log_output) {
    for (d = 0; d < full; d += TL_SOFTMAX_LANES)
      for (j = 0; j < TL_SOFTMAX_LANES; ++j) part[j] += tl_softmax_exp((row[d + j] - max) * beta);
    for (d = full; d < depth; ++d) total += tl_softmax_exp((row[d] - max) * beta);
  } else {
    for (d = 0; d < depth; ++d) out[d] = tl_softmax_exp((row[d] - max) * beta);
    for (d = 0; d < full; d += TL_SOFTMAX_LANES)
      for (j = 0; j < TL_SOFTMAX_LANES; ++j) part[j] += out[d + j];
    for (d = full; d < depth; ++d) total += out[d];
  }
  for (j = 0; j < TL_SOFTMAX_LANES; ++j) total += part[j];
  if (log_output) {
    const float log_total = logf(total);
    for (d = 0; d < depth; ++d) out[d] = (row[d] - max) * beta - log_total;
  } else {
    for (d = 0; d < depth; ++d) out[d] /= total;
  }
}
#endif

/* float softmax along one axis; contiguous rows by tl_softmax_row_f32 on 64-bit hosts */
static inline void tl_softmax_f32(const float *x, float *y, int32_t outer, int32_t depth, int32_t inner, float beta,
                                  int32_t log_output) {
  int32_t o, d, i;
#if TL_VECTOR_EXP
  if (inner == 1) {
    for (o = 0; o < outer; ++o) tl_softmax_row_f32(x + o * depth, y + o * depth, depth, beta, log_output);
    return;
  }
#endif
  for (o = 0; o < outer; ++o)
    for (i = 0; i < inner; ++i) {
      const float *row = x + o * depth * inner + i;
      float *out = y + o * depth * inner + i;
      float top = row[0], total = 0.0f;
      for (d = 1; d < depth; ++d) top = row[d * inner] > top ? row[d * inner] : top;
      for (d = 0; d < depth; ++d) {
        const float e = tl_softmax_exp((row[d * inner] - top) * beta);
        if (!log_output) out[d * inner] = e;
        total += e;
      }
      if (log_output) {
        const float log_total = logf(total);
        for (d = 0; d < depth; ++d) out[d * inner] = (row[d * inner] - top) * beta - log_total;
      } else {
        for (d = 0; d < depth; ++d) out[d * inner] /= total;
      }
    }
}

static inline int32_t tl_wrap_add32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

static inline int32_t tl_saturate32(int64_t x) {
  return x > TL_INT32_MAX ? TL_INT32_MAX : (x < TL_INT32_MIN ? TL_INT32_MIN : (int32_t)x);
}

/* gemmlowp's one_over_one_plus_x_for_x_in_0_1 on Q0.31 values (three Newton-Raphson steps) */
static inline int32_t tl_one_over_one_plus_x(int32_t a) {
  int64_t total = (int64_t)a + TL_INT32_MAX;
  int32_t half, x;
  int step;
  total += total >= 0 ? 1 : -1;
  half = (int32_t)(total >= 0 ? total >> 1 : -((-total) >> 1));
  x = tl_wrap_add32(1515870810, tl_srdhm(half, -1010580540));
  for (step = 0; step < 3; ++step) {
    const int32_t residual = tl_wrap_add32(1 << 29, -tl_srdhm(half, x));
    x = tl_wrap_add32(x, tl_saturate32((int64_t)tl_srdhm(x, residual) * 4));
  }
  return tl_saturate32((int64_t)x * 2);
}

/* the reciprocal of a Q12.19 sum and the exponent that brings exp * reciprocal to `out_bits` */
static inline int32_t tl_softmax_scale(int32_t sum, int32_t out_bits, int32_t *exponent) {
  uint32_t value = (uint32_t)sum;
  int32_t headroom = 0;
  if (value == 0) headroom = 32;
  else
    while (!(value & 0x80000000u)) {
      value <<= 1;
      ++headroom;
    }
  *exponent = (12 - headroom) + 31 - out_bits;
  return tl_one_over_one_plus_x((int32_t)(value - 0x80000000u));
}

/* The largest value of an 8-bit row. On cores with the DSP extension four lanes a step: SSUB8
 * (USUB8) sets a GE flag per byte where the new word's is at least the best so far, SEL keeps
 * those bytes; the four lanes are compared at the end. */
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
#define TL_ROW_MAX8(name, type, subtract)                                                                      \
  static inline int32_t name(const type *row, int32_t depth) {                                                \
    int32_t d = 0, top = row[0], lane;                                                                        \
    if (depth >= 8) {                                                                                         \
      uint32_t best, next, flags;                                                                             \
      memcpy(&best, row, 4);                                                                                  \
      for (d = 4; d + 4 <= depth; d += 4) {                                                                   \
        memcpy(&next, row + d, 4);                                                                            \
        __asm__(subtract " %0, %2, %1\n\tsel %1, %2, %1" : "=&r"(flags), "+r"(best) : "r"(next) : "cc");      \
        (void)flags;                                                                                          \
      }                                                                                                       \
      for (lane = 0; lane < 32; lane += 8) top = (type)(best >> lane) > top ? (type)(best >> lane) : top;     \
    }                                                                                                         \
    for (; d < depth; ++d) top = row[d] > top ? row[d] : top;                                                 \
    return top;                                                                                               \
  }
#else
#define TL_ROW_MAX8(name, type, subtract)                                                                      \
  static inline int32_t name(const type *row, int32_t depth) {                                                \
    int32_t d, top = row[0];                                                                                  \
    for (d = 1; d < depth; ++d) top = row[d] > top ? row[d] : top;                                            \
    return top;                                                                                               \
  }
#endif
TL_ROW_MAX8(tl_row_max_s8, int8_t, "ssub8")
TL_ROW_MAX8(tl_row_max_u8, uint8_t, "usub8")

#define TL_SOFTMAX_Q(name, in_type, out_type, out_bits, out_low, out_high, row_max)                           \
  static inline int name(const in_type *x, out_type *y, int32_t rows, int32_t depth, const int32_t *exp_table, \
                         const int32_t *sum_table) {                                                          \
    int32_t r, d;                                                                                             \
    for (r = 0; r < rows; ++r) {                                                                              \
      const in_type *row = x + r * depth;                                                                     \
      out_type *out = y + r * depth;                                                                          \
      const int32_t top = row_max(row, depth);                                                                \
      int32_t sum = 0, exponent, reciprocal;                                                                  \
      for (d = 0; d < depth; ++d) sum = tl_wrap_add32(sum, TL_READ_S32(sum_table + row[d] - top + 255));      \
      reciprocal = tl_softmax_scale(sum, out_bits, &exponent);                                                \
      if (exponent < 0 || exponent > 31) return 1;                                                            \
      for (d = 0; d < depth; ++d) {                                                                           \
        const int32_t scaled = tl_mbqm(TL_READ_S32(exp_table + row[d] - top + 255), reciprocal, -exponent);   \
        out[d] = (out_type)tl_clamp_i32(scaled + (out_low), out_low, out_high);                               \
      }                                                                                                       \
    }                                                                                                         \
    return 0;                                                                                                 \
  }

TL_SOFTMAX_Q(tl_softmax_s8_s8, int8_t, int8_t, 8, -128, 127, tl_row_max_s8)
TL_SOFTMAX_Q(tl_softmax_s8_s16, int8_t, int16_t, 16, -32768, 32767, tl_row_max_s8)
TL_SOFTMAX_Q(tl_softmax_u8_u8, uint8_t, uint8_t, 8, 0, 255, tl_row_max_u8)

static inline int32_t tl_clz32(uint32_t value) {
  int32_t count = 0;
  if (value == 0) return 32;
  while (!(value & 0x80000000u)) {
    value <<= 1;
    ++count;
  }
  return count;
}

static inline int32_t tl_saturating_shift(int64_t x, int exponent) {
  return tl_saturate32(x * ((int64_t)1 << exponent));
}

/* gemmlowp's log_x_for_x_greater_than_or_equal_to_1 on a Q12.19 value, in Q5.26 */
static inline int32_t tl_log_q12_to_q5(int32_t z_a) {
  const int accum = 6, input_bits = 12;
  const int32_t log_2 = 1488522236, sqrt_sqrt_half = 1805811301, sqrt_half = 1518500250;
  const int32_t alpha_n = 117049297, alpha_d = 127690142, alpha_i = 1057819769, alpha_f = 638450708;
  const int32_t quarter = tl_rdbpot(536870912, accum);
  const int32_t headroom_a = tl_clz32((uint32_t)z_a);
  const int32_t r_a = tl_saturating_shift(tl_srdhm(tl_saturating_shift(z_a, headroom_a - 1), sqrt_half), 1);
  const int32_t adjust_a = tl_saturate32((int64_t)tl_saturating_shift(input_bits - headroom_a, 31 - accum) + quarter);
  const int32_t headroom_b = tl_clz32((uint32_t)tl_srdhm(z_a, sqrt_half)) - 1;
  const int32_t r_b = tl_saturating_shift(z_a, headroom_b);
  const int32_t adjust_b = tl_saturate32((int64_t)tl_saturating_shift(input_bits - headroom_b, 31 - accum) - quarter);
  const int32_t r = r_a < r_b ? r_a : r_b, adjust = adjust_a > adjust_b ? adjust_a : adjust_b;
  int64_t half_sum = (int64_t)r + sqrt_sqrt_half;
  int32_t p, q, common_sq, num, inner, denom_minus_one, total;
  half_sum += half_sum >= 0 ? 1 : -1;
  p = (int32_t)(half_sum >= 0 ? half_sum >> 1 : -((-half_sum) >> 1));
  q = tl_wrap_add32(r, -sqrt_sqrt_half);
  q = tl_wrap_add32(q, q);
  common_sq = tl_srdhm(q, q);
  num = tl_wrap_add32(tl_srdhm(q, r), tl_srdhm(tl_srdhm(q, common_sq), alpha_n));
  inner = tl_wrap_add32(tl_wrap_add32(alpha_i, q), tl_srdhm(alpha_d, common_sq));
  denom_minus_one = tl_wrap_add32(tl_srdhm(p, inner), tl_srdhm(alpha_f, q));
  total = tl_wrap_add32(tl_srdhm(adjust, log_2), tl_srdhm(tl_rdbpot(num, accum), tl_one_over_one_plus_x(denom_minus_one)));
  return tl_saturating_shift(total, 1);
}

/* TFLite's int8 LOG_SOFTMAX over rows: `q5` and `exps` hold, for each difference to the row
 * maximum (index difference + 255), its Q5.26 value and exp in Q12.19 (0 below diff_min) */
static inline void tl_log_softmax_s8(const int8_t *x, int8_t *y, int32_t rows, int32_t depth, const int32_t *q5,
                                     const int32_t *exps, int32_t diff_min, int32_t reverse_multiplier,
                                     int reverse_shift) {
  int32_t r, d;
  for (r = 0; r < rows; ++r) {
    const int8_t *row = x + r * depth;
    int32_t top = row[0], sum = 0, log_sum, adjusted_min;
    for (d = 1; d < depth; ++d) top = row[d] > top ? row[d] : top;
    for (d = 0; d < depth; ++d) sum = tl_wrap_add32(sum, TL_READ_S32(exps + row[d] - top + 255));
    log_sum = tl_log_q12_to_q5(sum);
    adjusted_min = tl_mbqm(tl_wrap_add32(log_sum, TL_INT32_MIN), reverse_multiplier, reverse_shift);
    if (adjusted_min < diff_min - 1) adjusted_min = diff_min - 1;
    for (d = 0; d < depth; ++d) {
      const int32_t diff = row[d] - top;
      const int32_t value = tl_rdbpot(tl_wrap_add32(TL_READ_S32(q5 + diff + 255), -log_sum), 22) + 127;
      y[r * depth + d] = (int8_t)(diff > adjusted_min ? tl_clamp_i32(value, -128, 127) : -128);
    }
  }
}

/* TFLite's LUTLookup: a 513-entry int16 table interpolated linearly (128 steps between entries) */
static inline int16_t tl_lut_s16(int32_t value, const int16_t *lut) {
  const int32_t index = 256 + (value >> 7), base = TL_READ_S16(lut + index);
  const int32_t slope = (int16_t)(uint16_t)(TL_READ_S16(lut + index + 1) - base);
  return (int16_t)(uint16_t)(base + ((slope * (value & 0x7F) + 64) >> 7));
}

/* TFLite's int16 SOFTMAX over rows (zero points 0, output scale 1/32768); `y` holds the exps
 * until the reciprocal of their sum is known */
static inline void tl_softmax_s16(const int16_t *x, int16_t *y, int32_t rows, int32_t depth, int32_t multiplier,
                                  int shift, const int16_t *exp_lut, const int16_t *reciprocal_lut) {
  int32_t r, d;
  for (r = 0; r < rows; ++r) {
    const int16_t *row = x + r * depth;
    int16_t *out = y + r * depth;
    int32_t top = row[0], sum = 0, headroom, shifted, reciprocal, right;
    for (d = 1; d < depth; ++d) top = row[d] > top ? row[d] : top;
    for (d = 0; d < depth; ++d) {
      const int32_t scaled = tl_mbqm(row[d] - top, multiplier, shift);
      out[d] = tl_lut_s16(tl_clamp_i32(scaled + 32767, -32768, 32767), exp_lut);
      sum += out[d];
    }
    headroom = tl_clz32((uint32_t)sum);
    shifted = (int32_t)((((int64_t)sum << (headroom - 1)) + (1 << 13)) >> 14);
    reciprocal = tl_lut_s16(tl_clamp_i32(shifted - (1 << 15) - (1 << 16), -32768, 32767), reciprocal_lut);
    right = 31 - headroom;
    for (d = 0; d < depth; ++d) {
      const int64_t product = (int64_t)out[d] * reciprocal + ((int64_t)1 << (right - 1));
      out[d] = (int16_t)tl_clamp_i32((int32_t)(product >> right), 0, 32767);
    }
  }
}

#endif /* TL_SOFTMAX_H */
