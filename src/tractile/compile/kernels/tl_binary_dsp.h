/* tl_binary_dsp.h: TFLite's int8 ADD, SUB and MUL on cores with the Armv7E-M DSP extension
 * (Cortex-M4/M7), written into each layer's code with its constants (ops/binary_dsp.py).
 *
 * ADD/SUB: each input's rescaling, MultiplyByQuantizedMultiplier((v - zero) << 20, m, s), has
 * 256 possible results; the host computes them with the interpreter's recipe, doubled (and
 * negated for SUB's second input), into a table per input. MUL: twice the product of the offset
 * inputs. Either way the element is acc = 2x for TFLite's accumulator x (|x| < 2^30), and the
 * output requantization MultiplyByQuantizedMultiplier(x, m, -r) + zero is tl_requant_doubled's
 * (tl_conv_dsp.h): one SMMLAR over Ra = K - (x < 0), K = 2^(r-1) + zero * 2^r, then an
 * arithmetic shift by r, which SSAT takes as its operand's shift (r = 0: Ra = zero, no sign
 * term). The layer's m, K and r are literals of the generated code; four outputs are packed into
 * a word (BFI), clamped to a fused activation's range by SSUB8/SEL, and stored at once. */
#ifndef TL_BINARY_DSP_H
#define TL_BINARY_DSP_H

#include <stdint.h>
#include <string.h>

#if defined(__ARM_FEATURE_DSP)
/* v = SSAT8((high word of acc * m + (K + (acc >> 31)) * 2^32 + 2^31) >> r); r a literal 1..31 */
#define TL_RQ8(v, acc, m, k, r)                                                            \
  do {                                                                                     \
    int32_t tl_ra;                                                                         \
    __asm__("add %[ra], %[kk], %[a], asr #31\n\t"                                          \
            "smmlar %[out], %[a], %[mm], %[ra]\n\t"                                        \
            "ssat %[out], #8, %[out], asr #" #r                                            \
            : [out] "=&r"(v), [ra] "=&r"(tl_ra) : [a] "r"(acc), [mm] "r"(m), [kk] "r"(k)); \
  } while (0)
/* the same for r = 0: Ra = the zero point, no shift */
#define TL_RQ8_NOSHIFT(v, acc, m, k)                                                            \
  __asm__("smmlar %[out], %[a], %[mm], %[kk]\n\tssat %[out], #8, %[out]"                       \
          : [out] "=&r"(v) : [a] "r"(acc), [mm] "r"(m), [kk] "r"(k))
/* the same for acc clamped below at 0 (a lower bound at the output zero point: ReLU, RELU6). The
 * requantization is monotone and maps 0 to the zero point, so clamping acc to [0, 2^31) first
 * clamps the output at the zero point; with acc >= 0 the sign term is gone and Ra = K. */
#define TL_RQ8_RELU(v, acc, m, k, r)                                                          \
  do {                                                                                       \
    int32_t tl_p;                                                                            \
    __asm__("usat %[p], #31, %[a]\n\t"                                                       \
            "smmlar %[out], %[p], %[mm], %[kk]\n\t"                                          \
            "ssat %[out], #8, %[out], asr #" #r                                              \
            : [out] "=&r"(v), [p] "=&r"(tl_p) : [a] "r"(acc), [mm] "r"(m), [kk] "r"(k));    \
  } while (0)
#define TL_RQ8_RELU_NOSHIFT(v, acc, m, k)                                                    \
  do {                                                                                      \
    int32_t tl_p;                                                                           \
    __asm__("usat %[p], #31, %[a]\n\tsmmlar %[out], %[p], %[mm], %[kk]\n\tssat %[out], #8, %[out]" \
            : [out] "=&r"(v), [p] "=&r"(tl_p) : [a] "r"(acc), [mm] "r"(m), [kk] "r"(k));   \
  } while (0)
/* per byte: w += c (modulo 256; the bytes' true values fit in int8) */
#define TL_ADD4_S8(w, c) __asm__("uadd8 %0, %0, %1" : "+r"(w) : "r"(c) : "cc")
/* an int8 value (the low byte of v) into byte pos / 8 of w: four outputs packed as they come,
 * one live at a time */
#define TL_BFI8(w, v, pos) __asm__("bfi %0, %1, #" #pos ", #8" : "+r"(w) : "r"(v))
/* per byte: w = max(w, low) and w = min(w, high), the bounds repeated in each byte */
#define TL_MAX4_S8(w, low)                                                                  \
  do {                                                                                      \
    uint32_t tl_t;                                                                          \
    __asm__("ssub8 %1, %0, %2\n\tsel %0, %0, %2" : "+r"(w), "=&r"(tl_t) : "r"(low) : "cc"); \
  } while (0)
