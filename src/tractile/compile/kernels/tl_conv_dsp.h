/* tl_conv_dsp.h: int8 convolutions over weights the host repacked for the Cortex-M4/M7 (ARMv7E-M
 * DSP extension), where one SMLAD multiplies two pairs of int16 halves and adds both products:
 * the weights are stored as int16 pairs of two taps (or two depths) of the same output, so that
 * every SMLAD adds two products to one accumulator.
 *
 * - tl_dwconv3x3_s8_packed: 3x3 depthwise, one filter per channel (any stride). Four channels at
 *   a time; the input word of a tap is widened by SXTB16 (channels 0 and 2) and its rotated form
 *   (1 and 3), and PKHBT/PKHTB join the halves of two taps of one channel: taps (0,1), (2,3),
 *   (4,5), (6,7) by SMLAD, tap 8 by SMLABB/SMLATT. Weights per group of four channels: 16 pair
 *   words (per tap pair, channels 0..3) and two words of tap 8 ([c0 | c2], [c1 | c3]). Padding
 *   taps read the input zero point (their x + x_offset is 0).
 * - tl_dwconv3x3_s8_rows: the same with stride 1 or 2 and dilation 1 along the rows: three
 *   neighbouring outputs per pass (or two) over shared input columns; outputs at a border
 *   skip their padding taps over a bias computed on the host per kind of border window.
 * - tl_dwconv3x3_s8_single: 3x3, one input channel, any number of filters: the 9 inputs of a
 *   window as 5 pair words, each filter 5 SMLAD against its 5 pair words.
 * - tl_pointwise_s8_wide: 1x1 of depth 4, 8, 12 or 16: the pixel's inputs widened once, each
 *   output depth / 2 SMLAD against weights stored widened ([d0 | d2], [d1 | d3] per 4 depths).
 *
 * The bias holds the input offset folded in (bias + x_offset * sum of the weights), and bias and
 * weights are doubled for the requantization (tl_requant_doubled): every window, inside or at a
 * border, sums TFLite's terms exactly. Without the DSP extension the same code runs on portable
 * equivalents of the instructions (tested on the host). */
#ifndef TL_CONV_DSP_H
#define TL_CONV_DSP_H

#include <string.h>

#include "tl_common.h"
#include "tl_conv.h"

#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
#define TL_SXTB16(v) ((uint32_t)__sxtb16(v))
#define TL_SXTB16_ODD(v) tl_sxtb16_odd(v)
#define TL_SMLAD(a, b, s) ((int32_t)__smlad(a, b, s))
#define TL_SMLABB(a, b, s) ((int32_t)__smlabb(a, b, s))
#define TL_SMLATT(a, b, s) ((int32_t)__smlatt(a, b, s))
#define TL_SMLABT(a, b, s) ((int32_t)__smlabt(a, b, s))
#define TL_SMLATB(a, b, s) ((int32_t)__smlatb(a, b, s))
/* [bottom half of low | bottom half of high] and [top half of low | top half of high] */
static inline uint32_t tl_pkhbt(uint32_t low, uint32_t high) {
  uint32_t r;
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(low), "r"(high));
  return r;
}
static inline uint32_t tl_pkhtb(uint32_t high, uint32_t low) {
  uint32_t r;
  __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(high), "r"(low));
  return r;
}
#define TL_WORD(p) tl_load_word(p)
#else
static inline uint32_t tl_word_p(const int8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static inline int32_t tl_low_half(uint32_t v) { return (int32_t)(int16_t)(uint16_t)(v & 0xFFFFu); }
static inline int32_t tl_high_half(uint32_t v) { return (int32_t)(int16_t)(uint16_t)(v >> 16); }
static inline uint32_t tl_sxtb16_p(uint32_t v) {
  return (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)v | (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)(v >> 16) << 16;
}
static inline uint32_t tl_pkhbt(uint32_t low, uint32_t high) { return (low & 0xFFFFu) | (high << 16); }
static inline uint32_t tl_pkhtb(uint32_t high, uint32_t low) { return (high & 0xFFFF0000u) | (low >> 16); }
#define TL_SXTB16(v) tl_sxtb16_p(v)
#define TL_SXTB16_ODD(v) tl_sxtb16_p((uint32_t)(v) >> 8)
#define TL_SMLAD(a, b, s) ((s) + tl_low_half(a) * tl_low_half((uint32_t)(b)) + tl_high_half(a) * tl_high_half((uint32_t)(b)))
#define TL_SMLABB(a, b, s) ((s) + tl_low_half(a) * tl_low_half((uint32_t)(b)))
#define TL_SMLATT(a, b, s) ((s) + tl_high_half(a) * tl_high_half((uint32_t)(b)))
#define TL_SMLABT(a, b, s) ((s) + tl_low_half(a) * tl_high_half((uint32_t)(b)))
#define TL_SMLATB(a, b, s) ((s) + tl_high_half(a) * tl_low_half((uint32_t)(b)))
#define TL_WORD(p) tl_word_p(p)
#endif

/* a compiler barrier between tap pairs: without it gcc loads every tap and weight of a window
 * first and spills them to the stack */
#if defined(__GNUC__)
#define TL_TAP_ORDER() __asm__ __volatile__("" ::: "memory")
#define TL_INLINE __attribute__((always_inline)) inline
#else
#define TL_TAP_ORDER() ((void)0)
#define TL_INLINE inline
#endif
/* the kernels are inlined into every layer in speed builds, so that the layer's sizes, strides
 * and output range are constants (tap offsets become immediate offsets of the loads); size
 * builds (-Os) keep one copy */
#if defined(__OPTIMIZE_SIZE__)
#define TL_KERNEL static inline
#else
#define TL_KERNEL static TL_INLINE
#endif

/* TFLite's requantization of an accumulator x from acc = 2x (the host doubles the weights, int16
 * halves, and the bias, and proves |x| < 2^30): with the sign nudge n = 2^30 for x >= 0, -2^30
 * otherwise, MultiplyByQuantizedMultiplier(x, m, -r) + zero is
 * floor((x m + n + 2^(30+r)) / 2^(31+r)) + zero (tl_mbqm_smlal's derivation), and one SMMLAR
 * (the high word of Ra * 2^32 + 2x m + 2^31) with Ra = K - (x < 0) gives floor((x m + n) / 2^31) + K:
 * with K = 2^(r-1) + zero * 2^r, an arithmetic shift by r ends it. rq = {m, K, r}, r >= 1 and
 * |K| < 2^30. */
static TL_INLINE int32_t tl_requant_doubled(int32_t acc, const int32_t *rq) {
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
  int32_t top;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(top) : "r"(acc), "r"(rq[0]), "r"((acc >> 31) + rq[1]));
  return top >> rq[2];
#else
  const int64_t high = (int64_t)((acc >> 31) + rq[1]) * ((int64_t)1 << 32);
  const int32_t top = (int32_t)((high + (int64_t)acc * rq[0] + ((int64_t)1 << 31)) >> 32);
  return top >> rq[2];
#endif
}
/* The same without the sign term (Ra = K for x < 0 too), for outputs whose lower bound is at least
 * the zero point: for x < 0 (m >= 0, as TFLite's multipliers are) both forms give at most `zero`
 * (the top word is then at most K, and K >> r is `zero`), so both clamp to the bound. */
static TL_INLINE int32_t tl_requant_doubled_clamped(int32_t acc, const int32_t *rq) {
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
  int32_t top;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(top) : "r"(acc), "r"(rq[0]), "r"(rq[1]));
  return top >> rq[2];
#else
  const int64_t high = (int64_t)rq[1] * ((int64_t)1 << 32);
  const int32_t top = (int32_t)((high + (int64_t)acc * rq[0] + ((int64_t)1 << 31)) >> 32);
  return top >> rq[2];
#endif
}
/* an int8 output of the kernels below from a doubled accumulator; their arguments `mixed` and
 * `zero` say whether some channel (rq[2] < 0) takes TFLite's recipe, {multiplier, shift, -1},
 * and the output zero point (`low >= zero`, constant in speed builds, drops the sign term) */
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
#define TL_CLAMP_OUT(v, low, high) ((int8_t)tl_clamp_s8(v, low, high))
#else
#define TL_CLAMP_OUT(v, low, high) ((int8_t)tl_clamp_i32(v, low, high))
#endif
#define TL_OUT_S8(acc, rq, low, high)                                                                \
  TL_CLAMP_OUT(mixed && (rq)[2] < 0 ? tl_mbqm((acc) >> 1, (rq)[0], (int)(rq)[1]) + zero                \
               : (low) >= zero      ? tl_requant_doubled_clamped(acc, rq)                                 \
                                    : tl_requant_doubled(acc, rq),                                        \
               low, high)

