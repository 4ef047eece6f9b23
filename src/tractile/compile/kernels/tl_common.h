/* tl_common.h: what every tractile kernel shares.
 *
 * Integer arithmetic follows TFLite's reference kernels (MultiplyByQuantizedMultiplier with
 * gemmlowp's rounding): the same recipe the interpreter runs in NumPy
 * (tractile/ops/quantized/fixedpoint.py). The code assumes two's complement integers and an
 * arithmetic right shift of negative values, as gcc and clang give on every target.
 *
 * Constant arrays (weights, biases, multipliers, tables) are declared TL_CONST and read
 * through TL_READ_*: on AVR (TL_PROGMEM defined) they live in program memory. */
#ifndef TL_COMMON_H
#define TL_COMMON_H

#include <stdint.h>

#ifdef TL_PROGMEM
#include <avr/pgmspace.h>
#define TL_CONST PROGMEM
#define TL_READ_S8(p) ((int8_t)pgm_read_byte(p))
#define TL_READ_U8(p) ((uint8_t)pgm_read_byte(p))
#define TL_READ_S16(p) ((int16_t)pgm_read_word(p))
#define TL_READ_S32(p) ((int32_t)pgm_read_dword(p))
#define TL_READ_F32(p) (pgm_read_float(p))
static inline int64_t tl_read_s64(const int64_t *p) {
  int64_t value;
  memcpy_P(&value, p, sizeof value);
  return value;
}
#define TL_READ_S64(p) tl_read_s64(p)
#else
#define TL_CONST
#define TL_READ_S8(p) (*(p))
#define TL_READ_U8(p) (*(p))
#define TL_READ_S16(p) (*(p))
#define TL_READ_S32(p) (*(p))
#define TL_READ_F32(p) (*(p))
#define TL_READ_S64(p) (*(p))
#endif

/* avr-libc has no expm1f or log1pf (and its float is its double); the element-wise C
 * expressions of the ops (their c_expression) use these */
#ifdef __AVR__
#define TL_EXPM1F(x) (expf(x) - 1.0f)
#define TL_LOG1PF(x) logf(1.0f + (x))
#else
#define TL_EXPM1F(x) expm1f(x)
#define TL_LOG1PF(x) log1pf(x)
#endif

/* per-node timing of profiling builds (-DTL_PROFILE): ctx->profile_ticks[node] accumulates the
 * ticks of TL_PROFILE_CLOCK(), a uint64_t clock: nanoseconds of the POSIX monotonic clock by
 * default (tractile profile --compiled), or a device timer a firmware defines */
