/* tl_recurrent.h: gemmlowp's fixed-point logistic and tanh on 16-bit values, as TFLite's
 * integer LSTM applies them to its Q3.12 gates and its cell state (the interpreter's
 * FixedPoint(16) in tractile/ops/tfl/fixedpoint.py). Values are int16 held in int32_t;
 * "Qn" is a value with n integer bits and 15 - n fraction bits. The constants are gemmlowp's
 * 32-bit ones rescaled to 16 bits (rounded, halves away from zero). */
#ifndef TL_RECURRENT_H
#define TL_RECURRENT_H

#include "tl_common.h"

static inline int32_t tl_wrap16(int32_t x) { return (int32_t)(int16_t)(uint16_t)(uint32_t)x; }
static inline int32_t tl_sat16(int32_t x) { return tl_clamp_i32(x, -32768, 32767); }

/* SaturatingRoundingDoublingHighMul on int16 */
static inline int32_t tl_mul16(int32_t a, int32_t b) {
  const int32_t high = (a * b + (1 << 14)) >> 15;
  return high > 32767 ? 32767 : high;
}

/* SaturatingRoundingMultiplyByPOT: left shifts saturate, right shifts round */
static inline int32_t tl_pot16(int32_t x, int exponent) {
  if (exponent > 0) return tl_sat16(x * (1 << exponent));
  if (exponent < 0) return tl_rdbpot(x, -exponent);
  return x;
}

/* exp on [-1/4, 0), Q0 in and out */
static inline int32_t tl_exp_interval16(int32_t a) {
  const int32_t constant_term = 28918, one_third = 10923;
  const int32_t x = tl_wrap16(a + (1 << 12));
  const int32_t x2 = tl_mul16(x, x);
  const int32_t x3 = tl_mul16(x2, x);
  const int32_t x4 = tl_mul16(x2, x2);
  const int32_t inner = tl_wrap16(tl_mul16(tl_wrap16(tl_rdbpot(x4, 2) + x3), one_third) + x2);
  const int32_t term = tl_mul16(constant_term, tl_wrap16(x + tl_rdbpot(inner, 1)));
  return tl_sat16(constant_term + term);
}

/* exp(a) for a <= 0 in Q(integer_bits), result in Q0 */
static inline int32_t tl_exp_negative16(int32_t a, int integer_bits) {
  const int32_t barrel[7] = {25520, 19875, 12055, 4435, 600, 11, 0}; /* exp(-2^k), k = -2..4 */
  const int frac = 15 - integer_bits;
  const int32_t quarter = (int32_t)1 << (frac - 2);
  const int32_t mod_minus_quarter = tl_wrap16((a & (quarter - 1)) - quarter);
  const int32_t remainder = tl_wrap16(mod_minus_quarter - a);
  int32_t result = tl_exp_interval16(tl_pot16(mod_minus_quarter, integer_bits));
  int k;
  for (k = 0; k < 7 && k - 2 < integer_bits; ++k)
    if (remainder & ((int32_t)1 << (frac + k - 2))) result = tl_mul16(result, barrel[k]);
  if (integer_bits > 5 && a < tl_rdbpot(-((int32_t)1 << (36 - integer_bits)), 16)) result = 0;
  return a == 0 ? 32767 : result;
}

/* Newton-Raphson for 1 / (1 + a), a in [0, 1) in Q0; the result in Q2 */
static inline int32_t tl_reciprocal16(int32_t a) {
  int32_t total = a + 32767, half, x;
  int i;
  total += total >= 0 ? 1 : -1;
  half = total >= 0 ? total >> 1 : -((-total) >> 1);
  x = tl_wrap16(23130 + tl_mul16(half, -15420));
  for (i = 0; i < 3; ++i) {
    const int32_t residual = tl_wrap16((1 << 13) - tl_mul16(half, x));
    x = tl_wrap16(x + tl_pot16(tl_mul16(x, residual), 2));
  }
  return x;
}

/* logistic of a Q(integer_bits) value, in Q0 */
static inline int32_t tl_logistic16(int32_t a, int integer_bits) {
  const int32_t magnitude = a > 0 ? a : tl_wrap16(-a);
  const int32_t positive = tl_pot16(tl_reciprocal16(tl_exp_negative16(tl_wrap16(-magnitude), integer_bits)), 1);
  if (a == 0) return 16384;
  return a > 0 ? positive : tl_wrap16(32767 - positive);
}

/* tanh of a Q(integer_bits) value, in Q0 */
static inline int32_t tl_tanh16(int32_t a, int integer_bits) {
  const int32_t n = a < 0 ? a : tl_wrap16(-a);
  const int32_t t = tl_pot16(tl_wrap16(tl_reciprocal16(tl_exp_negative16(n, integer_bits + 1)) - (1 << 13)), 2);
  if (a == 0) return 0;
  return a < 0 ? tl_wrap16(-t) : t;
}

#endif /* TL_RECURRENT_H */
