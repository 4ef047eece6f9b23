/* tl_conv_gemm.h: int8 convolutions of any shape, pointwise and dense layers on cores with the
 * Armv7E-M DSP extension (Cortex-M4/M7), as a product of a few widened input columns by int8
 * weights, two 16-bit multiply-accumulates per SMLAD.
 *
 * - Columns: the window of an output pixel (its taps in NHWC order, `depth` channels each) is
 *   copied into `col` as int16 values, two pixels at a time (2 * k4 halfwords of scratch, k4 the
 *   window's size rounded up to 4). The window is read in segments of contiguous inputs (a whole
 *   window row when the dilation along the rows is 1, else one tap); each word of four inputs
 *   x0..x3 of a segment is widened by SXTB16 and its rotated form into [x0 | x2], [x1 | x3], the
 *   last (length % 4) inputs of a segment one by one. Padding taps read the input zero point, so
 *   that the input offset folds into the bias (bias + x_offset * the sum of the weights).
 * - Weights: int8, one row of k4 bytes per output channel, repacked on the host (conv_gemm.py) so
 *   that each word [w0 w1 w2 w3] of a row meets the columns' halfwords c0..c3 as
 *   SMLAD([c0 | c1], SXTB16 = [w0 | w2]) + SMLAD([c2 | c3], SXTB16 ror 8 = [w1 | w3]).
 * - Blocking: two output channels by two pixels in registers (each word of weights feeds four
 *   SMLAD, each pair of column words, one LDRD, two); a lone last pixel (and a dense layer of one
 *   row, read in place without columns) four channels at a time.
 * - Small dense rows (tl_fc_s8_row_wide): weights stored widened beside their biases, as
 *   tl_pointwise_s8_shallow's records; inputs read in place.
 * - Requantization (`mode` 0 or 1): the columns hold twice the inputs (SADD16) and the bias is
 *   doubled on the host, so the accumulators are doubled as tl_conv_dsp.h's one-SMMLAR
 *   requantization wants them (`rq`: {multiplier, K, r} per channel; mode 1 when some channel
 *   takes TFLite's recipe, r < 0); the host proved |accumulator| < 2^30. Mode 2: plain inputs and
 *   accumulators, TFLite Micro's recipe for every channel (rq: {multiplier, shift, 0}).
 *
 * Loop bounds and strides are the layer's constants: the kernels are inlined into every layer
 * in speed builds (TL_KERNEL). Without the DSP extension the same code runs on portable
 * equivalents of the instructions (tested on the host). */
#ifndef TL_CONV_GEMM_H
#define TL_CONV_GEMM_H

#include <string.h>

#include "tl_common.h"
#include "tl_conv.h"
#include "tl_conv_dsp.h"
#include "tl_fully_connected.h"

/* the functions of the layers that call these kernels (conv_gemm.py): compiled for speed in size
 * builds too with gcc (-Os allocates the blocked loops' registers badly: twice the instructions) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE_SIZE__)
#define TL_NOINLINE __attribute__((noinline, optimize("O2")))
#elif defined(__GNUC__)
#define TL_NOINLINE __attribute__((noinline))
#else
#define TL_NOINLINE
#endif

#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
#define TL_DOUBLE16(v) ((uint32_t)__sadd16(v, v))
#else
#define TL_DOUBLE16(v) (((uint32_t)(v) << 1) & 0xFFFEFFFFu)
#endif

/* the int8 output of accumulator s with the channel's words m, k, r (see above) */
static TL_INLINE int8_t tl_gemm_out(int32_t s, int32_t m, int32_t k, int32_t r, int32_t mode, int32_t zero,
                                    int32_t low, int32_t high) {
  int32_t v;
  if (mode == 2 || (mode == 1 && r < 0)) {
    v = tl_mbqm(mode == 2 ? s : s >> 1, m, (int)k) + zero;
  } else {
    const int32_t ra = (low >= zero ? 0 : s >> 31) + k; /* sign term dropped: tl_requant_doubled_clamped */
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
    __asm__("smmlar %0, %1, %2, %3" : "=r"(v) : "r"(s), "r"(m), "r"(ra));
#else
    v = (int32_t)((((int64_t)ra << 32) + (int64_t)s * m + ((int64_t)1 << 31)) >> 32);
#endif
    v >>= r;
  }
  return TL_CLAMP_OUT(v, low, high);
}

static TL_INLINE void tl_put_halves(int32_t *col, int32_t at, uint32_t even, uint32_t odd) {
  memcpy((int16_t *)col + at, &even, 4);
  memcpy((int16_t *)col + at + 2, &odd, 4);
}

/* `length` inputs from `src` (times 1 + twice) into the halfwords of `col` from `at`, in the
 * order above */
static TL_INLINE void tl_widen_segment(int32_t *col, int32_t at, const int8_t *src, int32_t length, int32_t twice) {
  int32_t j;
  for (j = 0; j + 4 <= length; j += 4) {
    const uint32_t v = TL_WORD(src + j), e = TL_SXTB16(v), o = TL_SXTB16_ODD(v);
    tl_put_halves(col, at + j, twice ? TL_DOUBLE16(e) : e, twice ? TL_DOUBLE16(o) : o);
  }
  for (j = length & ~3; j < length; ++j) ((int16_t *)col)[at + j] = (int16_t)(src[j] * (1 + twice));
}

/* 0, 2, 1, 3 for 0..3 within each group of four */
static TL_INLINE int32_t tl_swap_middle(int32_t j) { return (j & ~3) + ((j & 1) << 1) + ((j >> 1) & 1); }
/* where input j of a segment of `length` inputs lands in its halfwords */
static TL_INLINE int32_t tl_segment_slot(int32_t j, int32_t length) {
  return j < (length & ~3) ? tl_swap_middle(j) : j;
}

/* the window of output pixel `pixel` (batch-major raster order) into col from halfword `at`,
 * padding taps as `fill` */
static TL_INLINE void tl_gemm_window(const int8_t *x, int32_t *col, int32_t at, int32_t pixel, int32_t in_h,
                                     int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w, int32_t k_h,
                                     int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
                                     int32_t pad_top, int32_t pad_left, int32_t k4, int32_t fill, int32_t twice) {
  const int32_t per_image = out_h * out_w, b = pixel / per_image, oy = pixel % per_image / out_w;
  const int32_t ox = pixel % out_w, top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;
  const int32_t segment = dil_w == 1 ? k_w * in_c : in_c, taps = dil_w == 1 ? 1 : k_w;
  const int8_t *base = x + b * in_h * in_w * in_c;
  int32_t ky0, ky1, kx0, kx1, ky, kx, j, end = at;
  tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);
  tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);
  if (ky0 == 0 && ky1 == k_h && kx0 == 0 && kx1 == k_w) {
    const int8_t *corner = base + (top * in_w + left) * in_c;
    for (ky = 0; ky < k_h; ++ky)
      for (kx = 0; kx < taps; ++kx, end += segment)
        tl_widen_segment(col, end, corner + (ky * dil_h * in_w + kx * dil_w) * in_c, segment, twice);
  } else { /* padding taps hold the input zero point, whatever their slots */
    for (j = at; j < at + k4; ++j) ((int16_t *)col)[j] = (int16_t)fill;
    for (ky = ky0; ky < ky1; ++ky) {
      const int8_t *row = base + (top + ky * dil_h) * in_w * in_c;
      end = at + ky * k_w * in_c;
      if (dil_w == 1) { /* the valid taps [kx0, kx1) of a whole-row segment */
        const int8_t *src = row + (left + kx0) * in_c;
        const int32_t first = kx0 * in_c, last = kx1 * in_c;
        j = first;
        if (in_c % 4 == 0)
          for (; j + 4 <= last; j += 4) {
            const uint32_t v = TL_WORD(src + j - first), e = TL_SXTB16(v), o = TL_SXTB16_ODD(v);
            tl_put_halves(col, end + j, twice ? TL_DOUBLE16(e) : e, twice ? TL_DOUBLE16(o) : o);
          }
        for (; j < last; ++j)
          ((int16_t *)col)[end + tl_segment_slot(j, segment)] = (int16_t)(src[j - first] * (1 + twice));
      } else
        for (kx = kx0; kx < kx1; ++kx)
          tl_widen_segment(col, end + kx * in_c, row + (left + kx * dil_w) * in_c, segment, twice);
    }
  }
  for (end = at + k_h * k_w * in_c; end < at + k4; ++end) ((int16_t *)col)[end] = 0;
}