#ifdef TL_PROFILE
#ifdef TL_PROFILE_CLOCK
uint64_t TL_PROFILE_CLOCK(void);
#else
#include <time.h>
static inline uint64_t tl_profile_clock(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
#define TL_PROFILE_CLOCK tl_profile_clock
#endif
#define TL_PROFILE_START uint64_t tl_profile_mark = TL_PROFILE_CLOCK()
#define TL_PROFILE_MARK(ctx, node)                                    \
  do {                                                                \
    const uint64_t tl_profile_now = TL_PROFILE_CLOCK();               \
    (ctx)->profile_ticks[node] += tl_profile_now - tl_profile_mark;   \
    tl_profile_mark = tl_profile_now;                                 \
  } while (0)
#endif

#if defined(__GNUC__)
#define TL_LIKELY(c) __builtin_expect(!!(c), 1)
#else
#define TL_LIKELY(c) (c)
#endif

#define TL_INT32_MIN (-2147483647 - 1)
#define TL_INT32_MAX 2147483647

static inline int32_t tl_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t tl_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t tl_clamp_i32(int32_t x, int32_t low, int32_t high) {
  return x < low ? low : (x > high ? high : x);
}
/* clamps that keep NaN (as NumPy's maximum/minimum do) */
static inline float tl_clamp_f32(float x, float low, float high) {
  if (x < low) return low;
  if (x > high) return high;
  return x;
}

/* gemmlowp's SaturatingRoundingDoublingHighMul */
static inline int32_t tl_srdhm(int32_t a, int32_t b) {
  int64_t ab;
  int64_t nudge;
  if (a == TL_INT32_MIN && b == TL_INT32_MIN) return TL_INT32_MAX;
  ab = (int64_t)a * (int64_t)b;
  nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
  return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp's RoundingDivideByPOT: x / 2^exponent, halves away from zero */
static inline int32_t tl_rdbpot(int32_t x, int exponent) {
  const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* TFLite's MultiplyByQuantizedMultiplier: x * multiplier * 2^(shift - 31), double rounding.
 * A quantized multiplier is never INT32_MIN (it lies in [2^30, 2^31) or is 0), so the doubling
 * high product needs no saturation and is floor((x * m + 2^30) / 2^31), which equals gemmlowp's
 * nudged truncation; the divide by 2^right rounds halves away from zero as RoundingDivideByPOT. */
static inline int32_t tl_mbqm_portable(int32_t x, int32_t multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  const int64_t product = (int64_t)(int32_t)((uint32_t)x << left) * multiplier + ((int64_t)1 << 30);
  const int32_t high = (int32_t)(product >> 31);
  if (!right) return high;
  return (int32_t)(((int64_t)high + ((int64_t)1 << (right - 1)) - (high < 0)) >> right);
}

/* The same result in one 32x32->64 multiply-accumulate (SMLAL) and three 32-bit operations when
 * the right shift r = -shift is at least 2 (the usual case): with h = floor((x * m + 2^30) / 2^31),
 * RoundingDivideByPOT(h, r) = ((h' >> (r - 1)) + 1) >> 1 with h' = h - (h < 0), and
 * h' >> (r - 1) = floor((x * m + n) / 2^(30 + r)) with the nudge n = -2^30 for a negative x,
 * +2^30 otherwise (they differ from h' only where h' is 0 or -1, which round to the same 0):
 * the high word of the 64-bit sum shifted right by r - 2. Other shifts take the portable recipe.
 * tests/compile/test_requantize.py checks it against tl_mbqm_portable. */
static inline int32_t tl_mbqm_smlal(int32_t x, int32_t multiplier, int shift) {
  if (TL_LIKELY(shift <= -2)) {
#if defined(__ARM_FEATURE_DSP)
    /* the nudge's low word 2^30 or 2^31 + 2^30 (-2^30), its high word 0 or -1, as one SMLAL wants them */
    int32_t low = (int32_t)(((uint32_t)x & 0x80000000u) | 0x40000000u), top = x >> 31;
    __asm__("smlal %0, %1, %2, %3" : "+r"(low), "+r"(top) : "r"(x), "r"(multiplier));
    (void)low;
#else
    const int64_t nudge = (int64_t)(x >> 31) * ((int64_t)1 << 31) + ((int64_t)1 << 30);
    const int32_t top = (int32_t)(((int64_t)x * multiplier + nudge) >> 32);
#endif
    return ((top >> (-shift - 2)) + 1) >> 1;
  }
  return tl_mbqm_portable(x, multiplier, shift);
}

/* the requantization every integer kernel calls: SMLAL's on cores with the DSP extension
 * (Cortex-M4/M7), the portable recipe elsewhere */
static inline int32_t tl_mbqm(int32_t x, int32_t multiplier, int shift) {
#if defined(__ARM_FEATURE_DSP)
  return tl_mbqm_smlal(x, multiplier, shift);
#else
  return tl_mbqm_portable(x, multiplier, shift);
#endif
}

#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
/* Cortex-M4/M7 (ARMv7E-M DSP extension): helpers of the int8 multiply-accumulate kernels */
#include <arm_acle.h>
#include <string.h>
#define TL_ROR8(v) (((v) >> 8) | ((v) << 24))
/* a word of four int8 values (any alignment: ARMv7E-M loads unaligned words) */
static inline uint32_t tl_load_word(const int8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
/* bytes 1 and 3 sign-extended into two halfwords: one SXTB16 with its rotation (the intrinsic
 * __sxtb16(TL_ROR8(v)) costs a separate rotate) */
static inline uint32_t tl_sxtb16_odd(uint32_t v) {
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
/* clamp(v, low, high) of an int8 output: one SSAT when the range is int8's (the kernels are
 * inlined with constant ranges, so the tests fold away) */
static inline int32_t tl_clamp_s8(int32_t v, int32_t low, int32_t high) {
  v = __ssat(v, 8);
  if (low != -128 && v < low) v = low;
  if (high != 127 && v > high) v = high;
  return v;
}
/* four products of one word of inputs by one word of weights, lane by lane, into four
 * accumulators: bytes 0 and 2 through SXTB16, 1 and 3 through its rotated form (SMLABB, SMLATT) */
#define TL_MAC4_S8(xv, wv, s0, s1, s2, s3)                  \
  do {                                                      \
    const uint32_t tl_xe = __sxtb16(xv), tl_xo = tl_sxtb16_odd(xv); \
    const uint32_t tl_we = __sxtb16(wv), tl_wo = tl_sxtb16_odd(wv); \
    s0 = __smlabb(tl_xe, tl_we, s0);                        \
    s2 = __smlatt(tl_xe, tl_we, s2);                        \
    s1 = __smlabb(tl_xo, tl_wo, s1);                        \
    s3 = __smlatt(tl_xo, tl_wo, s3);                        \
  } while (0)
#endif

/* the 64-bit accumulator variant of the 16x8 kernels: a 16-bit reduced multiplier, one rounding */
static inline int32_t tl_mbqm64(int64_t x, int32_t multiplier, int shift) {
  const int32_t reduced = multiplier < 0x7FFF0000 ? ((multiplier + (1 << 15)) >> 16) : 0x7FFF;
  const int total = 15 - shift;
  const int64_t rounded = x * (int64_t)reduced + ((int64_t)1 << (total - 1));
  return (int32_t)(uint32_t)(uint64_t)(rounded >> total);
}

/* C's round() of a double (halves away from zero) without math.h: adding the largest double
 * below 0.5 before truncating is exact for every double */
static inline int64_t tl_round_half_away(double x) {
  return (int64_t)(x + (x >= 0 ? 0.49999999999999994 : -0.49999999999999994));
}

#endif /* TL_COMMON_H */