/* The output of tl_dwconv3x3_s8_rows when its channels share one shift R (`shared`, 0 when they do
 * not): the host scales each channel's weights and bias by 2^(1+d) with d = R - r >= 1 (r the
 * channel's own shift) and stores rq = {m, K 2^d + 2^(d-1), 1 + d}; one SMMLA (no rounding) then
 * gives floor((x m 2^(1+d) + (K 2^d + 2^(d-1)) 2^32) / 2^32), whose shift by R is
 * tl_requant_doubled_clamped's result, and SSAT shifts as it saturates (lower bound at least the
 * zero point only: no sign term). */
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
#define TL_OUT_SHARED(acc, rq, shift, low, high)                                                    \
  __extension__({                                                                                   \
    int32_t tl_top, tl_v;                                                                           \
    __asm__("smmla %0, %1, %2, %3" : "=r"(tl_top) : "r"(acc), "r"((rq)[0]), "r"((rq)[1]));           \
    __asm__("ssat %0, #8, %1, asr %2" : "=r"(tl_v) : "r"(tl_top), "i"(shift));                      \
    (int8_t)(low != -128 && tl_v < low ? low : high != 127 && tl_v > high ? high : tl_v);            \
  })
#else
static TL_INLINE int8_t tl_out_shared(int32_t acc, const int32_t *rq, int32_t shift, int32_t low, int32_t high) {
  const int64_t high_word = (int64_t)rq[1] * ((int64_t)1 << 32);
  const int32_t top = (int32_t)((high_word + (int64_t)acc * rq[0]) >> 32);
  return TL_CLAMP_OUT(top >> shift, low, high);
}
#define TL_OUT_SHARED(acc, rq, shift, low, high) tl_out_shared(acc, rq, shift, low, high)
#endif
/* tl_dwconv3x3_s8_rows's outputs */
#define TL_ROWS_OUT(acc, rq) (shared ? TL_OUT_SHARED(acc, rq, shared, low, high) : TL_OUT_S8(acc, rq, low, high))

/* two taps (at `at(a)` and `at(b)`) of four channels against four pair words */
#define TL_DW_PAIR(at, a, b, wq)                                                                    \
  do {                                                                                              \
    const uint32_t va = TL_WORD(at(a)), vb = TL_WORD(at(b));                                        \
    const uint32_t ea = TL_SXTB16(va), eb = TL_SXTB16(vb), oa = TL_SXTB16_ODD(va), ob = TL_SXTB16_ODD(vb); \
    s0 = TL_SMLAD(tl_pkhbt(ea, eb), (uint32_t)(wq)[0], s0);                                         \
    s1 = TL_SMLAD(tl_pkhbt(oa, ob), (uint32_t)(wq)[1], s1);                                         \
    s2 = TL_SMLAD(tl_pkhtb(eb, ea), (uint32_t)(wq)[2], s2);                                         \
    s3 = TL_SMLAD(tl_pkhtb(ob, oa), (uint32_t)(wq)[3], s3);                                         \
    TL_TAP_ORDER();                                                                                 \
  } while (0)
/* the 9 taps (tap k at `at(k)`) of four channels into s0..s3, then their four outputs */
#define TL_DW_GROUP(at)                                                                             \
  do {                                                                                              \
    int32_t s0 = bias[c], s1 = bias[c + 1], s2 = bias[c + 2], s3 = bias[c + 3];                     \
    TL_DW_PAIR(at, 0, 1, wg);                                                                       \
    TL_DW_PAIR(at, 2, 3, wg + 4);                                                                   \
    TL_DW_PAIR(at, 4, 5, wg + 8);                                                                   \
    TL_DW_PAIR(at, 6, 7, wg + 12);                                                                  \
    {                                                                                               \
      const uint32_t v = TL_WORD(at(8)), e = TL_SXTB16(v), o = TL_SXTB16_ODD(v);                    \
      s0 = TL_SMLABB(e, (uint32_t)wg[16], s0);                                                      \
      s2 = TL_SMLATT(e, (uint32_t)wg[16], s2);                                                      \
      s1 = TL_SMLABB(o, (uint32_t)wg[17], s1);                                                      \
      s3 = TL_SMLATT(o, (uint32_t)wg[17], s3);                                                      \
    }                                                                                               \
    out[c] = TL_OUT_S8(s0, rq + 3 * c, low, high);                                                  \
    out[c + 1] = TL_OUT_S8(s1, rq + 3 * c + 3, low, high);                                          \
    out[c + 2] = TL_OUT_S8(s2, rq + 3 * c + 6, low, high);                                          \
    out[c + 3] = TL_OUT_S8(s3, rq + 3 * c + 9, low, high);                                          \
  } while (0)
/* inside the input: tap (ky, kx) at a constant offset from the window's corner */
#define TL_DW_INSIDE(k) (corner + c + ((k) / 3) * rs + ((k) % 3) * xs)
/* at a border: through the window's tap pointers (the zero-point row for padding taps) */
#define TL_DW_BORDER(k) (tap[k] + c)

/* Arguments as tl_dwconv_nhwc_s8's up to pad_left (multiplier 1, k_h = k_w = 3), with the packed
 * weights `wq`, the folded bias, `w` the weights as TFLite lays them out ([tap][channel], offset
 * by their zero point) for the last in_c % 4 channels (NULL when in_c is a multiple of 4), then
 * x_offset, rq (three words per channel, see TL_OUT_S8), mixed, zero, the output range and `zeros`,
 * in_c bytes of the input zero point. */
TL_KERNEL void tl_dwconv3x3_s8_packed(const int8_t *x, const int32_t *restrict wq, const int32_t *restrict bias, int8_t *y,
                                          const int8_t *restrict w, int32_t batches, int32_t in_h, int32_t in_w,
                                          int32_t in_c, int32_t out_h, int32_t out_w, int32_t multiplier,
                                          int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                                          int32_t dil_h, int32_t dil_w, int32_t pad_top, int32_t pad_left,
                                          int32_t x_offset, const int32_t *restrict rq, int32_t mixed, int32_t zero,
                                          int32_t low, int32_t high, const int8_t *restrict zeros) {
  const int32_t xs = dil_w * in_c, rs = dil_h * in_w * in_c;
  int32_t b, oy, ox, c, k;
  (void)multiplier, (void)k_h, (void)k_w, (void)x_offset;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      const int8_t *base = x + b * in_h * in_w * in_c;
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, 3, in_h, &ky0, &ky1);
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t left = ox * stride_w - pad_left;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * in_c;
        const int32_t *wg = wq;
        const int8_t *tap[9];
        int32_t kx0, kx1;
        tl_valid_taps(left, dil_w, 3, in_w, &kx0, &kx1);
        if (ky0 == 0 && ky1 == 3 && kx0 == 0 && kx1 == 3) {
          const int8_t *corner = base + (top * in_w + left) * in_c;
          for (c = 0; c + 4 <= in_c; c += 4, wg += 18) TL_DW_GROUP(TL_DW_INSIDE);
        } else {
          for (k = 0; k < 9; ++k) {
            const int32_t ky = k / 3, kx = k % 3;
            tap[k] = ky >= ky0 && ky < ky1 && kx >= kx0 && kx < kx1
                         ? base + ((top + ky * dil_h) * in_w + left + kx * dil_w) * in_c
                         : zeros;
          }
          for (c = 0; c + 4 <= in_c; c += 4, wg += 18) TL_DW_GROUP(TL_DW_BORDER);
        }
        if (in_c % 4) {
          for (k = 0; k < 9; ++k) {
            const int32_t ky = k / 3, kx = k % 3;
            tap[k] = ky >= ky0 && ky < ky1 && kx >= kx0 && kx < kx1
                         ? base + ((top + ky * dil_h) * in_w + left + kx * dil_w) * in_c
                         : zeros;
          }
          for (c = in_c - in_c % 4; c < in_c; ++c) { /* the last in_c % 4 channels */
            int32_t sum = 0;
            for (k = 0; k < 9; ++k) sum += (int32_t)tap[k][c] * (int32_t)w[k * in_c + c];
            out[c] = TL_OUT_S8(bias[c] + 2 * sum, rq + 3 * c, low, high);
          }
        }
      }
    }
}
#undef TL_DW_PAIR
#undef TL_DW_GROUP
#undef TL_DW_INSIDE
#undef TL_DW_BORDER