/* the next two words of columns at p (one LDRD that steps p on) */
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM) && defined(__GNUC__)
typedef struct {
  int32_t word[2];
} tl_word_pair;
#define TL_PAIR_NEXT(p, a0, a1) \
  __asm__("ldrd %0, %1, [%2], #8" : "=r"(a0), "=r"(a1), "+r"(p) : "m"(*(const tl_word_pair *)(p)))
#else
#define TL_PAIR_NEXT(p, a0, a1) (a0 = (uint32_t)(p)[0], a1 = (uint32_t)(p)[1], (p) += 2)
#endif
/* SMLAD of column words a0, a1 (halfwords c0..c3) with the weight word's halves e, o into s */
#define TL_GEMM_MAC(a0, a1, e, o, s) (s = TL_SMLAD(a1, o, TL_SMLAD(a0, e, s)))
/* body() k4 / 4 times, two per pass */
#define TL_GEMM_LOOP(body)            \
  do {                                \
    int32_t n;                        \
    if (k4 / 4 % 2) body();           \
    for (n = k4 / 8; n > 0; --n) {    \
      body();                         \
      body();                         \
    }                                 \
  } while (0)
#define TL_GEMM_ARGS mode, zero, low, high

/* two pixels' columns (c0, c1: k4 halfwords each) by every output channel */
static TL_INLINE void tl_gemm_2x2(const int32_t *c0, const int32_t *c1, const int8_t *restrict w,
                                  const int32_t *restrict bias, int8_t *y0, int8_t *y1, int32_t k4, int32_t filters,
                                  const int32_t *restrict rq, int32_t mode, int32_t zero, int32_t low, int32_t high) {
  int32_t f;
  for (f = 0; f + 2 <= filters; f += 2) {
    const int8_t *w0 = w + f * k4, *w1 = w0 + k4;
    const int32_t *p0 = c0, *p1 = c1, *r = rq + 3 * f;
    int32_t s00 = bias[f], s01 = bias[f + 1], s10 = s00, s11 = s01;
    int8_t o00, o01, o10, o11;
#define TL_GEMM_2X2()                                                                                            \
  do {                                                                                                         \
    uint32_t a0, a1, b0, b1;                                                                                   \
    const uint32_t v0 = TL_WORD(w0), v1 = TL_WORD(w1);                                                         \
    const uint32_t e0 = TL_SXTB16(v0), o0 = TL_SXTB16_ODD(v0), e1 = TL_SXTB16(v1), o1 = TL_SXTB16_ODD(v1);     \
    TL_PAIR_NEXT(p0, a0, a1);                                                                                  \
    TL_PAIR_NEXT(p1, b0, b1);                                                                                  \
    w0 += 4, w1 += 4;                                                                                          \
    TL_GEMM_MAC(a0, a1, e0, o0, s00);                                                                          \
    TL_GEMM_MAC(b0, b1, e0, o0, s10);                                                                          \
    TL_GEMM_MAC(a0, a1, e1, o1, s01);                                                                          \
    TL_GEMM_MAC(b0, b1, e1, o1, s11);                                                                          \
    TL_TAP_ORDER();                                                                                            \
  } while (0)
    TL_GEMM_LOOP(TL_GEMM_2X2);
    o00 = tl_gemm_out(s00, r[0], r[1], r[2], TL_GEMM_ARGS);
    o10 = tl_gemm_out(s10, r[0], r[1], r[2], TL_GEMM_ARGS);
    o01 = tl_gemm_out(s01, r[3], r[4], r[5], TL_GEMM_ARGS);
    o11 = tl_gemm_out(s11, r[3], r[4], r[5], TL_GEMM_ARGS);
    y0[f] = o00, y0[f + 1] = o01, y1[f] = o10, y1[f + 1] = o11;
  }
  if (f < filters) {
    const int8_t *w0 = w + f * k4;
    const int32_t *p0 = c0, *p1 = c1, *r = rq + 3 * f;
    int32_t s0 = bias[f], s1 = s0;
    int8_t o0, o1;
#define TL_GEMM_2X1()                                                                                            \
  do {                                                                                                         \
    const uint32_t v = TL_WORD(w0), e = TL_SXTB16(v), o = TL_SXTB16_ODD(v);                                    \
    uint32_t a0, a1, b0, b1;                                                                                   \
    TL_PAIR_NEXT(p0, a0, a1);                                                                                  \
    TL_PAIR_NEXT(p1, b0, b1);                                                                                  \
    w0 += 4;                                                                                                   \
    TL_GEMM_MAC(a0, a1, e, o, s0);                                                                             \
    TL_GEMM_MAC(b0, b1, e, o, s1);                                                                             \
  } while (0)
    TL_GEMM_LOOP(TL_GEMM_2X1);
    o0 = tl_gemm_out(s0, r[0], r[1], r[2], TL_GEMM_ARGS);
    o1 = tl_gemm_out(s1, r[0], r[1], r[2], TL_GEMM_ARGS);
    y0[f] = o0, y1[f] = o1;
  }
}

/* one pixel by four (or one) output channels: TL_GEMM_LOAD(a0, a1) gives the next two column
 * words of the pixel */
#define TL_GEMM_1X4()                                                                                            \
  do {                                                                                                         \
    uint32_t a0, a1, v;                                                                                        \
    TL_GEMM_LOAD(a0, a1);                                                                                      \
    v = TL_WORD(w0);                                                                                           \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(v), TL_SXTB16_ODD(v), s0);                                                   \
    v = TL_WORD(w0 + k4);                                                                                      \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(v), TL_SXTB16_ODD(v), s1);                                                   \
    v = TL_WORD(w0 + 2 * k4);                                                                                  \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(v), TL_SXTB16_ODD(v), s2);                                                   \
    v = TL_WORD(w0 + 3 * k4);                                                                                  \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(v), TL_SXTB16_ODD(v), s3);                                                   \
    w0 += 4;                                                                                                   \
    TL_TAP_ORDER();                                                                                            \
  } while (0)
#define TL_GEMM_1X1()                                                                                            \
  do {                                                                                                         \
    uint32_t a0, a1, v;                                                                                        \
    TL_GEMM_LOAD(a0, a1);                                                                                      \
    v = TL_WORD(w0);                                                                                           \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(v), TL_SXTB16_ODD(v), s0);                                                   \
    w0 += 4;                                                                                                   \
  } while (0)
/* the four outputs from f */
#define TL_GEMM_STORE4()                                                                                         \
  do {                                                                                                         \
    const int32_t *r = rq + 3 * f;                                                                             \
    const int8_t o0 = tl_gemm_out(s0, r[0], r[1], r[2], TL_GEMM_ARGS);                                         \
    const int8_t o1 = tl_gemm_out(s1, r[3], r[4], r[5], TL_GEMM_ARGS);                                         \
    const int8_t o2 = tl_gemm_out(s2, r[6], r[7], r[8], TL_GEMM_ARGS);                                         \
    const int8_t o3 = tl_gemm_out(s3, r[9], r[10], r[11], TL_GEMM_ARGS);                                       \
    y0[f] = o0, y0[f + 1] = o1, y0[f + 2] = o2, y0[f + 3] = o3;                                                \
  } while (0)

#define TL_GEMM_LOAD(a0, a1) TL_PAIR_NEXT(p0, a0, a1)
static TL_INLINE void tl_gemm_1x4(const int32_t *c0, const int8_t *restrict w, const int32_t *restrict bias,
                                  int8_t *y0, int32_t k4, int32_t filters, const int32_t *restrict rq, int32_t mode,
                                  int32_t zero, int32_t low, int32_t high) {
  int32_t f;
  for (f = 0; f + 4 <= filters; f += 4) {
    const int8_t *w0 = w + f * k4;
    const int32_t *p0 = c0;
    int32_t s0 = bias[f], s1 = bias[f + 1], s2 = bias[f + 2], s3 = bias[f + 3];
    TL_GEMM_LOOP(TL_GEMM_1X4);
    TL_GEMM_STORE4();
  }
  for (f = filters - filters % 4; f < filters; ++f) { /* the last filters % 4 */
    const int8_t *w0 = w + f * k4;
    const int32_t *p0 = c0, *r = rq + 3 * f;
    int32_t s0 = bias[f];
    TL_GEMM_LOOP(TL_GEMM_1X1);
    y0[f] = tl_gemm_out(s0, r[0], r[1], r[2], TL_GEMM_ARGS);
  }
}
#undef TL_GEMM_LOAD

