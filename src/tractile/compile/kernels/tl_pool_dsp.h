/* tl_pool_dsp.h: int8 average and max pooling and MEAN over the pixels of NHWC tensors on cores with the
 * Armv7E-M DSP extension (Cortex-M4/M7), the results of tl_pool.h's tl_avg_pool_nhwc_s8 and of
 * TFLite's quantized MEAN bit for bit (ops/pool_dsp.py chooses them).
 *
 * Eight channels at a time, two words of four per pixel: SXTAB16 adds bytes 0 and 2 of a word to
 * the two halfwords of one accumulator, and (rotated by 8) bytes 1 and 3 to another, so that a
 * pixel of eight channels costs two loads and four additions. Halfword sums are exact for up to
 * 256 pixels (256 * -128 = -32768); longer sums are taken 256 pixels at a time. */
#ifndef TL_POOL_DSP_H
#define TL_POOL_DSP_H

#include <stdint.h>
#include <string.h>

#include "tl_common.h"

#if defined(__ARM_FEATURE_DSP)
#define TL_SXTAB16(acc, w) __sxtab16(acc, w)
#define TL_SXTAB16_ODD(acc, w) tl_sxtab16_odd(acc, w)
static inline uint32_t tl_sxtab16_odd(uint32_t acc, uint32_t w) {
  uint32_t r;
  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(acc), "r"(w));
  return r;
}
#else
/* the same halfword sums in C (other hosts test the kernels' logic) */
static inline uint32_t tl_halves_add(uint32_t acc, int32_t low, int32_t high) {
  return (((acc >> 16) + (uint32_t)high) << 16) | ((acc + (uint32_t)low) & 0xFFFFu);
}
#define TL_SXTAB16(acc, w) tl_halves_add(acc, (int8_t)(w), (int8_t)((w) >> 16))
#define TL_SXTAB16_ODD(acc, w) tl_halves_add(acc, (int8_t)((w) >> 8), (int8_t)((w) >> 24))
#endif

/* per byte: the larger (max) or smaller (min) signed value of a and b: SSUB8 sets the GE flags, SEL picks */
#if defined(__ARM_FEATURE_DSP)
static inline uint32_t tl_max4_s8(uint32_t a, uint32_t b) {
  uint32_t t, r;
  __asm__("ssub8 %0, %2, %3\n\tsel %1, %2, %3" : "=&r"(t), "=r"(r) : "r"(a), "r"(b) : "cc");
  (void)t;
  return r;
}
static inline uint32_t tl_min4_s8(uint32_t a, uint32_t b) {
  uint32_t t, r;
  __asm__("ssub8 %0, %3, %2\n\tsel %1, %2, %3" : "=&r"(t), "=r"(r) : "r"(a), "r"(b) : "cc");
  (void)t;
  return r;
}
#else
static inline uint32_t tl_pick4_s8(uint32_t a, uint32_t b, int larger) {
  uint32_t out = 0;
  int i;
  for (i = 0; i < 32; i += 8) {
    const int8_t x = (int8_t)(a >> i), y = (int8_t)(b >> i);
    out |= (uint32_t)(uint8_t)((larger ? x >= y : x <= y) ? x : y) << i;
  }
  return out;
}
#define tl_max4_s8(a, b) tl_pick4_s8(a, b, 1)
#define tl_min4_s8(a, b) tl_pick4_s8(a, b, 0)
#endif

static inline int32_t tl_low_s16(uint32_t v) { return (int16_t)(v & 0xFFFFu); }
static inline int32_t tl_high_s16(uint32_t v) { return (int16_t)(v >> 16); }

/* sums[0..8) += the eight channels at p summed over rows x cols pixels (rows * cols <= 256),
 * pixels col_step bytes apart along a row and row_step apart between rows */
static inline void tl_sum8_s8(const int8_t *p, int32_t rows, int32_t cols, int32_t row_step, int32_t col_step,
                              int32_t *sums) {
  uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int32_t r, c;
  for (r = 0; r < rows; ++r, p += row_step) {
    const int8_t *q = p;
    for (c = 0; c < cols; ++c, q += col_step) {
      uint32_t w0, w1;
      memcpy(&w0, q, 4);
      memcpy(&w1, q + 4, 4);
      a0 = TL_SXTAB16(a0, w0);
      a1 = TL_SXTAB16_ODD(a1, w0);
      a2 = TL_SXTAB16(a2, w1);
      a3 = TL_SXTAB16_ODD(a3, w1);
    }
  }
  sums[0] += tl_low_s16(a0);
  sums[1] += tl_low_s16(a1);
  sums[2] += tl_high_s16(a0);
  sums[3] += tl_high_s16(a1);
  sums[4] += tl_low_s16(a2);
  sums[5] += tl_low_s16(a3);
  sums[6] += tl_high_s16(a2);
  sums[7] += tl_high_s16(a3);
}