/* Three outputs A, B and C at a time (stride 1 along the rows, no dilation there) over the five
 * input columns j..j+4 of each window row. Per channel, with q0 = [x0 | x1], q1 = [x2 | x3],
 * W01 = [w0 | w1] and W12 = [w1 | w2]: A = SMLAD(q0, W01) + x2 w2 (SMLABT of q1 and W12),
 * B = SMLAD(q1, W12) + x1 w0 (SMLATB of q0 and W01), C = SMLAD(q1, W01) + x4 w2, x4 straight from
 * its SXTB16 word (SMLABT for the even channel of the word, SMLATT for the odd one): per row and
 * pair of channels, five loads, five SXTB16, four PKH, two LDRD of weights and twelve
 * multiply-accumulates (eighteen MACs). The weights of a group of four channels: per row, per pass
 * (even channels c, c + 2 from SXTB16, then odd channels from its rotated form) the words W01 of
 * its two channels, then their W12: 24 words (at stride 2, 40: then the group's biases and
 * requantization words, see TL_DW5_PASS). At stride 2 along the rows the same columns hold the
 * windows of A and C (B dropped: two outputs, twelve MACs in eight); at the end of a row A and B
 * alone (C dropped: four columns). Statement lists are kept or dropped by TL_KEEP / TL_DROP: THREE
 * for B, CK for C, and per column L (the first), S3 (the fourth), R (the fifth), dropped when that
 * column is padding: it then reads the input zero point (its products with the weights cancel the
 * input offset folded into the bias). */
#define TL_KEEP(...) __VA_ARGS__
#define TL_DROP(...)
#define TL_NOT_TL_KEEP(...)
#define TL_NOT_TL_DROP(...) __VA_ARGS__
#define TL_DW3_ROW(x0, x1, x2, x3, x4, wr, SX, THREE, CK)                                           \
  do {                                                                                              \
    const uint32_t w01 = (uint32_t)(wr)[0], v01 = (uint32_t)(wr)[1];                                \
    uint32_t w12, v12;                                                                              \
    {                                                                                               \
      const uint32_t e0 = SX(TL_WORD(x0)), e1 = SX(TL_WORD(x1));                                   \
      const uint32_t q0 = tl_pkhbt(e0, e1), r0 = tl_pkhtb(e1, e0);                                  \
      a0 = TL_SMLAD(q0, w01, a0);                                                                   \
      THREE(b0 = TL_SMLATB(q0, w01, b0));                                                           \
      a1 = TL_SMLAD(r0, v01, a1);                                                                   \
      THREE(b1 = TL_SMLATB(r0, v01, b1));                                                           \
    }                                                                                               \
    TL_TAP_ORDER();                                                                                 \
    {                                                                                               \
      const uint32_t e2 = SX(TL_WORD(x2)), e3 = SX(TL_WORD(x3));                                   \
      const uint32_t q1 = tl_pkhbt(e2, e3), r1 = tl_pkhtb(e3, e2);                                  \
      CK(c0 = TL_SMLAD(q1, w01, c0); c1 = TL_SMLAD(r1, v01, c1);)                                   \
      w12 = (uint32_t)(wr)[2], v12 = (uint32_t)(wr)[3];                                             \
      a0 = TL_SMLABT(q1, w12, a0);                                                                  \
      THREE(b0 = TL_SMLAD(q1, w12, b0));                                                            \
      a1 = TL_SMLABT(r1, v12, a1);                                                                  \
      THREE(b1 = TL_SMLAD(r1, v12, b1));                                                            \
    }                                                                                               \
    TL_TAP_ORDER();                                                                                 \
    CK({                                                                                            \
      const uint32_t e4 = SX(TL_WORD(x4));                                                         \
      c0 = TL_SMLABT(e4, w12, c0);                                                                  \
      c1 = TL_SMLATT(e4, v12, c1);                                                                  \
    })                                                                                              \
    TL_TAP_ORDER();                                                                                 \
  } while (0)
/* the row of window row ky whose columns are at q + (j - first) * in_c, j from first (1 when the
 * first column is padding, else 0) */
#define TL_DW3_COL(q, j, L) ((q) + ((j) TL_NOT_##L(-1)) * in_c)
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
/* The same row in assembly with the registers fixed (gcc's allocation of the C form spills about
 * one accumulator in four): five temporaries, the accumulators, the weights of the pass read by
 * two LDRD. Speed builds only, where the kernel is inlined with its shapes as constants: the
 * inputs are memory operands at immediate offsets from one pointer (the caller checks that the
 * largest offset fits a load's 12 bits), a padding column the zero point already widened (zpw). */