/* a single row of int8 inputs widened as the product reads them (the sums doubled and added to
 * the bias at the end): the next four (the last depth
 * % 4, which land in order, as zero-padded halfwords) */
#define TL_GEMM_LOAD(a0, a1)                                                                                     \
  do {                                                                                                         \
    if (d + 4 <= depth) {                                                                                      \
      const uint32_t tl_xv = TL_WORD(x + d);                                                                   \
      a0 = TL_SXTB16(tl_xv), a1 = TL_SXTB16_ODD(tl_xv);                                                        \
    } else {                                                                                                   \
      a0 = tl_pkhbt((uint32_t)(int32_t)x[d], d + 1 < depth ? (uint32_t)(int32_t)x[d + 1] : 0u);                \
      a1 = tl_pkhbt(d + 2 < depth ? (uint32_t)(int32_t)x[d + 2] : 0u, 0u);                                     \
    }                                                                                                          \
  } while (0)
static TL_INLINE void tl_gemm_row(const int8_t *x, const int8_t *restrict w, const int32_t *restrict bias, int8_t *y0,
                                  int32_t depth, int32_t k4, int32_t filters, const int32_t *restrict rq, int32_t mode,
                                  int32_t zero, int32_t low, int32_t high) {
  const int32_t scale = mode == 2 ? 1 : 2;
  int32_t f, d;
  for (f = 0; f + 4 <= filters; f += 4) {
    const int8_t *w0 = w + f * k4;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (d = 0; d < k4; d += 4) TL_GEMM_1X4();
    s0 = tl_add_wrap_s32(bias[f], scale * s0), s1 = tl_add_wrap_s32(bias[f + 1], scale * s1);
    s2 = tl_add_wrap_s32(bias[f + 2], scale * s2), s3 = tl_add_wrap_s32(bias[f + 3], scale * s3);
    TL_GEMM_STORE4();
  }
  for (f = filters - filters % 4; f < filters; ++f) {
    const int8_t *w0 = w + f * k4;
    const int32_t *r = rq + 3 * f;
    int32_t s0 = 0;
    for (d = 0; d < k4; d += 4) TL_GEMM_1X1();
    y0[f] = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * s0), r[0], r[1], r[2], TL_GEMM_ARGS);
  }
}
#undef TL_GEMM_LOAD

/* The kernels below are inlined into the function of each layer (conv_gemm.py) in size builds
 * too: specialised to the layer's constants, they are much faster. */

/* Arguments as tl_conv_nhwc_s8's up to depth (weights repacked, [filters][k4]; bias with the
 * input offset folded in, doubled unless mode is 2), x_offset, then rq and mode (see above),
 * zero, low, high and `col`, 2 * k4 halfwords of scratch. */
static TL_INLINE void tl_conv_nhwc_s8_gemm(const int8_t *x, const int8_t *restrict w, const int32_t *restrict bias,
    int8_t *y, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
    int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
    int32_t pad_top, int32_t pad_left, int32_t depth, int32_t x_offset, const int32_t *restrict rq, int32_t mode,
    int32_t zero, int32_t low, int32_t high, int32_t *col) {
  const int32_t k4 = (k_h * k_w * depth + 3) & ~3, pixels = batches * out_h * out_w;
  const int32_t twice = mode != 2, fill = -x_offset * (1 + twice);
  int32_t p;
  for (p = 0; p + 2 <= pixels; p += 2) {
    tl_gemm_window(x, col, 0, p, in_h, in_w, in_c, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top,
                   pad_left, k4, fill, twice);
    tl_gemm_window(x, col, k4, p + 1, in_h, in_w, in_c, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w,
                   pad_top, pad_left, k4, fill, twice);
    tl_gemm_2x2(col, col + k4 / 2, w, bias, y + p * filters, y + (p + 1) * filters, k4, filters, rq, mode, zero, low,
                high);
  }
  if (p < pixels) {
    tl_gemm_window(x, col, 0, p, in_h, in_w, in_c, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top,
                   pad_left, k4, fill, twice);
    tl_gemm_1x4(col, w, bias, y + p * filters, k4, filters, rq, mode, zero, low, high);
  }
}

/* Without columns (depth a multiple of 4): the inputs read in place, widened as the product
 * reads them, padding taps as words of the input zero point. */
/* s0..s3 += the inputs from px (or the zero-point word when px is NULL) times the weights from
 * w0 (four rows k4 apart), `words` words */
static TL_INLINE void tl_direct_1x4(const int8_t *px, uint32_t zero_word, const int8_t *w0, int32_t k4, int32_t words,
                                   int32_t *s0, int32_t *s1, int32_t *s2, int32_t *s3) {
  int32_t a = *s0, b = *s1, c = *s2, d = *s3, j;
  for (j = 0; j < words; ++j, w0 += 4) {
    const uint32_t xv = px ? TL_WORD(px + 4 * j) : zero_word, x0 = TL_SXTB16(xv), x1 = TL_SXTB16_ODD(xv);
    uint32_t v = TL_WORD(w0);
    TL_GEMM_MAC(x0, x1, TL_SXTB16(v), TL_SXTB16_ODD(v), a);
    v = TL_WORD(w0 + k4);
    TL_GEMM_MAC(x0, x1, TL_SXTB16(v), TL_SXTB16_ODD(v), b);
    v = TL_WORD(w0 + 2 * k4);
    TL_GEMM_MAC(x0, x1, TL_SXTB16(v), TL_SXTB16_ODD(v), c);
    v = TL_WORD(w0 + 3 * k4);
    TL_GEMM_MAC(x0, x1, TL_SXTB16(v), TL_SXTB16_ODD(v), d);
    TL_TAP_ORDER();
  }
  *s0 = a, *s1 = b, *s2 = c, *s3 = d;
}
static TL_INLINE int32_t tl_direct_1x1(const int8_t *px, uint32_t zero_word, const int8_t *w0, int32_t words,
                                      int32_t s) {
  int32_t j;
  for (j = 0; j < words; ++j, w0 += 4) {
    const uint32_t xv = px ? TL_WORD(px + 4 * j) : zero_word, v = TL_WORD(w0);
    TL_GEMM_MAC(TL_SXTB16(xv), TL_SXTB16_ODD(xv), TL_SXTB16(v), TL_SXTB16_ODD(v), s);
  }
  return s;
}

/* s00, s10 (pixels a at px, b at px + nb), s01, s11 (their next channel) += the word of inputs at
 * `at` bytes from there times the weights at w0 + at and w0 + k4 + at; a pixel whose flag (A, B:
 * literal 0 or 1) is 0 reads the zero-point word instead (a padding tap, its inputs not read) */
#define TL_DIRECT_2X2(at, A, B, nb)                                                                                  \
  do {                                                                                                         \
    const uint32_t xa = (A) ? TL_WORD(px + (at)) : zero_word, xb = (B) ? TL_WORD(px + (nb) + (at)) : zero_word;   \
    const uint32_t v0 = TL_WORD(w0 + (at)), v1 = TL_WORD(w0 + k4 + (at));                                      \
    const uint32_t a0 = TL_SXTB16(xa), a1 = TL_SXTB16_ODD(xa), b0 = TL_SXTB16(xb), b1 = TL_SXTB16_ODD(xb);    \
    const uint32_t e0 = TL_SXTB16(v0), o0 = TL_SXTB16_ODD(v0), e1 = TL_SXTB16(v1), o1 = TL_SXTB16_ODD(v1);    \
    TL_GEMM_MAC(a0, a1, e0, o0, s00);                                                                          \
    TL_GEMM_MAC(b0, b1, e0, o0, s10);                                                                          \
    TL_GEMM_MAC(a0, a1, e1, o1, s01);                                                                          \
    TL_GEMM_MAC(b0, b1, e1, o1, s11);                                                                          \
    TL_TAP_ORDER();                                                                                            \
  } while (0)
/* TL_DIRECT_2X2 over `bytes` inputs (a multiple of step), step / 4 words per pass, px (when read)
 * and w0 moved on */