/* tl_avg_pool_nhwc_s8 for windows of at most 256 taps: channels in groups of eight, the rest one by one */
static inline void tl_avg_pool_nhwc_s8_dsp(const int8_t *x, int8_t *y, int32_t batches, int32_t in_h,
                                           int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                                           int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                                           int32_t pad_top, int32_t pad_left, int32_t low, int32_t high) {
  int32_t b, oy, ox, c, i;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;
        const int32_t y0 = top < 0 ? 0 : top, y1 = top + k_h > in_h ? in_h : top + k_h;
        const int32_t x0 = left < 0 ? 0 : left, x1 = left + k_w > in_w ? in_w : left + k_w;
        const int32_t count = (y1 - y0) * (x1 - x0);
        const int8_t *window = x + ((b * in_h + y0) * in_w + x0) * channels;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * channels;
        for (c = 0; c + 8 <= channels; c += 8) {
          int32_t sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          tl_sum8_s8(window + c, y1 - y0, x1 - x0, in_w * channels, channels, sums);
          for (i = 0; i < 8; ++i) {
            const int32_t total = sums[i];
            const int32_t average = total > 0 ? (total + count / 2) / count : (total - count / 2) / count;
            out[c + i] = (int8_t)tl_clamp_i32(average, low, high);
          }
        }
        for (; c < channels; ++c) {
          const int8_t *row = window + c;
          int32_t total = 0, iy, ix, average;
          for (iy = y0; iy < y1; ++iy, row += in_w * channels)
            for (ix = 0; ix < x1 - x0; ++ix) total += row[ix * channels];
          average = total > 0 ? (total + count / 2) / count : (total - count / 2) / count;
          out[c] = (int8_t)tl_clamp_i32(average, low, high);
        }
      }
}

/* tl_max_pool_nhwc_s8 four channels at a time (a word per pixel, one SSUB8 and one SEL), the
 * fused activation's range applied to the word, the rest of the channels one by one */
static inline void tl_max_pool_nhwc_s8_dsp(const int8_t *x, int8_t *y, int32_t batches, int32_t in_h,
                                           int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                                           int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                                           int32_t pad_top, int32_t pad_left, int32_t low, int32_t high) {
  const uint32_t lows = (uint32_t)(uint8_t)low * 0x01010101u, highs = (uint32_t)(uint8_t)high * 0x01010101u;
  int32_t b, oy, ox, c, iy, ix;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;
        const int32_t y0 = top < 0 ? 0 : top, y1 = top + k_h > in_h ? in_h : top + k_h;
        const int32_t x0 = left < 0 ? 0 : left, x1 = left + k_w > in_w ? in_w : left + k_w;
        const int8_t *window = x + ((b * in_h + y0) * in_w + x0) * channels;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * channels;
        for (c = 0; c + 4 <= channels; c += 4) {
          const int8_t *row = window + c;
          uint32_t best, w;
          memcpy(&best, row, 4);
          for (iy = y0; iy < y1; ++iy, row += in_w * channels) {
            const int8_t *q = row;
            for (ix = x0; ix < x1; ++ix, q += channels) {
              memcpy(&w, q, 4);
              best = tl_max4_s8(w, best);
            }
          }
          best = tl_min4_s8(tl_max4_s8(best, lows), highs);
          memcpy(out + c, &best, 4);
        }
        for (; c < channels; ++c) {
          const int8_t *row = window + c;
          int32_t best = *row;
          for (iy = y0; iy < y1; ++iy, row += in_w * channels)
            for (ix = 0; ix < x1 - x0; ++ix) best = row[ix * channels] > best ? row[ix * channels] : best;
          out[c] = (int8_t)tl_clamp_i32(best, low, high);
        }
      }
}

/* TFLite's quantized MEAN of int8 over the `pixels` rows of [outer][pixels][channels]:
 * tl_mbqm(sum - zero_sum, multiplier, shift) + zo, clamped to int8 */
static inline void tl_mean_pixels_s8_dsp(const int8_t *x, int8_t *y, int32_t outer, int32_t pixels,
                                         int32_t channels, int32_t zero_sum, int32_t multiplier, int shift,
                                         int32_t zo) {
  int32_t o, c, i, done;
  for (o = 0; o < outer; ++o, x += pixels * channels, y += channels) {
    for (c = 0; c + 8 <= channels; c += 8) {
      int32_t sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (done = 0; done < pixels; done += 256)
        tl_sum8_s8(x + done * channels + c, 1, pixels - done < 256 ? pixels - done : 256, 0, channels, sums);
      for (i = 0; i < 8; ++i)
        y[c + i] = (int8_t)tl_clamp_i32(tl_mbqm((int32_t)((uint32_t)sums[i] - (uint32_t)zero_sum), multiplier,
                                                shift) + zo, -128, 127);
    }
    for (; c < channels; ++c) {
      int32_t total = 0, p;
      for (p = 0; p < pixels; ++p) total += x[p * channels + c];
      y[c] = (int8_t)tl_clamp_i32(tl_mbqm((int32_t)((uint32_t)total - (uint32_t)zero_sum), multiplier, shift) + zo,
                                  -128, 127);
    }
  }
}

#endif /* TL_POOL_DSP_H */