#define TL_MIN4_S8(w, high)                                                                  \
  do {                                                                                       \
    uint32_t tl_t;                                                                           \
    __asm__("ssub8 %1, %2, %0\n\tsel %0, %0, %2" : "+r"(w), "=&r"(tl_t) : "r"(high) : "cc"); \
  } while (0)
/* halfwords z + the bytes 0 and 2 of w (rot 0) or 1 and 3 (rot 8), sign-extended */
static inline uint32_t tl_sxtab16(uint32_t z, uint32_t w, int rot) {
  uint32_t d;
  if (rot)
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(d) : "r"(z), "r"(w));
  else
    __asm__("sxtab16 %0, %1, %2" : "=r"(d) : "r"(z), "r"(w));
  return d;
}
static inline uint32_t tl_sadd16(uint32_t x, uint32_t y) {
  uint32_t d;
  __asm__("sadd16 %0, %1, %2" : "=r"(d) : "r"(x), "r"(y) : "cc");
  return d;
}
static inline int32_t tl_smulbb(uint32_t x, uint32_t y) {
  int32_t d;
  __asm__("smulbb %0, %1, %2" : "=r"(d) : "r"(x), "r"(y));
  return d;
}
static inline int32_t tl_smultt(uint32_t x, uint32_t y) {
  int32_t d;
  __asm__("smultt %0, %1, %2" : "=r"(d) : "r"(x), "r"(y));
  return d;
}
#else
/* the same results in C (tests on other hosts) */
static inline uint32_t tl_halves(int32_t lo, int32_t hi) { return (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16; }
static inline uint32_t tl_sxtab16(uint32_t z, uint32_t w, int rot) {
  return tl_halves((int16_t)z + (int8_t)(w >> rot), (int16_t)(z >> 16) + (int8_t)(w >> (rot + 16)));
}
static inline uint32_t tl_sadd16(uint32_t x, uint32_t y) {
  return tl_halves((int16_t)x + (int16_t)y, (int16_t)(x >> 16) + (int16_t)(y >> 16));
}
static inline int32_t tl_smulbb(uint32_t x, uint32_t y) { return (int32_t)(int16_t)x * (int16_t)y; }
static inline int32_t tl_smultt(uint32_t x, uint32_t y) { return (int32_t)(int16_t)(x >> 16) * (int16_t)(y >> 16); }
static inline int32_t tl_sat_s8(int32_t v) { return v < -128 ? -128 : (v > 127 ? 127 : v); }
#define TL_SMMLAR_C(a, b, c) \
  ((int32_t)(((int64_t)(c) * ((int64_t)1 << 32) + (int64_t)(a) * (int64_t)(b) + ((int64_t)1 << 31)) >> 32))
#define TL_RQ8(v, acc, m, k, r) ((v) = tl_sat_s8(TL_SMMLAR_C(acc, m, ((acc) >> 31) + (k)) >> (r)))
#define TL_RQ8_NOSHIFT(v, acc, m, k) ((v) = tl_sat_s8(TL_SMMLAR_C(acc, m, k)))
#define TL_RQ8_RELU(v, acc, m, k, r) TL_RQ8(v, ((acc) < 0 ? 0 : (acc)), m, k, r)
#define TL_RQ8_RELU_NOSHIFT(v, acc, m, k) TL_RQ8_NOSHIFT(v, ((acc) < 0 ? 0 : (acc)), m, k)
#define TL_ADD4_S8(w, c) ((w) = tl_add4_s8(w, c))
#define TL_BFI8(w, v, pos) ((w) = ((w) & ~(0xFFu << (pos))) | ((uint32_t)(v) & 0xFFu) << (pos))
static inline uint32_t tl_bytes4(uint32_t w, uint32_t bound, int max) {
  uint32_t out = 0;
  for (int i = 0; i < 32; i += 8) {
    const int8_t x = (int8_t)(w >> i), b = (int8_t)(bound >> i);
    out |= (uint32_t)(uint8_t)((max ? x > b : x < b) ? x : b) << i;
  }
  return out;
}
static inline uint32_t tl_add4_s8(uint32_t w, uint32_t c) {
  return ((w & 0x7F7F7F7Fu) + (c & 0x7F7F7F7Fu)) ^ ((w ^ c) & 0x80808080u);
}
#define TL_MAX4_S8(w, low) ((w) = tl_bytes4(w, low, 1))
#define TL_MIN4_S8(w, high) ((w) = tl_bytes4(w, high, 0))
#endif

/* one int8 output from acc = 2x, clamped to [low, high] (the elements past the last word) */
static inline int8_t tl_out_s8(int32_t v, int32_t low, int32_t high) {
  return (int8_t)(v < low ? low : (v > high ? high : v));
}

#endif /* TL_BINARY_DSP_H */