#define TL_DIRECT_RUN(A, B, nb, bytes)                                                                               \
  for (n = (bytes) / step; n > 0; --n, w0 += step) {                                                           \
    TL_DIRECT_2X2(0, A, B, nb);                                                                                    \
    if (step >= 8) TL_DIRECT_2X2(4, A, B, nb);                                                                     \
    if (step >= 16) {                                                                                          \
      TL_DIRECT_2X2(8, A, B, nb);                                                                                  \
      TL_DIRECT_2X2(12, A, B, nb);                                                                                 \
    }                                                                                                          \
    if ((A) || (B)) px += step;                                                                                \
  }
/* Arguments as tl_conv_nhwc_s8_gemm's without col. */
static TL_INLINE void tl_conv_nhwc_s8_direct(const int8_t *x, const int8_t *restrict w, const int32_t *restrict bias,
    int8_t *y, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
    int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
    int32_t pad_top, int32_t pad_left, int32_t depth, int32_t x_offset, const int32_t *restrict rq, int32_t mode,
    int32_t zero, int32_t low, int32_t high) {
  const int32_t k4 = k_h * k_w * depth, segment = dil_w == 1 ? k_w * in_c : in_c, taps = dil_w == 1 ? 1 : k_w;
  const int32_t scale = mode == 2 ? 1 : 2, next = stride_w * in_c;
  const int32_t step = in_c % 16 == 0 ? 16 : in_c % 8 == 0 ? 8 : 4; /* divides segment and in_c */
  const uint32_t zero_word = (uint32_t)(uint8_t)(int8_t)-x_offset * 0x01010101u;
  int32_t b, oy, ox, f, ky, t;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      const int8_t *base = x + b * in_h * in_w * in_c;
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);
      for (ox = 0; ox < out_w;) {
        const int32_t left = ox * stride_w - pad_left;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * filters;
        int32_t kx0, kx1, kb0, kb1; /* the valid taps of the pixel and of the next */
        tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);
        tl_valid_taps(left + stride_w, dil_w, k_w, in_w, &kb0, &kb1);
        if (ky0 == 0 && ky1 == k_h && kx0 == 0 && kx1 == k_w && ox + 1 < out_w &&
            left + stride_w + (k_w - 1) * dil_w < in_w) { /* two pixels inside */
          const int8_t *corner = base + (top * in_w + left) * in_c;
          for (f = 0; f + 2 <= filters; f += 2) {
            const int8_t *w0 = w + f * k4;
            const int32_t *r = rq + 3 * f;
            int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
            int8_t o00, o01, o10, o11;
            for (ky = 0; ky < k_h; ++ky)
              for (t = 0; t < taps; ++t) {
                const int8_t *px = corner + (ky * dil_h * in_w + t * dil_w) * in_c;
                int32_t n;
                TL_OPAQUE(px);
                TL_DIRECT_RUN(1, 1, next, segment);
              }
            o00 = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * s00), r[0], r[1], r[2], TL_GEMM_ARGS);
            o10 = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * s10), r[0], r[1], r[2], TL_GEMM_ARGS);
            o01 = tl_gemm_out(tl_add_wrap_s32(bias[f + 1], scale * s01), r[3], r[4], r[5], TL_GEMM_ARGS);
            o11 = tl_gemm_out(tl_add_wrap_s32(bias[f + 1], scale * s11), r[3], r[4], r[5], TL_GEMM_ARGS);
            out[f] = o00, out[f + 1] = o01, out[filters + f] = o10, out[filters + f + 1] = o11;
          }
          for (; f < filters; ++f) {
            const int32_t *r = rq + 3 * f;
            int32_t sa = 0, sb = 0;
            for (ky = 0; ky < k_h; ++ky)
              for (t = 0; t < taps; ++t) {
                const int8_t *px = corner + (ky * dil_h * in_w + t * dil_w) * in_c;
                const int8_t *w0 = w + f * k4 + (ky * taps + t) * segment;
                sa = tl_direct_1x1(px, zero_word, w0, segment / 4, sa);
                sb = tl_direct_1x1(px + next, zero_word, w0, segment / 4, sb);
              }
            out[f] = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * sa), r[0], r[1], r[2], TL_GEMM_ARGS);
            out[filters + f] = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * sb), r[0], r[1], r[2], TL_GEMM_ARGS);
          }
          ox += 2;
        } else if (ox + 1 < out_w && dil_w == 1 && filters % 2 == 0 && kx1 == k_w && kb0 == 0 && kx0 <= kb1) {
          /* a pair at a border: padding columns on the left of the first pixel only, on the right
           * of the second only, and rows of padding (even filters, whole rows as segments) */
          const int32_t pa = kx0 * in_c, pb = kb1 * in_c; /* a's inputs from pa, b's up to pb */
          for (f = 0; f < filters; f += 2) {
            const int8_t *w0 = w + f * k4;
            const int32_t *r = rq + 3 * f;
            int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
            int8_t o00, o01, o10, o11;
            for (ky = 0; ky < k_h; ++ky) {
              const int8_t *px;
              int32_t n;
              if (ky < ky0 || ky >= ky1) { /* a row of padding */
                TL_DIRECT_RUN(0, 0, 0, segment);
                continue;
              }
              px = base + ((top + ky * dil_h) * in_w + left + stride_w) * in_c;
              TL_OPAQUE(px);
              TL_DIRECT_RUN(0, 1, 0, pa); /* px: b's inputs */
              px -= next;                  /* px: a's inputs */
              TL_DIRECT_RUN(1, 1, next, pb - pa);
              TL_DIRECT_RUN(1, 0, next, segment - pb);
            }
            o00 = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * s00), r[0], r[1], r[2], TL_GEMM_ARGS);
            o10 = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * s10), r[0], r[1], r[2], TL_GEMM_ARGS);
            o01 = tl_gemm_out(tl_add_wrap_s32(bias[f + 1], scale * s01), r[3], r[4], r[5], TL_GEMM_ARGS);
            o11 = tl_gemm_out(tl_add_wrap_s32(bias[f + 1], scale * s11), r[3], r[4], r[5], TL_GEMM_ARGS);
            out[f] = o00, out[f + 1] = o01, out[filters + f] = o10, out[filters + f + 1] = o11;
          }
          ox += 2;
        } else { /* one pixel, its padding taps as the zero-point word */
          for (f = 0; f < filters;) {
            const int32_t group = filters - f >= 4 ? 4 : 1;
            int32_t s[4] = {0, 0, 0, 0}, i;
            for (ky = 0; ky < k_h; ++ky) {
              const int valid_row = ky >= ky0 && ky < ky1;
              const int32_t row_at = (top + ky * dil_h) * in_w + left;
              for (t = 0; t < taps; ++t) {
                const int8_t *w0 = w + f * k4 + (ky * taps + t) * segment;
                /* [0, first) and [last, segment) are padding, [first, last) inputs */
                const int32_t first = !valid_row ? segment
                                      : dil_w == 1 ? kx0 * in_c
                                                   : (t >= kx0 && t < kx1 ? 0 : segment);
                const int32_t last = !valid_row ? segment : dil_w == 1 ? kx1 * in_c : segment;
                const int8_t *px = first < last ? base + (row_at + t * dil_w) * in_c + first : NULL;
                if (group == 4) {
                  tl_direct_1x4(NULL, zero_word, w0, k4, first / 4, &s[0], &s[1], &s[2], &s[3]);
                  tl_direct_1x4(px, zero_word, w0 + first, k4, (last - first) / 4, &s[0], &s[1], &s[2], &s[3]);
                  tl_direct_1x4(NULL, zero_word, w0 + last, k4, (segment - last) / 4, &s[0], &s[1], &s[2], &s[3]);
                } else {
                  s[0] = tl_direct_1x1(NULL, zero_word, w0, first / 4, s[0]);
                  s[0] = tl_direct_1x1(px, zero_word, w0 + first, (last - first) / 4, s[0]);
                  s[0] = tl_direct_1x1(NULL, zero_word, w0 + last, (segment - last) / 4, s[0]);
                }
              }
            }
            for (i = 0; i < group; ++i, ++f)
              out[f] = tl_gemm_out(tl_add_wrap_s32(bias[f], scale * s[i]), rq[3 * f], rq[3 * f + 1], rq[3 * f + 2],
                                   TL_GEMM_ARGS);
          }
          ox += 1;
        }
      }
    }
}

