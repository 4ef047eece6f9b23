/* tl_common.h: what every tractile kernel shares.
 *
 * Integer arithmetic follows TFLite's reference kernels (MultiplyByQuantizedMultiplier with
 * gemmlowp's rounding): the same recipe the interpreter runs in NumPy
 * (tractile/ops/tfl/fixedpoint.py). The code assumes two's complement integers and an
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
static inline int32_t tl_mbqm(int32_t x, int32_t multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  const int64_t product = (int64_t)(int32_t)((uint32_t)x << left) * multiplier + ((int64_t)1 << 30);
  const int32_t high = (int32_t)(product >> 31);
  if (!right) return high;
  return (int32_t)(((int64_t)high + ((int64_t)1 << (right - 1)) - (high < 0)) >> right);
}

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
