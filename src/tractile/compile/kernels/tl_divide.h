/* tl_divide.h: TFLite's quantized DIV on 8-bit values (reference_ops::Div with the fixed-point
 * reciprocal): the divisor's reciprocal and its shift come from tables the host fills with the
 * interpreter's GetReciprocal (tractile/ops/quantized/functions.py), one entry per divisor
 * magnitude; a right shift past 31 bits behaves as the x86 build of TFLite's kernel does, as
 * the interpreter's (tractile/ops/quantized/binary.py divide_by_pot_as_compiled). */
#ifndef TL_DIVIDE_H
#define TL_DIVIDE_H

#include "tl_common.h"

/* gemmlowp's SaturatingRoundingDoublingHighMul, its one overflow saturated */
static inline int32_t tl_div_srdhm(int32_t a, int32_t b) {
  const int64_t high = ((int64_t)a * b + ((int64_t)1 << 30)) >> 31;
  return high > INT32_MAX ? INT32_MAX : (int32_t)high;
}

/* CountLeadingSignBits (31 for 0 and -1) */
static inline int32_t tl_div_sign_bits(int32_t x) {
  uint32_t magnitude = x >= 0 ? (uint32_t)x : ~(uint32_t)x;
  int32_t bits = 0;
  while (magnitude) {
    ++bits;
    magnitude >>= 1;
  }
  return 31 - bits;
}

static inline int32_t tl_div_rounding_shift(int32_t x, int32_t exponent) {
  if (exponent > 31) return (x >> (exponent & 31)) + (x >= 0);
  if (exponent <= 0) return x;
  return (int32_t)(((int64_t)x + ((int64_t)1 << (exponent - 1)) + (x < 0 ? -1 : 0)) >> exponent);
}

/* num and den: the offset operands; recips and shifts indexed by |den| */
static inline int32_t tl_quantized_div(int32_t num, int32_t den, const int32_t *recips, const int32_t *shifts,
                                       int32_t multiplier, int32_t shift, int32_t zero, int32_t low, int32_t high) {
  int32_t headroom, unscaled, total_shift;
  if (den < 0) {
    num = -num;
    den = -den;
  }
  headroom = tl_div_sign_bits(num);
  unscaled = tl_div_srdhm((int32_t)((uint32_t)num << headroom), TL_READ_S32(recips + den));
  total_shift = shift - TL_READ_S32(shifts + den) - headroom;
  return tl_clamp_i32(tl_div_rounding_shift(tl_div_srdhm(unscaled, multiplier), -total_shift) + zero, low, high);
}

#endif /* TL_DIVIDE_H */