/* Arguments as tl_fc_s8's over `rows` rows of `depth` inputs (weights repacked, [units][k4],
 * bias with the input offset folded in, doubled unless mode is 2) up to units, then rq, mode,
 * zero, low, high as tl_conv_nhwc_s8_gemm's and `col`, 2 * k4 halfwords of scratch (NULL for a
 * single row, whose inputs are widened as the product reads them). */
static TL_INLINE void tl_fc_s8_gemm(const int8_t *x, const int8_t *restrict w, const int32_t *restrict bias,
    int8_t *y, int32_t rows, int32_t depth, int32_t units, const int32_t *restrict rq, int32_t mode, int32_t zero,
    int32_t low, int32_t high, int32_t *col) {
  const int32_t k4 = (depth + 3) & ~3, twice = mode != 2;
  int32_t r, k;
  for (r = 0; r + 2 <= rows; r += 2) {
    tl_widen_segment(col, 0, x + r * depth, depth, twice);
    tl_widen_segment(col, k4, x + (r + 1) * depth, depth, twice);
    for (k = depth; k < k4; ++k) ((int16_t *)col)[k] = ((int16_t *)col)[k4 + k] = 0;
    tl_gemm_2x2(col, col + k4 / 2, w, bias, y + r * units, y + (r + 1) * units, k4, units, rq, mode, zero, low, high);
  }
  if (r < rows) tl_gemm_row(x + r * depth, w, bias, y + r * units, depth, k4, units, rq, mode, zero, low, high);
}

/* A single row (tl_fc_s8_row): the weights as words ([units][k4] bytes as above), the output
 * channels in groups of four (then two, then one) whose rows are interleaved word by word (word
 * j of channels f..f+3, then word j + 1), so that one LDRD brings two channels' words. Per word
 * of four inputs and four channels: one load and two SXTB16 of the inputs, two LDRD, eight
 * SXTB16 and eight SMLAD (21 instructions for 16 MACs). `rq_step` is 3, or 0 when every channel
 * shares one {m, K, r} (the words then stay in registers or fold into the instructions). */
#define TL_ROW_MAC2(a0, a1, sa, sb)                                                                              \
  do {                                                                                                         \
    uint32_t tl_va, tl_vb;                                                                                     \
    TL_PAIR_NEXT(wp, tl_va, tl_vb);                                                                            \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(tl_va), TL_SXTB16_ODD(tl_va), sa);                                           \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(tl_vb), TL_SXTB16_ODD(tl_vb), sb);                                           \
  } while (0)
#define TL_ROW_MAC2_S01(a0, a1) TL_ROW_MAC2(a0, a1, s0, s1)
#define TL_ROW_MAC1(a0, a1)                                                                                      \
  do {                                                                                                         \
    const uint32_t tl_v = (uint32_t)*wp++;                                                                     \
    TL_GEMM_MAC(a0, a1, TL_SXTB16(tl_v), TL_SXTB16_ODD(tl_v), s0);                                             \
  } while (0)
#define TL_ROW_MAC4(a0, a1)                                                                                      \
  do {                                                                                                         \
    TL_ROW_MAC2(a0, a1, s0, s1);                                                                               \
    TL_ROW_MAC2(a0, a1, s2, s3);                                                                               \
  } while (0)
/* body(a0, a1) over every word of the row: the whole words four per pass, then the last
 * partial one (tail0, tail1) */
#define TL_ROW_WORD(body, at)                                                                                    \
  do {                                                                                                         \
    const uint32_t tl_x = TL_WORD(px + (at));                                                                  \
    body(TL_SXTB16(tl_x), TL_SXTB16_ODD(tl_x));                                                                \
    TL_TAP_ORDER();                                                                                            \
  } while (0)
#define TL_ROW_LOOP(body)                                                                                        \
  do {                                                                                                         \
    const int8_t *px = x;                                                                                      \
    int32_t n;                                                                                                 \
    for (n = words / 4; n > 0; --n, px += 16) {                                                                \
      TL_ROW_WORD(body, 0);                                                                                    \
      TL_ROW_WORD(body, 4);                                                                                    \
      TL_ROW_WORD(body, 8);                                                                                    \
      TL_ROW_WORD(body, 12);                                                                                   \
    }                                                                                                          \
    for (n = words % 4; n > 0; --n, px += 4) TL_ROW_WORD(body, 0);                                             \
    if (depth % 4) body(tail0, tail1);                                                                         \
  } while (0)
#define TL_ROW_OUT(s, i) tl_gemm_out(tl_add_wrap_s32(bias[f + (i)], scale * (s)), rq[rq_step * (f + (i))],      \
                                     rq[rq_step * (f + (i)) + 1], rq[rq_step * (f + (i)) + 2], TL_GEMM_ARGS)
/* Arguments as tl_fc_s8_gemm's for one row (weights as above) up to rq, then mode, zero, low,
 * high and rq_step. */
static TL_INLINE void tl_fc_s8_row(const int8_t *x, const int32_t *restrict w, const int32_t *restrict bias,
                                   int8_t *y, int32_t depth, int32_t units, const int32_t *restrict rq, int32_t mode,
                                   int32_t zero, int32_t low, int32_t high, int32_t rq_step) {
  const int32_t words = depth / 4, scale = mode == 2 ? 1 : 2, last = depth & ~3;
  const int32_t *wp = w;
  uint32_t tail0 = 0, tail1 = 0;
  int32_t f;
  if (depth % 4) { /* the last depth % 4 inputs, in order, as zero-padded halfwords */
    tail0 = tl_pkhbt((uint32_t)(int32_t)x[last], depth % 4 > 1 ? (uint32_t)(int32_t)x[last + 1] : 0u);
    tail1 = depth % 4 > 2 ? (uint32_t)(int32_t)x[last + 2] & 0xFFFFu : 0u;
  }
  for (f = 0; f + 4 <= units; f += 4) {
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int8_t o0, o1, o2, o3;
    TL_ROW_LOOP(TL_ROW_MAC4);
    o0 = TL_ROW_OUT(s0, 0), o1 = TL_ROW_OUT(s1, 1), o2 = TL_ROW_OUT(s2, 2), o3 = TL_ROW_OUT(s3, 3);
    y[f] = o0, y[f + 1] = o1, y[f + 2] = o2, y[f + 3] = o3;
  }
  if (units % 4 >= 2) {
    int32_t s0 = 0, s1 = 0;
    TL_ROW_LOOP(TL_ROW_MAC2_S01);
    y[f] = TL_ROW_OUT(s0, 0), y[f + 1] = TL_ROW_OUT(s1, 1);
    f += 2;
  }
  if (units % 2) {
    int32_t s0 = 0;
    TL_ROW_LOOP(TL_ROW_MAC1);
    y[f] = TL_ROW_OUT(s0, 0);
  }
}

/* Shallow 1x1 convolutions (tl_pointwise_s8_shallow), depth 4, 8, 12 or 16, output pixels
 * `rows` x `cols` read from x + row * row_step + col * col_step (any stride, no padding): a
 * pixel's inputs widened once into registers (SXTB16 and its rotated form: [x0 | x2], [x1 | x3]
 * per word), and per output channel one record of words {2 * bias, the weights doubled and
 * widened in the same order (depth / 2 words), m, K, r}, read two words per LDRD: the
 * accumulator comes out doubled for the one-SMMLAR requantization (mode 0 of tl_gemm_out).
 * Depths 4 and 8 take two pixels per pass, sharing each record between them; 12 and 16 one. */

/* The output of accumulator s of a record: tl_gemm_out's mode 0, or with `shift` (a layer's
 * constant, 0 for none) the layer's common shift R: the host scaled the channel's weights and bias
 * by 2^(d+1) (d = R - r >= 1) and stored Kc = 2^(d-1) + 2^(R-1) + zero * 2^R in k, so that the
 * truncating SMMLA's high word (Kc * 2^32 + s m) >> 32, shifted by R inside SSAT, is
 * floor((x m + 2^30 + 2^(r-1) 2^31) / 2^(31+r)) + zero: MultiplyByQuantizedMultiplier(x, m, -r)
 * + zero for x >= 0, and at most zero otherwise (used only when low >= zero, as the sign term's
 * drop above). */