#define TL_SXR_TL_SXTB16 ""
#define TL_SXR_TL_SXTB16_ODD ", ror #8"
#define TL_W32(a) (*(const uint32_t *)(a))
#define TL_DW3_ROW_AT(q, ky, odd, SX, THREE, CK, L, S3, R)                                          \
  do {                                                                                              \
    uint32_t t0, t1, t2, t3, t4;                                                                    \
    __asm__ volatile("ldr %[t0], %[x0]\n\t"                                                          \
                     "ldr %[t1], %[x1]\n\t"                                                          \
                     L("sxtb16 %[t0], %[t0]" TL_SXR_##SX "\n\t")                                      \
                     "sxtb16 %[t1], %[t1]" TL_SXR_##SX "\n\t"                                         \
                     "pkhbt %[t2], %[t0], %[t1], lsl #16\n\t"                                         \
                     "pkhtb %[t3], %[t1], %[t0], asr #16\n\t"                                         \
                     "ldrd %[t0], %[t1], [%[w], %[o0]]\n\t"                                           \
                     "smlad %[a0], %[t2], %[t0], %[a0]\n\t"                                           \
                     THREE("smlatb %[b0], %[t2], %[t0], %[b0]\n\t")                                   \
                     "smlad %[a1], %[t3], %[t1], %[a1]\n\t"                                           \
                     THREE("smlatb %[b1], %[t3], %[t1], %[b1]\n\t")                                   \
                     "ldr %[t2], %[x2]\n\t"                                                          \
                     "ldr %[t3], %[x3]\n\t"                                                          \
                     "sxtb16 %[t2], %[t2]" TL_SXR_##SX "\n\t"                                         \
                     S3("sxtb16 %[t3], %[t3]" TL_SXR_##SX "\n\t")                                     \
                     "pkhbt %[t4], %[t2], %[t3], lsl #16\n\t"                                         \
                     "pkhtb %[t3], %[t3], %[t2], asr #16\n\t"                                         \
                     CK("smlad %[c0], %[t4], %[t0], %[c0]\n\t"                                        \
                        "smlad %[c1], %[t3], %[t1], %[c1]\n\t")                                       \
                     "ldrd %[t0], %[t1], [%[w], %[o1]]\n\t"                                           \
                     "smlabt %[a0], %[t4], %[t0], %[a0]\n\t"                                          \
                     THREE("smlad %[b0], %[t4], %[t0], %[b0]\n\t")                                    \
                     "smlabt %[a1], %[t3], %[t1], %[a1]\n\t"                                          \
                     THREE("smlad %[b1], %[t3], %[t1], %[b1]\n\t")                                    \
                     CK("ldr %[t2], %[x4]\n\t"                                                       \
                        R("sxtb16 %[t2], %[t2]" TL_SXR_##SX "\n\t")                                   \
                        "smlabt %[c0], %[t2], %[t0], %[c0]\n\t"                                       \
                        "smlatt %[c1], %[t2], %[t1], %[c1]\n\t")                                      \
                     : THREE([b0] "+r"(b0), [b1] "+r"(b1),) CK([c0] "+r"(c0), [c1] "+r"(c1),)         \
                       [a0] "+r"(a0), [a1] "+r"(a1), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2),   \
                       [t3] "=&r"(t3), [t4] "=&r"(t4)                                               \
                     : [x0] "m"(L(TL_W32(q)) TL_NOT_##L(zpw)), [x1] "m"(TL_W32(TL_DW3_COL(q, 1, L))), \
                       [x2] "m"(TL_W32(TL_DW3_COL(q, 2, L))),                                        \
                       [x3] "m"(S3(TL_W32(TL_DW3_COL(q, 3, L))) TL_NOT_##S3(zpw)),                   \
                       [x4] "m"(CK(R(TL_W32(TL_DW3_COL(q, 4, L))) TL_NOT_##R(zpw)) TL_NOT_##CK(zpw)), \
                       [w] "r"(wg), [o0] "i"(32 * (ky) + 16 * (odd)), [o1] "i"(32 * (ky) + 16 * (odd) + 8)); \
  } while (0)
#define TL_DW3_ASM_OK 1
#else
#define TL_DW3_ROW_AT(q, ky, odd, SX, THREE, CK, L, S3, R)                                          \
  TL_DW3_ROW(L(q) TL_NOT_##L(zp4), TL_DW3_COL(q, 1, L), TL_DW3_COL(q, 2, L),                        \
             S3(TL_DW3_COL(q, 3, L)) TL_NOT_##S3(zp4), CK(R(TL_DW3_COL(q, 4, L)) TL_NOT_##R(zp4)) TL_NOT_##CK(zp4), \
             wg + 8 * (ky) + 4 * (odd), SX, THREE, CK)
#define TL_DW3_ASM_OK 0
#endif
/* window row ky of a pass whose three rows are inside the input (p at its first column that is
 * not padding, rows row_step apart) */
#define TL_DW3_INNER(ky, odd, SX, THREE, CK, L, S3, R)                                              \
  TL_DW3_ROW_AT(p + (ky) * row_step, ky, odd, SX, THREE, CK, L, S3, R)
/* at the layer's edges: rows outside the input skipped (the pass starts from their kind's bias),
 * padding columns dropped as L, S3 and R say */
#define TL_DW3_EDGE(ky, odd, SX, THREE, CK, L, S3, R)                                               \
  do {                                                                                              \
    if (rows[ky]) {                                                                                 \
      const int8_t *q = rows[ky] + c + (pl TL_NOT_##L(+1)) * in_c;                                  \
      TL_OPAQUE(q);                                                                                 \
      TL_DW3_ROW_AT(q, ky, odd, SX, THREE, CK, L, S3, R);                                           \
    }                                                                                               \
  } while (0)
/* one pass (channels c + odd and c + odd + 2) of the outputs kept over the three rows of their
 * windows, from the bias pb, the first output at out */
#define TL_DW3_PASS(SX, odd, THREE, CK, ROW, L, S3, R)                                              \
  do {                                                                                              \
    int32_t a0 = pb[c + (odd)], a1 = pb[c + (odd) + 2];                                             \
    THREE(int32_t b0 = a0, b1 = a1;)                                                                \
    CK(int32_t c0 = a0, c1 = a1;)                                                                   \
    ROW(0, odd, SX, THREE, CK, L, S3, R);                                                           \
    ROW(1, odd, SX, THREE, CK, L, S3, R);                                                           \
    ROW(2, odd, SX, THREE, CK, L, S3, R);                                                           \
    {                                                                                               \
      /* the words read before any output is stored (an int8 store may alias them) */             \
      const int32_t *r = rq + 3 * (c + (odd));                                                      \
      const int32_t ra[3] = {r[0], r[1], r[2]}, rc[3] = {r[6], r[7], r[8]};                         \
      const int8_t ya0 = TL_ROWS_OUT(a0, ra), ya1 = TL_ROWS_OUT(a1, rc);                            \
      THREE(const int8_t yb0 = TL_ROWS_OUT(b0, ra), yb1 = TL_ROWS_OUT(b1, rc);)                     \
      CK(const int8_t yc0 = TL_ROWS_OUT(c0, ra), yc1 = TL_ROWS_OUT(c1, rc);)                        \
      out[c + (odd)] = ya0, out[c + (odd) + 2] = ya1;                                               \
      THREE(out[in_c + c + (odd)] = yb0, out[in_c + c + (odd) + 2] = yb1;)                          \
      CK(out[(1 + THREE(1) + 0) * in_c + c + (odd)] = yc0;                                          \
         out[(1 + THREE(1) + 0) * in_c + c + (odd) + 2] = yc1;)                                     \
    }                                                                                               \
  } while (0)
/* the groups of four channels of a pass's outputs, the padding columns as lpad, s3pad and rpad
 * say (chosen once for all the groups) */
#define TL_DW3_VARIANTS(ROW, SETUP)                                                                  \
  do {                                                                                              \
    if (stride_w == 1 && span == 2 && s3pad)                                                        \
      TL_DW3_GROUPS(SETUP, TL_KEEP, TL_DROP, ROW, TL_KEEP, TL_DROP, TL_KEEP);                                \
    else if (stride_w == 1 && span == 2)                                                            \
      TL_DW3_GROUPS(SETUP, TL_KEEP, TL_DROP, ROW, TL_KEEP, TL_KEEP, TL_KEEP);                                \
    else if (stride_w == 1 && in_w == 3 && lpad && rpad)                                            \
      TL_DW3_GROUPS(SETUP, TL_KEEP, TL_KEEP, ROW, TL_DROP, TL_KEEP, TL_DROP);                                \
    else if (stride_w == 1 && lpad)                                                                 \
      TL_DW3_GROUPS(SETUP, TL_KEEP, TL_KEEP, ROW, TL_DROP, TL_KEEP, TL_KEEP);                                \
    else if (stride_w == 1 && rpad)                                                                 \
      TL_DW3_GROUPS(SETUP, TL_KEEP, TL_KEEP, ROW, TL_KEEP, TL_KEEP, TL_DROP);                                \
    else if (stride_w == 1)                                                                         \
      TL_DW3_GROUPS(SETUP, TL_KEEP, TL_KEEP, ROW, TL_KEEP, TL_KEEP, TL_KEEP);                                \
    else if (in_w == 3 && lpad && rpad)                                                             \
      TL_DW3_GROUPS(SETUP, TL_DROP, TL_KEEP, ROW, TL_DROP, TL_KEEP, TL_DROP);                                \
    else if (lpad)                                                                                  \
      TL_DW3_GROUPS(SETUP, TL_DROP, TL_KEEP, ROW, TL_DROP, TL_KEEP, TL_KEEP);                                \
    else if (rpad)                                                                                  \
      TL_DW3_GROUPS(SETUP, TL_DROP, TL_KEEP, ROW, TL_KEEP, TL_KEEP, TL_DROP);                                \
    else                                                                                            \
      TL_DW3_GROUPS(SETUP, TL_DROP, TL_KEEP, ROW, TL_KEEP, TL_KEEP, TL_KEEP);                                \
  } while (0)
/* TL_DW3_GROUPS and TL_DW5_GROUPS: after the whole groups of four channels, the last in_c % 4
 * channels as a group of the layer's last four (the host stores their weights once more after the
 * whole groups'): every load stays inside the input's pixels, the channels computed twice are
 * stored twice with the same value, and with one channel left over (the group's fourth) the odd
 * pass alone computes it. Size builds (one copy of the kernel) take that group inside the loop. */
#if defined(__OPTIMIZE_SIZE__)
#define TL_DW3_TAIL_IN_LOOP 1
#else
#define TL_DW3_TAIL_IN_LOOP 0
#endif
#define TL_DW3_GROUPS(SETUP, THREE, CK, ROW, L, S3, R)                                              \
  do {                                                                                              \
    for (c = 0; c + 4 <= in_c || (TL_DW3_TAIL_IN_LOOP && c < in_c); c += 4, wg += gw) {             \
      if (TL_DW3_TAIL_IN_LOOP && c + 4 > in_c) c = in_c - 4;                                       \
      SETUP();                                                                                      \
      TL_DW3_PASS(TL_SXTB16, 0, THREE, CK, ROW, L, S3, R);                                          \
      TL_DW3_PASS(TL_SXTB16_ODD, 1, THREE, CK, ROW, L, S3, R);                                      \
    }                                                                                               \
    if (!TL_DW3_TAIL_IN_LOOP && in_c % 4) {                                                         \
      c = in_c - 4;                                                                                 \
      SETUP();                                                                                      \
      if (in_c % 4 != 1)                                                                            \
        TL_DW3_PASS(TL_SXTB16, 0, THREE, CK, ROW, L, S3, R);                                        \
      TL_DW3_PASS(TL_SXTB16_ODD, 1, THREE, CK, ROW, L, S3, R);                                      \
    }                                                                                               \
  } while (0)
/* the first column of a group's pass inside the input, and nothing to set up at the edges */
#define TL_DW3_AT_CORNER()                                                                          \
  const int8_t *p = corner + c;                                                                     \
  TL_OPAQUE(p)
#define TL_DW3_NO_SETUP() (void)0
#define TL_DW3_BOTH(THREE, CK, ROW, L, S3, R)                                                       \
  do {                                                                                              \
    TL_DW3_PASS(TL_SXTB16, 0, THREE, CK, ROW, L, S3, R);                                            \
    TL_DW3_PASS(TL_SXTB16_ODD, 1, THREE, CK, ROW, L, S3, R);                                        \
  } while (0)
/* a pointer the compiler must take as it is: tap addresses become immediate offsets from it
 * rather than one induction variable each (which gcc spills) */
#if defined(__GNUC__)
#define TL_OPAQUE(p) __asm__("" : "+r"(p))
#else
#define TL_OPAQUE(p) ((void)0)
#endif
/* one output's row of taps (at t0, t1, t2) of four channels: channel pairs by SMLAD, the third
 * tap by SMLABT/SMLATT */
#define TL_DW1_ROW(t0, t1, t2, wr)                                                                  \
  do {                                                                                              \
    const uint32_t v0 = TL_WORD(t0), v1 = TL_WORD(t1), v2 = TL_WORD(t2);                            \
    uint32_t e0 = TL_SXTB16(v0), e1 = TL_SXTB16(v1), e2 = TL_SXTB16(v2);                            \
    s0 = TL_SMLAD(tl_pkhbt(e0, e1), (uint32_t)(wr)[0], s0);                                         \
    s0 = TL_SMLABT(e2, (uint32_t)(wr)[2], s0);                                                      \
    s2 = TL_SMLAD(tl_pkhtb(e1, e0), (uint32_t)(wr)[1], s2);                                         \
    s2 = TL_SMLATT(e2, (uint32_t)(wr)[3], s2);                                                      \
    e0 = TL_SXTB16_ODD(v0), e1 = TL_SXTB16_ODD(v1), e2 = TL_SXTB16_ODD(v2);                         \
    s1 = TL_SMLAD(tl_pkhbt(e0, e1), (uint32_t)(wr)[4], s1);                                         \
    s1 = TL_SMLABT(e2, (uint32_t)(wr)[6], s1);                                                      \
    s3 = TL_SMLAD(tl_pkhtb(e1, e0), (uint32_t)(wr)[5], s3);                                         \
    s3 = TL_SMLATT(e2, (uint32_t)(wr)[7], s3);                                                      \
    TL_TAP_ORDER();                                                                                 \
  } while (0)

/* two valid columns of a row: [x0 | x1] against the W01 (wr at the row's words) or [x1 | x2] against
 * the W12 (wr two words further) */
#define TL_DW1_PAIR(t0, wr)                                                                         \
  do {                                                                                              \
    const uint32_t v0 = TL_WORD(t0), v1 = TL_WORD((t0) + in_c);                                     \
    uint32_t e0 = TL_SXTB16(v0), e1 = TL_SXTB16(v1);                                                \
    s0 = TL_SMLAD(tl_pkhbt(e0, e1), (uint32_t)(wr)[0], s0);                                         \
    s2 = TL_SMLAD(tl_pkhtb(e1, e0), (uint32_t)(wr)[1], s2);                                         \
    e0 = TL_SXTB16_ODD(v0), e1 = TL_SXTB16_ODD(v1);                                                 \
    s1 = TL_SMLAD(tl_pkhbt(e0, e1), (uint32_t)(wr)[4], s1);                                         \
    s3 = TL_SMLAD(tl_pkhtb(e1, e0), (uint32_t)(wr)[5], s3);                                         \
    TL_TAP_ORDER();                                                                                 \
  } while (0)

/* the valid rows (start[k] not NULL) of one output's window, of 3 or 2 valid columns */
#define TL_DW1_FULL(k)                                                                              \
  do {                                                                                              \
    const int8_t *p = start[k] + c;                                                                 \
    TL_OPAQUE(p);                                                                                   \
    TL_DW1_ROW(p, p + in_c, p + 2 * in_c, wg + 8 * (k));                                            \
  } while (0)
#define TL_DW1_TWO(k)                                                                               \
  do {                                                                                              \
    const int8_t *p = start[k] + c;                                                                 \
    TL_OPAQUE(p);                                                                                   \
    TL_DW1_PAIR(p, wg + 8 * (k) + 2 * kx0);                                                             \
  } while (0)
#define TL_DW1_GROUP(row)                                                                           \
  do {                                                                                              \
    int32_t s0 = kb[c], s1 = kb[c + 1], s2 = kb[c + 2], s3 = kb[c + 3];                             \
    if (start[0]) row(0);                                                                           \
    if (start[1]) row(1);                                                                           \
    if (start[2]) row(2);                                                                           \
    out[c] = TL_ROWS_OUT(s0, rq + 3 * c);                                                  \
    out[c + 1] = TL_ROWS_OUT(s1, rq + 3 * c + 3);                                          \
    out[c + 2] = TL_ROWS_OUT(s2, rq + 3 * c + 6);                                          \
    out[c + 3] = TL_ROWS_OUT(s3, rq + 3 * c + 9);                                          \
  } while (0)

/* Stride 2 along the rows: three outputs A, C and E per pass over the seven input columns
 * j..j+6 of each window row (A over 0..2, C over 2..4, E over 4..6). Per channel, with
 * q0 = [x0 | x1], q1 = [x2 | x3], q2 = [x4 | x5] and the widened words e2, e4, e6 of columns 2, 4
 * and 6: A = SMLAD(q0, W01) + x2 w2, C = SMLAD(q1, W01) + x4 w2, E = SMLAD(q2, W01) + x6 w2, each
 * x w2 by SMLABT (the even channel of the word) or SMLATT (the odd one) against W12: per row and
 * pair of channels seven loads, seven SXTB16, six PKH, two LDRD of weights and twelve
 * multiply-accumulates (eighteen MACs). L and R drop the first and the last
 * column when they are padding (they then read the input zero point). */
#define TL_DW5_ROW(x0, x1, x2, x3, x4, x5, x6, wr, SX)                                              \
  do {                                                                                              \
    const uint32_t w01 = (uint32_t)(wr)[0], v01 = (uint32_t)(wr)[1];                                \
    const uint32_t w12 = (uint32_t)(wr)[2], v12 = (uint32_t)(wr)[3];                                \
    {                                                                                               \
      const uint32_t u0 = SX(TL_WORD(x0)), u1 = SX(TL_WORD(x1));                                   \
      a0 = TL_SMLAD(tl_pkhbt(u0, u1), w01, a0);                                                     \
      a1 = TL_SMLAD(tl_pkhtb(u1, u0), v01, a1);                                                     \
    }                                                                                               \
    TL_TAP_ORDER();                                                                                 \
    {                                                                                               \
      const uint32_t u2 = SX(TL_WORD(x2)), u3 = SX(TL_WORD(x3));                                   \
      c0 = TL_SMLAD(tl_pkhbt(u2, u3), w01, c0);                                                     \
      c1 = TL_SMLAD(tl_pkhtb(u3, u2), v01, c1);                                                     \
      a0 = TL_SMLABT(u2, w12, a0);                                                                  \
      a1 = TL_SMLATT(u2, v12, a1);                                                                  \
    }                                                                                               \
    TL_TAP_ORDER();                                                                                 \
    {                                                                                               \
      const uint32_t u4 = SX(TL_WORD(x4)), u5 = SX(TL_WORD(x5));                                   \
      f0 = TL_SMLAD(tl_pkhbt(u4, u5), w01, f0);                                                     \
      f1 = TL_SMLAD(tl_pkhtb(u5, u4), v01, f1);                                                     \
      c0 = TL_SMLABT(u4, w12, c0);                                                                  \
      c1 = TL_SMLATT(u4, v12, c1);                                                                  \
    }                                                                                               \
    TL_TAP_ORDER();                                                                                 \
    {                                                                                               \
      const uint32_t u6 = SX(TL_WORD(x6));                                                         \
      f0 = TL_SMLABT(u6, w12, f0);                                                                  \
      f1 = TL_SMLATT(u6, v12, f1);                                                                  \
    }                                                                                               \
    TL_TAP_ORDER();                                                                                 \
  } while (0)
/* F (TL_KEEP in the first window row of a pass inside the input) loads the pass's two biases into
 * E's accumulators by one LDRD (at stride 2 a group's weights are followed by its biases, the even
 * pass's channels first) and starts A and C from them, which their first products add to (no
 * copies of the bias) */
#define TL_DW5_RA_TL_KEEP(own, seed) seed
#define TL_DW5_RA_TL_DROP(own, seed) own
#if TL_DW3_ASM_OK
/* The row in assembly: six temporaries, so that W01 is read once (its three SMLAD first, e2 and e4
 * kept for W12's three pairs of SMLABT/SMLATT): 7 LDR, 7 SXTB16, 6 PKH, 2 LDRD, 12 multiply-
 * accumulates, 34 instructions for 18 MACs */
#define TL_DW5_ROW_AT(q, ky, odd, SX, L, R, F)                                                      \
  do {                                                                                              \
    uint32_t t0, t1, t2, t3, t4, t5;                                                                \
    __asm__ volatile(F("ldrd %[f0], %[f1], [%[w], %[ob]]\n\t")                                   \
                     "ldr %[t2], %[x0]\n\t"                                                          \
                     "ldr %[t3], %[x1]\n\t"                                                          \
                     L("sxtb16 %[t2], %[t2]" TL_SXR_##SX "\n\t")                                      \
                     "sxtb16 %[t3], %[t3]" TL_SXR_##SX "\n\t"                                         \
                     "pkhbt %[t4], %[t2], %[t3], lsl #16\n\t"                                         \
                     "pkhtb %[t3], %[t3], %[t2], asr #16\n\t"                                         \
                     "ldrd %[t0], %[t1], [%[w], %[o0]]\n\t"                                           \
                     "smlad %[a0], %[t4], %[t0], " TL_DW5_RA_##F("%[a0]", "%[f0]") "\n\t"             \
                     "smlad %[a1], %[t3], %[t1], " TL_DW5_RA_##F("%[a1]", "%[f1]") "\n\t"             \
                     "ldr %[t2], %[x2]\n\t"                                                          \
                     "ldr %[t3], %[x3]\n\t"                                                          \
                     "sxtb16 %[t2], %[t2]" TL_SXR_##SX "\n\t"                                         \
                     "sxtb16 %[t3], %[t3]" TL_SXR_##SX "\n\t"                                         \
                     "pkhbt %[t4], %[t2], %[t3], lsl #16\n\t"                                         \
                     "pkhtb %[t3], %[t3], %[t2], asr #16\n\t"                                         \
                     "smlad %[c0], %[t4], %[t0], " TL_DW5_RA_##F("%[c0]", "%[f0]") "\n\t"             \
                     "smlad %[c1], %[t3], %[t1], " TL_DW5_RA_##F("%[c1]", "%[f1]") "\n\t"             \
                     "ldr %[t4], %[x4]\n\t"                                                          \
                     "ldr %[t3], %[x5]\n\t"                                                          \
                     "sxtb16 %[t4], %[t4]" TL_SXR_##SX "\n\t"                                         \
                     "sxtb16 %[t3], %[t3]" TL_SXR_##SX "\n\t"                                         \
                     "pkhbt %[t5], %[t4], %[t3], lsl #16\n\t"                                         \
                     "pkhtb %[t3], %[t3], %[t4], asr #16\n\t"                                         \
                     "smlad %[f0], %[t5], %[t0], %[f0]\n\t"                                           \
                     "smlad %[f1], %[t3], %[t1], %[f1]\n\t"                                           \
                     "ldrd %[t0], %[t1], [%[w], %[o1]]\n\t"                                           \
                     "smlabt %[a0], %[t2], %[t0], %[a0]\n\t"                                          \
                     "smlatt %[a1], %[t2], %[t1], %[a1]\n\t"                                          \
                     "smlabt %[c0], %[t4], %[t0], %[c0]\n\t"                                          \
                     "smlatt %[c1], %[t4], %[t1], %[c1]\n\t"                                          \
                     "ldr %[t2], %[x6]\n\t"                                                          \
                     R("sxtb16 %[t2], %[t2]" TL_SXR_##SX "\n\t")                                      \
                     "smlabt %[f0], %[t2], %[t0], %[f0]\n\t"                                          \
                     "smlatt %[f1], %[t2], %[t1], %[f1]\n\t"                                          \
                     : F([a0] "=&r"(a0), [a1] "=&r"(a1), [c0] "=&r"(c0), [c1] "=&r"(c1),               \
                         [f0] "=&r"(f0), [f1] "=&r"(f1),)                                           \
                       TL_NOT_##F([a0] "+r"(a0), [a1] "+r"(a1), [c0] "+r"(c0), [c1] "+r"(c1),           \
                                  [f0] "+r"(f0), [f1] "+r"(f1),)                                    \
                       [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2),   \
                       [t3] "=&r"(t3), [t4] "=&r"(t4), [t5] "=&r"(t5)                               \
                     : [x0] "m"(L(TL_W32(q)) TL_NOT_##L(zpw)), [x1] "m"(TL_W32(TL_DW3_COL(q, 1, L))), \
                       [x2] "m"(TL_W32(TL_DW3_COL(q, 2, L))), [x3] "m"(TL_W32(TL_DW3_COL(q, 3, L))),  \
                       [x4] "m"(TL_W32(TL_DW3_COL(q, 4, L))), [x5] "m"(TL_W32(TL_DW3_COL(q, 5, L))),  \
                       [x6] "m"(R(TL_W32(TL_DW3_COL(q, 6, L))) TL_NOT_##R(zpw)),                      \
                       [w] "r"(wg), [o0] "i"(32 * (ky) + 16 * (odd)), [o1] "i"(32 * (ky) + 16 * (odd) + 8), \
                       [ob] "i"(96 + 8 * (odd)));                                                   \
  } while (0)
#else
#define TL_DW5_ROW_AT(q, ky, odd, SX, L, R, F)                                                      \
  do {                                                                                              \
    F(f0 = wg[24 + 2 * (odd)], f1 = wg[25 + 2 * (odd)]; a0 = c0 = f0; a1 = c1 = f1;)                \
    TL_DW5_ROW(L(q) TL_NOT_##L(zp4), TL_DW3_COL(q, 1, L), TL_DW3_COL(q, 2, L), TL_DW3_COL(q, 3, L),    \
               TL_DW3_COL(q, 4, L), TL_DW3_COL(q, 5, L), R(TL_DW3_COL(q, 6, L)) TL_NOT_##R(zp4),      \
               wg + 8 * (ky) + 4 * (odd), SX);                                                      \
  } while (0)
#endif
#define TL_DW5_INNER(ky, odd, SX, L, R, F) TL_DW5_ROW_AT(p + (ky) * row_step, ky, odd, SX, L, R, F)
#define TL_DW5_EDGE(ky, odd, SX, L, R, F)                                                           \
  do {                                                                                              \
    if (rows[ky]) {                                                                                 \
      const int8_t *q = rows[ky] + c + (pl TL_NOT_##L(+1)) * in_c;                                  \
      TL_OPAQUE(q);                                                                                 \
      TL_DW5_ROW_AT(q, ky, odd, SX, L, R, TL_DROP);                                                 \
    }                                                                                               \
  } while (0)
/* the accumulators of a pass from its bias: inside the input the first row loads E's from the
 * group's bias words (after its weights) and starts A and C from them; at the edges (rows may be
 * skipped) all six from the bias of the kind of window */
#define TL_DW5_INNER_SEED(odd) int32_t a0, a1, c0, c1, f0, f1
#define TL_DW5_EDGE_SEED(odd)                                                                       \
  int32_t a0 = pb[c + (odd)], a1 = pb[c + (odd) + 2];                                               \
  int32_t c0 = a0, c1 = a1, f0 = a0, f1 = a1
#define TL_DW5_PASS(SX, odd, ROW, L, R)                                                             \
  do {                                                                                              \
    ROW##_SEED(odd);                                                                                \
    ROW(0, odd, SX, L, R, TL_KEEP);                                                                 \
    ROW(1, odd, SX, L, R, TL_DROP);                                                                 \
    ROW(2, odd, SX, L, R, TL_DROP);                                                                 \
    {                                                                                               \
      const int32_t *r = wg + 28 + 6 * (odd); /* the pass's requantization words, after the biases */ \
      const int32_t ra[3] = {r[0], r[1], r[4]}, rc[3] = {r[2], r[3], r[5]};                         \
      const int8_t ya0 = TL_ROWS_OUT(a0, ra), ya1 = TL_ROWS_OUT(a1, rc);                            \
      const int8_t yc0 = TL_ROWS_OUT(c0, ra), yc1 = TL_ROWS_OUT(c1, rc);                            \
      const int8_t yf0 = TL_ROWS_OUT(f0, ra), yf1 = TL_ROWS_OUT(f1, rc);                            \
      ob[c + (odd)] = ya0, ob[c + (odd) + 2] = ya1;                                               \
      ob[in_c + c + (odd)] = yc0, ob[in_c + c + (odd) + 2] = yc1;                                 \
      ob[2 * in_c + c + (odd)] = yf0, ob[2 * in_c + c + (odd) + 2] = yf1;                         \
    }                                                                                               \
  } while (0)
/* the groups of four channels of `run5` passes side by side (inside the input, where no column is
 * padding, a row's passes in one loop; one at the edges) */
#define TL_DW5_GROUPS(SETUP, ROW, L, R)                                                             \
  do {                                                                                              \
    int8_t *ob = out;                                                                               \
    int32_t k5;                                                                                     \
    for (k5 = 0; k5 < run5; ++k5, ob += 3 * in_c) {                                                 \
      wg = wq;                                                                                      \
      for (c = 0; c + 4 <= in_c || (TL_DW3_TAIL_IN_LOOP && c < in_c); c += 4, wg += gw) {           \
        if (TL_DW3_TAIL_IN_LOOP && c + 4 > in_c) c = in_c - 4;                                     \
        SETUP();                                                                                    \
        TL_DW5_PASS(TL_SXTB16, 0, ROW, L, R);                                                       \
        TL_DW5_PASS(TL_SXTB16_ODD, 1, ROW, L, R);                                                   \
      }                                                                                             \
      if (!TL_DW3_TAIL_IN_LOOP && in_c % 4) {                                                       \
        c = in_c - 4;                                                                               \
        SETUP();                                                                                    \
        if (in_c % 4 != 1)                                                                          \
          TL_DW5_PASS(TL_SXTB16, 0, ROW, L, R);                                                     \
        TL_DW5_PASS(TL_SXTB16_ODD, 1, ROW, L, R);                                                   \
      }                                                                                             \
      ROW##_NEXT();                                                                                 \
    }                                                                                               \
  } while (0)
#define TL_DW5_INNER_NEXT() (corner += 6 * in_c)
#define TL_DW5_EDGE_NEXT() (void)0
#define TL_DW5_VARIANTS(ROW, SETUP)                                                                 \
  do {                                                                                              \
    if (lpad5 && rpad5)                                                                             \
      TL_DW5_GROUPS(SETUP, ROW, TL_DROP, TL_DROP);                                                  \
    else if (lpad5)                                                                                 \
      TL_DW5_GROUPS(SETUP, ROW, TL_DROP, TL_KEEP);                                                  \
    else if (rpad5)                                                                                 \
      TL_DW5_GROUPS(SETUP, ROW, TL_KEEP, TL_DROP);                                                  \
    else                                                                                            \
      TL_DW5_GROUPS(SETUP, ROW, TL_KEEP, TL_KEEP);                                                  \
  } while (0)

/* Arguments as tl_dwconv3x3_s8_packed's (stride_w 1 or 2, dil_w 1) with the row-pair weights above,
 * then for the outputs at a border, which compute their valid taps only (padding taps skipped as
 * TFLite's kernels do): `kind_bias` [row kinds][col_kinds][in_c] the doubled bias plus the input
 * offset times the valid taps' weights of each kind of window, `row_kind` and `col_kind` the kind
 * of the valid rows [ky0, ky1) at ky0 * 4 + ky1, of the valid columns likewise (the kinds of the
 * whole layer, which are those of its bands; the host checks that two columns or more are valid) */
TL_KERNEL void tl_dwconv3x3_s8_rows(const int8_t *x, const int32_t *restrict wq, const int32_t *restrict bias, int8_t *y,
                                    const int8_t *restrict w, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c,
                                    int32_t out_h, int32_t out_w, int32_t multiplier, int32_t k_h, int32_t k_w,
                                    int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
                                    int32_t pad_top, int32_t pad_left, int32_t x_offset, const int32_t *restrict rq,
                                    int32_t mixed, int32_t zero, int32_t low, int32_t high,
                                    const int32_t *restrict kind_bias, const int32_t *restrict row_kind,
                                    const int32_t *restrict col_kind, int32_t col_kinds, int32_t shared) {
  const int32_t row_bytes = in_w * in_c, row_step = dil_h * row_bytes;
  /* the input zero point (padding) as four bytes for the C form, widened for the assembly */
  const int8_t zp4[4] = {(int8_t)-x_offset, (int8_t)-x_offset, (int8_t)-x_offset, (int8_t)-x_offset};
  const uint32_t zpw = (uint32_t)(uint16_t)(int16_t)-x_offset * 0x10001u;
  const int32_t fast = TL_DW3_ASM_OK && 2 * row_step + 4 * in_c + in_c < 4096; /* TL_DW3_ROW_ASM's offsets */
  const int32_t fast5 = TL_DW3_ASM_OK && 2 * row_step + 6 * in_c + in_c < 4096;
  const int32_t gw = stride_w == 2 ? 40 : 24; /* words per group: its weights, at stride 2 its biases and requantization */
  int32_t b, oy, ox, c, k;
  (void)w, (void)multiplier, (void)k_h, (void)k_w, (void)x_offset, (void)dil_w;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      const int8_t *base = x + b * in_h * row_bytes;
      const int8_t *rows[3];
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, 3, in_h, &ky0, &ky1);
      for (k = 0; k < 3; ++k) rows[k] = k >= ky0 && k < ky1 ? base + (top + k * dil_h) * row_bytes : NULL;
      (void)zp4, (void)zpw;
      for (ox = 0; ox < out_w;) {
        const int32_t left = ox * stride_w - pad_left;
        /* outputs of a pass: three at stride 1 (two at the end of a row), two at stride 2 */
        const int32_t span = stride_w == 1 && ox + 3 > out_w ? 2 : 3 - (stride_w - 1);
        const int32_t lpad = left < 0, s3pad = left + 3 == in_w, rpad = left + 4 == in_w;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * in_c;
        const int32_t *wg = wq;
        if (stride_w == 2 && ox + 3 <= out_w && left >= -1 && left + 6 <= in_w && 7 * in_c < 4096) {
          /* three outputs over the columns left..left + 6, the first and the last possibly padding */
          const int32_t pl = left, lpad5 = left < 0, rpad5 = left + 6 == in_w;
          const int32_t *pb = ky0 == 0 && ky1 == 3 ? bias
                              : kind_bias + (row_kind[ky0 * 4 + ky1] * col_kinds + col_kind[3]) * in_c;
          int32_t run5 = 1;
          if (ky0 == 0 && ky1 == 3 && fast5) {
            const int8_t *corner = rows[0] + (pl + lpad5) * in_c; /* moves along the run */
            if (!lpad5 && !rpad5) { /* the passes from here on with no padding column */
              run5 = (out_w - ox) / 3;
              if ((in_w - 1 - left) / 6 < run5) run5 = (in_w - 1 - left) / 6;
            }
            TL_DW5_VARIANTS(TL_DW5_INNER, TL_DW3_AT_CORNER);
          } else
            TL_DW5_VARIANTS(TL_DW5_EDGE, TL_DW3_NO_SETUP);
          ox += 3 * run5;
          continue;
        }
        /* the pass's columns left..left + 4 (left + 3 for two outputs at stride 1), the first and
         * the last of them possibly padding */
        if (ox + span <= out_w && left >= -1 && (stride_w == 1 ? left + span + 1 : left + 4) <= in_w &&
            !(span == 2 && stride_w == 1 && lpad)) {
          const int32_t pl = left;
          const int32_t *pb = ky0 == 0 && ky1 == 3 ? bias
                              : kind_bias + (row_kind[ky0 * 4 + ky1] * col_kinds + col_kind[3]) * in_c;
          if (ky0 == 0 && ky1 == 3 && fast) {
            const int8_t *corner = rows[0] + (pl + lpad) * in_c;
            TL_DW3_VARIANTS(TL_DW3_INNER, TL_DW3_AT_CORNER);
          } else
            TL_DW3_VARIANTS(TL_DW3_EDGE, TL_DW3_NO_SETUP);
          ox += span;
        } else { /* one output: its valid taps only, over the bias of its kind of border */
          const int32_t kx0 = left < 0 ? -left : 0, kx1 = left + 3 > in_w ? in_w - left : 3;
          const int32_t *kb = kind_bias + (row_kind[ky0 * 4 + ky1] * col_kinds + col_kind[kx0 * 4 + kx1]) * in_c;
          const int8_t *start[3] = {NULL, NULL, NULL};
          for (k = ky0; k < ky1; ++k) start[k] = rows[k] + (left + kx0) * in_c;
          if (kx1 - kx0 == 3)
            for (c = 0; c < in_c; c += 4, wg += gw) {
              if (in_c % 4 && c + 4 > in_c) c = in_c - 4; /* the last four channels, as above */
              TL_DW1_GROUP(TL_DW1_FULL);
            }
          else
            for (c = 0; c < in_c; c += 4, wg += gw) {
              if (in_c % 4 && c + 4 > in_c) c = in_c - 4;
              TL_DW1_GROUP(TL_DW1_TWO);
            }
          ox += 1;
        }
      }
    }
}
#undef TL_DW3_ROW
#undef TL_DW3_COL
#undef TL_DW3_ROW_AT
#undef TL_DW3_INNER
#undef TL_DW3_EDGE
#undef TL_DW3_PASS
#undef TL_DW3_BOTH
#undef TL_DW3_VARIANTS
#undef TL_DW3_GROUPS
#undef TL_DW3_TAIL_IN_LOOP
#undef TL_DW5_ROW
#undef TL_DW5_ROW_AT
#undef TL_DW5_INNER
#undef TL_DW5_EDGE
#undef TL_DW5_PASS
#undef TL_DW5_GROUPS
#undef TL_DW5_VARIANTS
#undef TL_DW5_RA_TL_KEEP
#undef TL_DW5_RA_TL_DROP
#undef TL_DW5_INNER_SEED
#undef TL_DW5_INNER_NEXT
#undef TL_DW5_EDGE_NEXT
#undef TL_DW5_EDGE_SEED
#undef TL_DW3_AT_CORNER
#undef TL_DW3_NO_SETUP
#undef TL_DW3_ASM_OK
#undef TL_W32
#undef TL_SXR_TL_SXTB16
#undef TL_SXR_TL_SXTB16_ODD
#undef TL_NOT_TL_KEEP
#undef TL_NOT_TL_DROP
#undef TL_KEEP
#undef TL_DROP
#undef TL_DW1_ROW
#undef TL_DW1_PAIR
#undef TL_DW1_FULL
#undef TL_DW1_TWO
#undef TL_DW1_GROUP

/* Arguments as tl_dwconv_nhwc_s8's up to pad_left (in_c 1, `multiplier` filters, k_h = k_w = 3)
 * with per filter five pair words [w0 | w1], [w2 | w3], [w4 | w5], [w6 | w7], [w8 | 0] and the
 * folded bias, then x_offset, rq, mixed, zero, low and high as tl_dwconv3x3_s8_packed's */
TL_KERNEL void tl_dwconv3x3_s8_single(const int8_t *x, const int32_t *restrict wq, const int32_t *restrict bias, int8_t *y,
                                          const int8_t *restrict w, int32_t batches, int32_t in_h, int32_t in_w,
                                          int32_t in_c, int32_t out_h, int32_t out_w, int32_t multiplier,
                                          int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                                          int32_t dil_h, int32_t dil_w, int32_t pad_top, int32_t pad_left,
                                          int32_t x_offset, const int32_t *restrict rq, int32_t mixed, int32_t zero,
                                          int32_t low, int32_t high) {
  const int32_t xs = dil_w, rs = dil_h * in_w;
  int32_t b, oy, ox, f, ky, kx;
  (void)w, (void)in_c, (void)k_h, (void)k_w;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      const int8_t *base = x + b * in_h * in_w;
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, 3, in_h, &ky0, &ky1);
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t left = ox * stride_w - pad_left;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * multiplier;
        const int32_t *wf = wq, *rf = rq;
        int32_t v[9], kx0, kx1;
        uint32_t p0, p1, p2, p3, p4;
        tl_valid_taps(left, dil_w, 3, in_w, &kx0, &kx1);
        if (ky0 == 0 && ky1 == 3 && kx0 == 0 && kx1 == 3) {
          const int8_t *p = base + top * in_w + left;
          v[0] = p[0], v[1] = p[xs], v[2] = p[2 * xs];
          v[3] = p[rs], v[4] = p[rs + xs], v[5] = p[rs + 2 * xs];
          v[6] = p[2 * rs], v[7] = p[2 * rs + xs], v[8] = p[2 * rs + 2 * xs];
        } else
          for (ky = 0; ky < 3; ++ky)
            for (kx = 0; kx < 3; ++kx)
              v[ky * 3 + kx] = ky >= ky0 && ky < ky1 && kx >= kx0 && kx < kx1
                                   ? base[(top + ky * dil_h) * in_w + left + kx * dil_w]
                                   : -x_offset;
        p0 = tl_pkhbt((uint32_t)v[0], (uint32_t)v[1]), p1 = tl_pkhbt((uint32_t)v[2], (uint32_t)v[3]);
        p2 = tl_pkhbt((uint32_t)v[4], (uint32_t)v[5]), p3 = tl_pkhbt((uint32_t)v[6], (uint32_t)v[7]);
        p4 = (uint32_t)v[8];
        for (f = 0; f < multiplier; ++f, wf += 5, rf += 3) {
          int32_t s = bias[f];
          s = TL_SMLAD(p0, (uint32_t)wf[0], s);
          s = TL_SMLAD(p1, (uint32_t)wf[1], s);
          s = TL_SMLAD(p2, (uint32_t)wf[2], s);
          s = TL_SMLAD(p3, (uint32_t)wf[3], s);
          s = TL_SMLAD(p4, (uint32_t)wf[4], s);
          out[f] = TL_OUT_S8(s, rf, low, high);
        }
      }
    }
}

/* Arguments as tl_fc_s8's over `pixels` rows of `depth` (4, 8, 12 or 16) inputs, the weights of
 * output u as depth / 2 words: per 4 depths d, [w(d) | w(d + 2)] and [w(d + 1) | w(d + 3)];
 * rq, mixed, zero, low and high as tl_dwconv3x3_s8_packed's */
TL_KERNEL void tl_pointwise_s8_wide(const int8_t *x, const int32_t *restrict wq, const int32_t *restrict bias, int8_t *y,
                                        int32_t pixels, int32_t depth, int32_t units, const int32_t *restrict rq,
                                        int32_t mixed, int32_t zero, int32_t low, int32_t high) {
  int32_t p, u, j;
  for (p = 0; p < pixels; ++p) {
    const int8_t *px = x + p * depth;
    int8_t *out = y + p * units;
    const int32_t *wu = wq, *ru = rq;
    uint32_t e[4] = {0, 0, 0, 0}, o[4] = {0, 0, 0, 0};
    for (j = 0; j < 4 && 4 * j < depth; ++j) {
      const uint32_t v = TL_WORD(px + 4 * j);
      e[j] = TL_SXTB16(v), o[j] = TL_SXTB16_ODD(v);
    }
    for (u = 0; u < units; ++u, wu += depth / 2, ru += 3) {
      int32_t s = bias[u];
      s = TL_SMLAD(e[0], (uint32_t)wu[0], s);
      s = TL_SMLAD(o[0], (uint32_t)wu[1], s);
      if (depth >= 8) {
        s = TL_SMLAD(e[1], (uint32_t)wu[2], s);
        s = TL_SMLAD(o[1], (uint32_t)wu[3], s);
      }
      if (depth >= 12) {
        s = TL_SMLAD(e[2], (uint32_t)wu[4], s);
        s = TL_SMLAD(o[2], (uint32_t)wu[5], s);
      }
      if (depth >= 16) {
        s = TL_SMLAD(e[3], (uint32_t)wu[6], s);
        s = TL_SMLAD(o[3], (uint32_t)wu[7], s);
      }
      out[u] = TL_OUT_S8(s, ru, low, high);
    }
  }
}

#endif /* TL_CONV_DSP_H */