static TL_INLINE int8_t tl_pw_out(int32_t s, int32_t m, int32_t k, int32_t r, int32_t shift, int32_t zero,
                                  int32_t low, int32_t high) {
  int32_t v;
  if (!shift) return tl_gemm_out(s, m, k, r, 0, zero, low, high);
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
  __asm__("smmla %0, %1, %2, %3" : "=r"(v) : "r"(s), "r"(m), "r"(k));
#else
  v = (int32_t)(((int64_t)k * ((int64_t)1 << 32) + (int64_t)s * m) >> 32);
#endif
  return TL_CLAMP_OUT(v >> shift, low, high);
}

/* A small dense row (tl_fc_s8_row_wide; at most 4,096 weights): the weights stored widened and
 * scaled as tl_pointwise_s8_shallow's, so that no SXTB16 of a weight is needed: records of four
 * channels {their four biases, then per word of four inputs the channels' [w0 | w2], [w1 | w3]
 * in turn}, then of two (units % 4 >= 2) and of a last one {bias, its words}; the last depth % 4
 * inputs as one more word, in order and zero-padded ([x0 | x1], [x2 | 0]), and so their weights. Per
 * word of inputs and four channels: one load and two SXTB16 of the inputs, four LDRD and eight
 * SMLAD (15 instructions for 16 MACs); the accumulators start at the biases. The output as
 * tl_pw_out's, `rq` {m, K, r} per channel (`rq_step` 3) or once for all (0). */
#define TL_WIDE_MAC(s)                                                                                           \
  do {                                                                                                         \
    uint32_t tl_e, tl_o;                                                                                       \
    TL_PAIR_NEXT(rp, tl_e, tl_o);                                                                              \
    s = TL_SMLAD(a0, tl_e, s);                                                                                 \
    if (a1_used) s = TL_SMLAD(a1, tl_o, s); /* not for a tail of 1 or 2 inputs */                              \
  } while (0)
#define TL_WIDE_OUT(s, i) tl_pw_out(s, rq[rq_step * (f + (i))], rq[rq_step * (f + (i)) + 1],                    \
                                    rq[rq_step * (f + (i)) + 2], shift, zero, low, high)
/* tl_pw_out's output of s before its clamp to [low, high] (saturated to int8 only) */
static TL_INLINE int32_t tl_wide_sat(int32_t s, const int32_t *restrict rq, int32_t at, int32_t shift, int32_t zero) {
  int32_t v;
  if (!shift) return tl_pw_out(s, rq[at], rq[at + 1], rq[at + 2], shift, zero, -128, 127);
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
  __asm__("smmla %0, %1, %2, %3" : "=r"(v) : "r"(s), "r"(rq[at]), "r"(rq[at + 1]));
  return __ssat(v >> shift, 8);
#else
  v = (int32_t)(((int64_t)rq[at + 1] * ((int64_t)1 << 32) + (int64_t)s * rq[at]) >> 32);
  return tl_clamp_i32(v >> shift, -128, 127);
#endif
}
/* y[0..3] = v0..v3 (int8 values) clamped to [low, high]: on the DSP packed into one word and
 * clamped per byte by SSUB8 and SEL (two instructions per bound instead of three per output) */
static TL_INLINE void tl_store4_clamped(int8_t *y, int32_t v0, int32_t v1, int32_t v2, int32_t v3, int32_t low,
                                        int32_t high) {
#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM) && defined(__GNUC__)
  uint32_t w = (uint32_t)v0, t;
  __asm__("bfi %0, %1, #8, #8\n\tbfi %0, %2, #16, #8\n\tbfi %0, %3, #24, #8" : "+r"(w) : "r"(v1), "r"(v2), "r"(v3));
  if (low > -128)
    __asm__("ssub8 %1, %0, %2\n\tsel %0, %0, %2" : "+r"(w), "=&r"(t) : "r"((uint32_t)(uint8_t)low * 0x01010101u) : "cc");
  if (high < 127)
    __asm__("ssub8 %1, %2, %0\n\tsel %0, %0, %2" : "+r"(w), "=&r"(t) : "r"((uint32_t)(uint8_t)high * 0x01010101u) : "cc");
  memcpy(y, &w, 4);
#else
  y[0] = TL_CLAMP_OUT(v0, low, high), y[1] = TL_CLAMP_OUT(v1, low, high);
  y[2] = TL_CLAMP_OUT(v2, low, high), y[3] = TL_CLAMP_OUT(v3, low, high);
#endif
}
/* body() on the word of inputs at px + at (a0, a1 its halves): the last words % 4 words first,
 * one by one, then four per pass */
#define TL_WIDE_WORD(body, at)                                                                                   \
  do {                                                                                                         \
    const uint32_t tl_x = TL_WORD(px + (at)), a0 = TL_SXTB16(tl_x), a1 = TL_SXTB16_ODD(tl_x);                 \
    const int a1_used = 1;                                                                                     \
    body();                                                                                                    \
    TL_TAP_ORDER();                                                                                            \
  } while (0)
#define TL_WIDE_LOOP(body)                                                                                       \
  do {                                                                                                         \
    const int8_t *px = x;                                                                                      \
    int32_t n;                                                                                                 \
    if (depth / 4 % 4 >= 1) TL_WIDE_WORD(body, 0);                                                             \
    if (depth / 4 % 4 >= 2) TL_WIDE_WORD(body, 4);                                                             \
    if (depth / 4 % 4 >= 3) TL_WIDE_WORD(body, 8);                                                             \
    px += depth / 4 % 4 * 4;                                                                                   \
    for (n = depth / 16; n > 0; --n, px += 16) {                                                               \
      TL_WIDE_WORD(body, 0);                                                                                   \
      TL_WIDE_WORD(body, 4);                                                                                   \
      TL_WIDE_WORD(body, 8);                                                                                   \
      TL_WIDE_WORD(body, 12);                                                                                  \
    }                                                                                                          \
    if (depth % 4) {                                                                                           \
      const uint32_t a0 = tail0, a1 = tail1;                                                                   \
      const int a1_used = depth % 4 > 2;                                                                       \
      body();                                                                                                  \
    }                                                                                                          \
  } while (0)
#define TL_WIDE_MAC4()                                                                                           \
  do {                                                                                                         \
    TL_WIDE_MAC(s0);                                                                                           \
    TL_WIDE_MAC(s1);                                                                                           \
    TL_WIDE_MAC(s2);                                                                                           \
    TL_WIDE_MAC(s3);                                                                                           \
  } while (0)
#define TL_WIDE_MAC2()                                                                                           \
  do {                                                                                                         \
    TL_WIDE_MAC(s0);                                                                                           \
    TL_WIDE_MAC(s1);                                                                                           \
  } while (0)
#define TL_WIDE_MAC1() TL_WIDE_MAC(s0)
static TL_INLINE void tl_fc_s8_row_wide(const int8_t *x, const int32_t *restrict records, int8_t *y, int32_t depth,
                                       int32_t units, const int32_t *restrict rq, int32_t rq_step, int32_t shift,
                                       int32_t zero, int32_t low, int32_t high) {
  const int32_t *rp = records, last = depth & ~3;
  uint32_t tail0 = 0, tail1 = 0;
  int32_t f;
  if (depth % 4) {
    tail0 = tl_pkhbt((uint32_t)(int32_t)x[last], depth % 4 > 1 ? (uint32_t)(int32_t)x[last + 1] : 0u);
    tail1 = depth % 4 > 2 ? (uint32_t)(int32_t)x[last + 2] & 0xFFFFu : 0u;
  }
#define TL_WIDE_GROUP()                                                                                          \
  do {                                                                                                         \
    int32_t s0, s1, s2, s3;                                                                                    \
    TL_PAIR_NEXT(rp, s0, s1);                                                                                  \
    TL_PAIR_NEXT(rp, s2, s3);                                                                                  \
    TL_WIDE_LOOP(TL_WIDE_MAC4);                                                                                \
    if (low > -128 || high < 127) { /* saturated to int8 one by one, clamped four at a time */                 \
      tl_store4_clamped(y + f, tl_wide_sat(s0, rq, rq_step * f, shift, zero),                                  \
                        tl_wide_sat(s1, rq, rq_step * (f + 1), shift, zero),                                   \
                        tl_wide_sat(s2, rq, rq_step * (f + 2), shift, zero),                                   \
                        tl_wide_sat(s3, rq, rq_step * (f + 3), shift, zero), low, high);                       \
    } else {                                                                                                   \
      const int8_t o0 = TL_WIDE_OUT(s0, 0), o1 = TL_WIDE_OUT(s1, 1), o2 = TL_WIDE_OUT(s2, 2);                 \
      const int8_t o3 = TL_WIDE_OUT(s3, 3);                                                                    \
      y[f] = o0, y[f + 1] = o1, y[f + 2] = o2, y[f + 3] = o3;                                                  \
    }                                                                                                          \
    f += 4;                                                                                                    \
  } while (0)
  for (f = 0; depth <= 8 && f + 16 <= units;) { /* four groups per pass when they are short */
    TL_WIDE_GROUP();
    TL_WIDE_GROUP();
    TL_WIDE_GROUP();
    TL_WIDE_GROUP();
  }
  while (f + 8 <= units) { /* else two */
    TL_WIDE_GROUP();
    TL_WIDE_GROUP();
  }
  if (units - f >= 4) TL_WIDE_GROUP();
  if (units - f >= 2) {
    int32_t s0, s1;
    TL_PAIR_NEXT(rp, s0, s1);
    TL_WIDE_LOOP(TL_WIDE_MAC2);
    y[f] = TL_WIDE_OUT(s0, 0), y[f + 1] = TL_WIDE_OUT(s1, 1);
    f += 2;
  }
  for (; f < units; ++f) {
    int32_t s0 = *rp++;
    TL_WIDE_LOOP(TL_WIDE_MAC1);
    y[f] = TL_WIDE_OUT(s0, 0);
  }
}

/* the next record from rp on (words {2 * bias, w0 .. w(depth / 2 - 1), m, K, r}, two per LDRD):
 * the weight words multiplied into sa (and by extra() into sb) against the pixel's widened
 * inputs a0..a7 in that order, m, K and r left in m, k, r */
#define TL_PW_RECORD(sa, a0, a1, a2, a3, a4, a5, a6, a7, extra)                                                 \
  do {                                                                                                         \
    uint32_t tl_w0, tl_w1;                                                                                     \
    TL_PAIR_NEXT(rp, sa, tl_w1);                                                                               \
    extra(sb = sa, b0, tl_w1);                                                                                 \
    sa = TL_SMLAD(a0, tl_w1, sa);                                                                              \
    if (depth == 4) {                                                                                          \
      TL_PAIR_NEXT(rp, tl_w0, m);                                                                              \
      extra((void)0, b1, tl_w0);                                                                               \
      sa = TL_SMLAD(a1, tl_w0, sa);                                                                            \
    } else {                                                                                                   \
      TL_PAIR_NEXT(rp, tl_w0, tl_w1);                                                                          \
      extra((void)0, b1, tl_w0), extra((void)0, b2, tl_w1);                                                    \
      sa = TL_SMLAD(a1, tl_w0, sa), sa = TL_SMLAD(a2, tl_w1, sa);                                              \
      if (depth >= 12) {                                                                                       \
        TL_PAIR_NEXT(rp, tl_w0, tl_w1);                                                                        \
        sa = TL_SMLAD(a3, tl_w0, sa), sa = TL_SMLAD(a4, tl_w1, sa);                                            \
      }                                                                                                        \
      if (depth >= 16) {                                                                                       \
        TL_PAIR_NEXT(rp, tl_w0, tl_w1);                                                                        \
        sa = TL_SMLAD(a5, tl_w0, sa), sa = TL_SMLAD(a6, tl_w1, sa);                                            \
      }                                                                                                        \
      TL_PAIR_NEXT(rp, tl_w0, m);                                                                              \
      if (depth == 8) extra((void)0, b3, tl_w0);                                                               \
      sa = TL_SMLAD(depth == 8 ? a3 : depth == 12 ? a5 : a7, tl_w0, sa);                                       \
    }                                                                                                          \
    if (shift)                                                                                                 \
      k = (uint32_t)rp[0], r = 0, rp += 2; /* r's word unused: one LDR, one register less */                   \
    else                                                                                                       \
      TL_PAIR_NEXT(rp, k, r);                                                                                  \
  } while (0)
#define TL_PW_SECOND(first, c, w) (first, sb = TL_SMLAD(c, w, sb))
#define TL_PW_NONE(first, c, w) ((void)0)
/* a pixel's inputs from px widened: [x0 | x2] into e0, [x1 | x3] into o0, and so on per word */
#define TL_PW_WIDEN(px, e0, o0, e1, o1, e2, o2, e3, o3)                                                          \
  do {                                                                                                         \
    uint32_t tl_v = TL_WORD(px);                                                                               \
    e0 = TL_SXTB16(tl_v), o0 = TL_SXTB16_ODD(tl_v);                                                            \
    if (depth >= 8) tl_v = TL_WORD((px) + 4), e1 = TL_SXTB16(tl_v), o1 = TL_SXTB16_ODD(tl_v);                 \
    if (depth >= 12) tl_v = TL_WORD((px) + 8), e2 = TL_SXTB16(tl_v), o2 = TL_SXTB16_ODD(tl_v);                \
    if (depth >= 16) tl_v = TL_WORD((px) + 12), e3 = TL_SXTB16(tl_v), o3 = TL_SXTB16_ODD(tl_v);               \
  } while (0)
static TL_INLINE void tl_pointwise_s8_shallow(const int8_t *x, const int32_t *restrict records, int8_t *y,
                                             int32_t rows, int32_t cols, int32_t row_step, int32_t col_step,
                                             int32_t depth, int32_t units, int32_t zero, int32_t low, int32_t high,
                                             int32_t shift) {
  const int32_t *const end = records + units * (4 + depth / 2);
  int32_t i, c;
  for (i = 0; i < rows; ++i) {
    const int8_t *px = x + i * row_step;
    int8_t *out = y + i * cols * units;
    for (c = 0; depth <= 8 && c + 2 <= cols; c += 2, px += 2 * col_step, out += 2 * units) {
      const int32_t *rp = records;
      int8_t *o = out;
      uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
      TL_PW_WIDEN(px, a0, a1, a2, a3, a0, a0, a0, a0);
      TL_PW_WIDEN(px + col_step, b0, b1, b2, b3, b0, b0, b0, b0);
#define TL_PW_PAIR()                                                                                             \
  do {                                                                                                         \
    uint32_t m, k, r;                                                                                          \
    int32_t sa, sb;                                                                                            \
    TL_PW_RECORD(sa, a0, a1, a2, a3, a0, a0, a0, a0, TL_PW_SECOND);                                            \
    o[0] = tl_pw_out(sa, (int32_t)m, (int32_t)k, (int32_t)r, shift, zero, low, high);                          \
    o[units] = tl_pw_out(sb, (int32_t)m, (int32_t)k, (int32_t)r, shift, zero, low, high);                      \
    ++o;                                                                                                       \
  } while (0)
      if (units % 2) TL_PW_PAIR();
      while (rp != end) {
        TL_PW_PAIR();
        TL_PW_PAIR();
      }
    }
    for (; c < cols; ++c, px += col_step, out += units) {
      const int32_t *rp = records;
      int8_t *o = out;
      uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
      TL_PW_WIDEN(px, a0, a1, a2, a3, a4, a5, a6, a7);
#define TL_PW_ONE()                                                                                              \
  do {                                                                                                         \
    uint32_t m, k, r;                                                                                          \
    int32_t sa;                                                                                                \
    TL_PW_RECORD(sa, a0, a1, a2, a3, a4, a5, a6, a7, TL_PW_NONE);                                              \
    *o++ = tl_pw_out(sa, (int32_t)m, (int32_t)k, (int32_t)r, shift, zero, low, high);                          \
  } while (0)
      if (units % 2) TL_PW_ONE();
      while (rp != end) {
        TL_PW_ONE();
        TL_PW_ONE();
      }
    }
  }
}

/* Small 1x1 convolutions of any depth (tl_pointwise_s8_cols; no padding, any stride, at most
 * 8,192 weights), output pixels as tl_pointwise_s8_shallow's: two pixels' inputs widened into
 * `col` (k4 words), interleaved per word of four inputs (pixel A's [x0 | x2], [x1 | x3], then
 * B's; the last depth % 4 inputs in order, zero-padded), then per pair of output channels one
 * record {their two biases, per word of inputs each channel's two weight words widened in the
 * columns' order, m and K of each, and without the common shift r of each}, all read by LDRD:
 * per word of inputs, two pixels by two channels, 4 LDRD and 8 SMLAD (12 instructions for 16
 * MACs). The accumulators start at the biases; outputs as tl_pw_out's. An odd last channel has a
 * record of its own {bias, 0, its words, m, K (r, 0)}; an odd last pixel runs as a pair with
 * itself, its outputs written twice to the same bytes. */
static TL_INLINE void tl_pw_cols_widen(int32_t *col, const int8_t *a, const int8_t *b, int32_t depth) {
  int32_t j;
  for (j = 0; j + 4 <= depth; j += 4, col += 4) {
    const uint32_t va = TL_WORD(a + j), vb = TL_WORD(b + j);
    col[0] = (int32_t)TL_SXTB16(va), col[1] = (int32_t)TL_SXTB16_ODD(va);
    col[2] = (int32_t)TL_SXTB16(vb), col[3] = (int32_t)TL_SXTB16_ODD(vb);
  }
  if (depth % 4) {
    col[0] = (int32_t)tl_pkhbt((uint32_t)(int32_t)a[j], depth % 4 > 1 ? (uint32_t)(int32_t)a[j + 1] : 0u);
    col[1] = depth % 4 > 2 ? (int32_t)((uint32_t)(int32_t)a[j + 2] & 0xFFFFu) : 0;
    col[2] = (int32_t)tl_pkhbt((uint32_t)(int32_t)b[j], depth % 4 > 1 ? (uint32_t)(int32_t)b[j + 1] : 0u);
    col[3] = depth % 4 > 2 ? (int32_t)((uint32_t)(int32_t)b[j + 2] & 0xFFFFu) : 0;
  }
}
/* body() once per word of inputs: unrolled up to 8 words, else two per pass */
#define TL_PWC_LOOP(body)                                                                                        \
  do {                                                                                                         \
    int32_t n;                                                                                                 \
    if (words <= 8) {                                                                                          \
      body();                                                                                                  \
      if (words > 1) body();                                                                                   \
      if (words > 2) body();                                                                                   \
      if (words > 3) body();                                                                                   \
      if (words > 4) body();                                                                                   \
      if (words > 5) body();                                                                                   \
      if (words > 6) body();                                                                                   \
      if (words > 7) body();                                                                                   \
    } else {                                                                                                   \
      if (words % 2) body();                                                                                   \
      for (n = words / 2; n > 0; --n) {                                                                        \
        body();                                                                                                \
        body();                                                                                                \
      }                                                                                                        \
    }                                                                                                          \
  } while (0)
#define TL_PWC_2X2()                                                                                             \
  do {                                                                                                         \
    uint32_t a0, a1, b0, b1, e, o;                                                                             \
    TL_PAIR_NEXT(cp, a0, a1);                                                                                  \
    TL_PAIR_NEXT(rp, e, o);                                                                                    \
    s00 = TL_SMLAD(a1, o, TL_SMLAD(a0, e, s00));                                                               \
    TL_PAIR_NEXT(cp, b0, b1);                                                                                  \
    s10 = TL_SMLAD(b1, o, TL_SMLAD(b0, e, s10));                                                               \
    TL_PAIR_NEXT(rp, e, o);                                                                                    \
    s01 = TL_SMLAD(a1, o, TL_SMLAD(a0, e, s01));                                                               \
    s11 = TL_SMLAD(b1, o, TL_SMLAD(b0, e, s11));                                                               \
    TL_TAP_ORDER();                                                                                            \
  } while (0)
#define TL_PWC_2X1()                                                                                             \
  do {                                                                                                         \
    uint32_t a0, a1, b0, b1, e, o;                                                                             \
    TL_PAIR_NEXT(cp, a0, a1);                                                                                  \
    TL_PAIR_NEXT(rp, e, o);                                                                                    \
    s00 = TL_SMLAD(a1, o, TL_SMLAD(a0, e, s00));                                                               \
    TL_PAIR_NEXT(cp, b0, b1);                                                                                  \
    s10 = TL_SMLAD(b1, o, TL_SMLAD(b0, e, s10));                                                               \
  } while (0)
static TL_INLINE void tl_pointwise_s8_cols(const int8_t *x, const int32_t *restrict records, int8_t *y,
                                          int32_t rows, int32_t cols, int32_t row_step, int32_t col_step,
                                          int32_t depth, int32_t units, int32_t zero, int32_t low, int32_t high,
                                          int32_t shift, int32_t *col) {
  const int32_t words = (depth + 3) / 4, pixels = rows * cols;
  const int8_t *px = x;
  int32_t p, c = 0;
  for (p = 0; p < pixels; p += 2) {
    const int8_t *pa = px, *pb = px;
    const int32_t *rp = records;
    int8_t *oa = y + p * units, *ob = oa;
    int32_t f;
    if (++c == cols) c = 0, px += row_step - (cols - 1) * col_step; else px += col_step;
    if (p + 1 < pixels) {
      pb = px, ob = oa + units;
      if (++c == cols) c = 0, px += row_step - (cols - 1) * col_step; else px += col_step;
    }
    tl_pw_cols_widen(col, pa, pb, depth);
    for (f = 0; f + 2 <= units; f += 2) {
      const int32_t *cp = col;
      int32_t s00, s01, s10, s11;
      uint32_t m0, k0, m1, k1, r0 = 0, r1 = 0;
      int8_t v00, v01, v10, v11;
      TL_PAIR_NEXT(rp, s00, s01);
      s10 = s00, s11 = s01;
      TL_PWC_LOOP(TL_PWC_2X2);
      TL_PAIR_NEXT(rp, m0, k0);
      TL_PAIR_NEXT(rp, m1, k1);
      if (!shift) TL_PAIR_NEXT(rp, r0, r1);
      v00 = tl_pw_out(s00, (int32_t)m0, (int32_t)k0, (int32_t)r0, shift, zero, low, high);
      v01 = tl_pw_out(s01, (int32_t)m1, (int32_t)k1, (int32_t)r1, shift, zero, low, high);
      v10 = tl_pw_out(s10, (int32_t)m0, (int32_t)k0, (int32_t)r0, shift, zero, low, high);
      v11 = tl_pw_out(s11, (int32_t)m1, (int32_t)k1, (int32_t)r1, shift, zero, low, high);
      *oa++ = v00, *oa++ = v01, *ob++ = v10, *ob++ = v11;
    }
    if (units % 2) {
      const int32_t *cp = col;
      int32_t s00, s10, unused;
      uint32_t m, k, r = 0;
      TL_PAIR_NEXT(rp, s00, unused);
      (void)unused;
      s10 = s00;
      TL_PWC_LOOP(TL_PWC_2X1);
      TL_PAIR_NEXT(rp, m, k);
      if (!shift) TL_PAIR_NEXT(rp, r, unused);
      *oa = tl_pw_out(s00, (int32_t)m, (int32_t)k, (int32_t)r, shift, zero, low, high);
      *ob = tl_pw_out(s10, (int32_t)m, (int32_t)k, (int32_t)r, shift, zero, low, high);
    }
  }
}

#undef TL_GEMM_1X4
#undef TL_GEMM_1X1
#undef TL_PWC_LOOP
#undef TL_PWC_2X2
#undef TL_PWC_2X1
#undef TL_PW_RECORD
#undef TL_PW_PAIR
#undef TL_PW_ONE
#undef TL_PW_SECOND
#undef TL_PW_NONE
#undef TL_PW_WIDEN
#undef TL_WIDE_MAC
#undef TL_DIRECT_2X2
#undef TL_DIRECT_RUN
#undef TL_WIDE_GROUP
#undef TL_WIDE_MAC4
#undef TL_WIDE_MAC1
#undef TL_WIDE_MAC2
#undef TL_WIDE_WORD
#undef TL_WIDE_LOOP
#undef TL_WIDE_OUT
#undef TL_ROW_MAC1
#undef TL_ROW_MAC2
#undef TL_ROW_MAC2_S01
#undef TL_ROW_MAC4
#undef TL_ROW_LOOP
#undef TL_ROW_WORD
#undef TL_ROW_OUT
#undef TL_GEMM_2X2
#undef TL_GEMM_2X1
#undef TL_GEMM_STORE4
#undef TL_GEMM_MAC
#undef TL_GEMM_LOOP
#undef TL_GEMM_ARGS
#undef TL_PAIR_NEXT
#undef TL_DOUBLE16
#endif /* TL_CONV_GEMM_H */
