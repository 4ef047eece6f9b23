/* tl_conv.h: convolutions on NHWC tensors: TFLite's CONV_2D and DEPTHWISE_CONV_2D (float and
 * int8 with per-channel requantization) and TRANSPOSE_CONV; ONNX's Conv runs here too, made NHWC
 * by the compiler (1-D as 2-D with a height of 1).
 *
 * Padding taps are skipped, as TFLite's kernels do: an integer sum runs over the valid taps of
 * (x + x_offset) * w, with x_offset = -input zero point. Weights are [filter][kh][kw][c] (CONV_2D,
 * c over the group's channels) and [kh][kw][channel * multiplier] (DEPTHWISE); ONNX's
 * [filter][c][kh][kw] are transposed to those on the host. Outputs are written pixel after pixel in NHWC order,
 * each after every input it reads: the memory planner relies on that to overlap outputs with
 * inputs that die at the node (a lag computed on the host). Sizes are int32_t throughout (AVR's
 * int is 16 bits). */
#ifndef TL_CONV_H
#define TL_CONV_H

#include "tl_common.h"

/* the first and one-past-last tap of a window starting at `start` (may be negative) that fall
 * inside [0, size) */
static inline void tl_valid_taps(int32_t start, int32_t dilation, int32_t taps, int32_t size, int32_t *first,
                                 int32_t *last) {
  int32_t lo = 0, hi = taps;
  while (lo < taps && start + lo * dilation < 0) ++lo;
  while (hi > lo && start + (hi - 1) * dilation >= size) --hi;
  *first = lo;
  *last = hi;
}

/* float: per output pixel and group, the valid taps run outside, then the group's input
 * channels, and the filters of the group inside, accumulated in `acc` (filters / groups floats
 * of scratch) over weights stored wt[group][kh][kw][c][filter of the group]: the inner loop
 * runs over contiguous filters and vectorises; each output's sum runs over the taps and
 * channels in order. bias may be NULL. */
static inline void tl_conv_nhwc_f32(const float *x, const float *wt, const float *bias, float *y, int32_t batches,
                                    int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                                    int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                                    int32_t dil_h, int32_t dil_w, int32_t pad_top, int32_t pad_left, int32_t depth,
                                    float low, float high, float *restrict acc) {
  const int32_t groups = in_c / depth, per_group = filters / groups;
  int32_t b, oy, ox, g, f, ky, kx, c;
  for (b = 0; b < batches; ++b) {
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t left = ox * stride_w - pad_left;
        int32_t kx0, kx1;
        float *out = y + ((b * out_h + oy) * out_w + ox) * filters;
        tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);
        for (g = 0; g < groups; ++g) {
          const float *xg = x + g * depth;
          const float *wg = wt + g * k_h * k_w * depth * per_group;
          for (f = 0; f < per_group; ++f) acc[f] = bias ? TL_READ_F32(bias + g * per_group + f) : 0.0f;
          for (ky = ky0; ky < ky1; ++ky) {
            const float *row = xg + ((b * in_h + top + ky * dil_h) * in_w) * in_c;
            for (kx = kx0; kx < kx1; ++kx) {
              const float *px = row + (left + kx * dil_w) * in_c;
              const float *pw = wg + (ky * k_w + kx) * depth * per_group;
              for (c = 0; c < depth; ++c) {
                const float value = px[c];
                const float *w = pw + c * per_group;
                for (f = 0; f < per_group; ++f) acc[f] += value * TL_READ_F32(w + f);
              }
            }
          }
          for (f = 0; f < per_group; ++f) out[g * per_group + f] = tl_clamp_f32(acc[f], low, high);
        }
      }
    }
  }
}

/* integer CONV_2D, per-channel requantization (index f * per_channel): int8 activations with
 * int32 accumulators and bias, or int16 activations (16x8) with int64 ones and TFLite's
 * 64-bit requantization */
#define TL_CONV_NHWC_Q(name, x_type, acc_type, read_bias, requant)                                              \
  static inline void name(const x_type *x, const int8_t *w, const acc_type *bias, x_type *y, int32_t batches,  \
                          int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,              \
                          int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,       \
                          int32_t dil_h, int32_t dil_w, int32_t pad_top, int32_t pad_left, int32_t depth,      \
                          int32_t x_offset, const int32_t *multiplier, const int32_t *shift, int32_t per_channel, \
                          int32_t zero, int32_t low, int32_t high) {                                            \
    const int32_t per_group = filters / (in_c / depth);                                                        \
    int32_t b, oy, ox, f, ky, kx, c;                                                                           \
    for (b = 0; b < batches; ++b)                                                                              \
      for (oy = 0; oy < out_h; ++oy) {                                                                         \
        const int32_t top = oy * stride_h - pad_top;                                                           \
        int32_t ky0, ky1;                                                                                      \
        tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);                                                      \
        for (ox = 0; ox < out_w; ++ox) {                                                                       \
          const int32_t left = ox * stride_w - pad_left;                                                       \
          int32_t kx0, kx1;                                                                                    \
          x_type *out = y + ((b * out_h + oy) * out_w + ox) * filters;                                         \
          tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);                                                   \
          for (f = 0; f < filters; ++f) {                                                                      \
            const x_type *xg = x + (f / per_group) * depth;                                                    \
            const int8_t *wf = w + f * k_h * k_w * depth;                                                      \
            acc_type acc = bias ? read_bias(bias + f) : 0;                                                     \
            for (ky = ky0; ky < ky1; ++ky) {                                                                   \
              const x_type *row = xg + ((b * in_h + top + ky * dil_h) * in_w) * in_c;                          \
              for (kx = kx0; kx < kx1; ++kx) {                                                                 \
                const x_type *px = row + (left + kx * dil_w) * in_c;                                           \
                const int8_t *pw = wf + (ky * k_w + kx) * depth;                                               \
                for (c = 0; c < depth; ++c) acc += ((int32_t)px[c] + x_offset) * (int32_t)TL_READ_S8(pw + c);  \
              }                                                                                                \
            }                                                                                                  \
            out[f] = (x_type)tl_clamp_i32(requant(acc, TL_READ_S32(multiplier + f * per_channel),              \
                                                  (int)TL_READ_S32(shift + f * per_channel)) + zero, low, high); \
          }                                                                                                    \
        }                                                                                                      \
      }                                                                                                        \
  }

TL_CONV_NHWC_Q(tl_conv_nhwc_s8, int8_t, int32_t, TL_READ_S32, tl_mbqm)
TL_CONV_NHWC_Q(tl_conv_nhwc_s16, int16_t, int64_t, TL_READ_S64, tl_mbqm64)

/* TFLite's TRANSPOSE_CONV on NHWC tensors, weights [filter][kh][kw][c], computed output pixel
 * by output pixel: output row oy gathers kernel row ky from input row (oy + pad_top - ky) /
 * stride_h when that divides exactly and lies inside the input (columns alike); the output may
 * reach past the full result (its extra pixels get the bias only) */
static inline int32_t tl_tconv_source(int32_t out, int32_t pad, int32_t k, int32_t stride, int32_t size) {
  const int32_t at = out + pad - k;
  return at >= 0 && at % stride == 0 && at / stride < size ? at / stride : -1;
}

static inline void tl_tconv_nhwc_f32(const float *x, const float *w, const float *bias, float *y, int32_t batches,
                                     int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                                     int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                                     int32_t pad_top, int32_t pad_left, float low, float high) {
  int32_t b, oy, ox, f, ky, kx, c;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        float *out = y + ((b * out_h + oy) * out_w + ox) * filters;
        for (f = 0; f < filters; ++f) {
          float acc = bias ? TL_READ_F32(bias + f) : 0.0f;
          for (ky = 0; ky < k_h; ++ky) {
            const int32_t iy = tl_tconv_source(oy, pad_top, ky, stride_h, in_h);
            if (iy < 0) continue;
            for (kx = 0; kx < k_w; ++kx) {
              const int32_t ix = tl_tconv_source(ox, pad_left, kx, stride_w, in_w);
              const float *px, *pw;
              if (ix < 0) continue;
              px = x + ((b * in_h + iy) * in_w + ix) * in_c;
              pw = w + ((f * k_h + ky) * k_w + kx) * in_c;
              for (c = 0; c < in_c; ++c) acc += px[c] * TL_READ_F32(pw + c);
            }
          }
          out[f] = tl_clamp_f32(acc, low, high);
        }
      }
}

/* integer TRANSPOSE_CONV, per-channel requantization: int8 with int32 accumulators, int16 with
 * int64 ones (an int64 bias) */
#define TL_TCONV_NHWC_Q(name, x_type, acc_type, read_bias, requant)                                             \
  static inline void name(const x_type *x, const int8_t *w, const acc_type *bias, x_type *y, int32_t batches,  \
                          int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,              \
                          int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,       \
                          int32_t pad_top, int32_t pad_left, int32_t x_offset, const int32_t *multiplier,      \
                          const int32_t *shift, int32_t per_channel, int32_t zero, int32_t low, int32_t high) { \
    int32_t b, oy, ox, f, ky, kx, c;                                                                           \
    for (b = 0; b < batches; ++b)                                                                              \
      for (oy = 0; oy < out_h; ++oy)                                                                           \
        for (ox = 0; ox < out_w; ++ox) {                                                                       \
          x_type *out = y + ((b * out_h + oy) * out_w + ox) * filters;                                         \
          for (f = 0; f < filters; ++f) {                                                                      \
            acc_type acc = bias ? read_bias(bias + f) : 0;                                                     \
            for (ky = 0; ky < k_h; ++ky) {                                                                     \
              const int32_t iy = tl_tconv_source(oy, pad_top, ky, stride_h, in_h);                             \
              if (iy < 0) continue;                                                                            \
              for (kx = 0; kx < k_w; ++kx) {                                                                   \
                const int32_t ix = tl_tconv_source(ox, pad_left, kx, stride_w, in_w);                          \
                const x_type *px;                                                                              \
                const int8_t *pw;                                                                              \
                if (ix < 0) continue;                                                                          \
                px = x + ((b * in_h + iy) * in_w + ix) * in_c;                                                 \
                pw = w + ((f * k_h + ky) * k_w + kx) * in_c;                                                   \
                for (c = 0; c < in_c; ++c) acc += ((int32_t)px[c] + x_offset) * (int32_t)TL_READ_S8(pw + c);   \
              }                                                                                                \
            }                                                                                                  \
            out[f] = (x_type)tl_clamp_i32(requant(acc, TL_READ_S32(multiplier + f * per_channel),              \
                                                  (int)TL_READ_S32(shift + f * per_channel)) + zero, low, high); \
          }                                                                                                    \
        }                                                                                                      \
  }

TL_TCONV_NHWC_Q(tl_tconv_nhwc_s8, int8_t, int32_t, TL_READ_S32, tl_mbqm)
TL_TCONV_NHWC_Q(tl_tconv_nhwc_s16, int16_t, int64_t, TL_READ_S64, tl_mbqm64)

/* depthwise: per output pixel, the taps run outside and the channels inside (contiguous in the
 * input pixel, the weights and the accumulators `acc`, out_c values of scratch) */
static inline void tl_dwconv_nhwc_f32(const float *x, const float *w, const float *bias, float *y, float *restrict acc,
                                      int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                      int32_t out_w, int32_t multiplier, int32_t k_h, int32_t k_w, int32_t stride_h,
                                      int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top,
                                      int32_t pad_left, float low, float high) {
  const int32_t out_c = in_c * multiplier;
  int32_t b, oy, ox, o, c, m, ky, kx;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t left = ox * stride_w - pad_left;
        int32_t kx0, kx1;
        float *out = y + ((b * out_h + oy) * out_w + ox) * out_c;
        tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);
        for (o = 0; o < out_c; ++o) acc[o] = bias ? TL_READ_F32(bias + o) : 0.0f;
        for (ky = ky0; ky < ky1; ++ky)
          for (kx = kx0; kx < kx1; ++kx) {
            const float *px = x + ((b * in_h + top + ky * dil_h) * in_w + left + kx * dil_w) * in_c;
            const float *pw = w + (ky * k_w + kx) * out_c;
            if (multiplier == 1)
              for (c = 0; c < in_c; ++c) acc[c] += px[c] * TL_READ_F32(pw + c);
            else if (in_c == 1)
              for (o = 0; o < out_c; ++o) acc[o] += px[0] * TL_READ_F32(pw + o);
            else
              for (c = 0; c < in_c; ++c)
                for (m = 0; m < multiplier; ++m) acc[c * multiplier + m] += px[c] * TL_READ_F32(pw + c * multiplier + m);
          }
        for (o = 0; o < out_c; ++o) out[o] = tl_clamp_f32(acc[o], low, high);
      }
    }
}

#define TL_DWCONV_NHWC_Q(name, x_type, acc_type, read_bias, requant)                                            \
  static inline void name(const x_type *x, const int8_t *w, const acc_type *bias, x_type *y,                   \
                          acc_type *restrict acc, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c,   \
                          int32_t out_h, int32_t out_w, int32_t multiplier, int32_t k_h, int32_t k_w,          \
                          int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top,   \
                          int32_t pad_left, int32_t x_offset, const int32_t *out_multiplier,                   \
                          const int32_t *shift, int32_t per_channel, int32_t zero, int32_t low, int32_t high) { \
    const int32_t out_c = in_c * multiplier;                                                                   \
    int32_t b, oy, ox, o, c, m, ky, kx;                                                                        \
    for (b = 0; b < batches; ++b)                                                                              \
      for (oy = 0; oy < out_h; ++oy) {                                                                         \
        const int32_t top = oy * stride_h - pad_top;                                                           \
        int32_t ky0, ky1;                                                                                      \
        tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);                                                      \
        for (ox = 0; ox < out_w; ++ox) {                                                                       \
          const int32_t left = ox * stride_w - pad_left;                                                       \
          int32_t kx0, kx1;                                                                                    \
          x_type *out = y + ((b * out_h + oy) * out_w + ox) * out_c;                                           \
          tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);                                                   \
          for (o = 0; o < out_c; ++o) acc[o] = bias ? read_bias(bias + o) : 0;                                 \
          for (ky = ky0; ky < ky1; ++ky)                                                                       \
            for (kx = kx0; kx < kx1; ++kx) {                                                                   \
              const x_type *px = x + ((b * in_h + top + ky * dil_h) * in_w + left + kx * dil_w) * in_c;       \
              const int8_t *pw = w + (ky * k_w + kx) * out_c;                                                  \
              if (multiplier == 1)                                                                             \
                for (c = 0; c < in_c; ++c) acc[c] += ((int32_t)px[c] + x_offset) * (int32_t)TL_READ_S8(pw + c); \
              else if (in_c == 1) {                                                                            \
                const int32_t value = (int32_t)px[0] + x_offset;                                               \
                for (o = 0; o < out_c; ++o) acc[o] += value * (int32_t)TL_READ_S8(pw + o);                     \
              } else                                                                                           \
                for (c = 0; c < in_c; ++c) {                                                                   \
                  const int32_t value = (int32_t)px[c] + x_offset;                                             \
                  for (m = 0; m < multiplier; ++m)                                                             \
                    acc[c * multiplier + m] += value * (int32_t)TL_READ_S8(pw + c * multiplier + m);           \
                }                                                                                              \
            }                                                                                                  \
          for (o = 0; o < out_c; ++o) {                                                                        \
            const int32_t v = requant(acc[o], TL_READ_S32(out_multiplier + o * per_channel),                   \
                                      (int)TL_READ_S32(shift + o * per_channel));                              \
            out[o] = (x_type)tl_clamp_i32(v + zero, low, high);                                                \
          }                                                                                                    \
        }                                                                                                      \
      }                                                                                                        \
  }

TL_DWCONV_NHWC_Q(tl_dwconv_nhwc_s16, int16_t, int64_t, TL_READ_S64, tl_mbqm64)

#if defined(__ARM_FEATURE_DSP) && !defined(TL_PROGMEM)
TL_DWCONV_NHWC_Q(tl_dwconv_nhwc_s8_generic, int8_t, int32_t, TL_READ_S32, tl_mbqm)

/* Cortex-M4/M7 depthwise int8, one channel per filter or a multiple of four filters per channel:
 * four outputs at a time in registers over every tap, each tap of four outputs one word of inputs
 * (four channels) or one input (repeated over four filters) and one word of weights, widened by
 * SXTB16 and multiplied-accumulated by SMLABB/SMLATT (TL_MAC4_S8) or SMLABB/SMLATB (TL_MAC4_ONE_S8). Where the window lies inside the input,
 * the input offset is folded into the bias (acc[o] = bias[o] + x_offset * the sum of the
 * filter's weights, once per call) and rows of 3 taps unrolled; at the borders, the valid taps
 * add the offset to their inputs (SADD16) over the plain bias: the sums are TFLite's exactly. */
#define TL_DW4_ROW3(load_x, mac, px, pw)                                                      \
  do {                                                                                   \
    mac(load_x(px), tl_load_word(pw), s0, s1, s2, s3);                                   \
    mac(load_x((px) + x_step), tl_load_word((pw) + out_c), s0, s1, s2, s3);              \
    mac(load_x((px) + 2 * x_step), tl_load_word((pw) + 2 * out_c), s0, s1, s2, s3);     \
  } while (0)
#define TL_DW4_TAPS(load_x, mac, border_mac)                                                                              \
  do {                                                                                                     \
    if (inside) {                                                                                          \
      const int8_t *px = corner + c;                                                                       \
      s0 = acc[o], s1 = acc[o + 1], s2 = acc[o + 2], s3 = acc[o + 3];                                      \
      if (k_w == 3)                                                                                        \
        for (ky = 0; ky < k_h; ++ky, px += row_step, pw += w_row) TL_DW4_ROW3(load_x, mac, px, pw);             \
      else                                                                                                 \
        for (ky = 0; ky < k_h; ++ky, px += row_step, pw += w_row)                                          \
          for (kx = 0; kx < k_w; ++kx)                                                                     \
            mac(load_x(px + kx * x_step), tl_load_word(pw + kx * out_c), s0, s1, s2, s3);                  \
    } else {                                                                                               \
      s0 = bias ? bias[o] : 0, s1 = bias ? bias[o + 1] : 0, s2 = bias ? bias[o + 2] : 0;                   \
      s3 = bias ? bias[o + 3] : 0;                                                                         \
      for (ky = ky0; ky < ky1; ++ky) {                                                                     \
        const int8_t *px = base + ((top + ky * dil_h) * in_w + left + kx0 * dil_w) * in_c + c;             \
        const int8_t *pwk = pw + (ky * k_w + kx0) * out_c;                                                 \
        for (kx = kx0; kx < kx1; ++kx, px += x_step, pwk += out_c) {                                       \
          border_mac(px, pwk);                                                                             \
        }                                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
  } while (0)
/* the border taps: four channels offset by SADD16, or one input offset as a word */
#define TL_DW4_BORDER_WORD(px, pwk)                                                                    \
  do {                                                                                                 \
    const uint32_t xv = tl_load_word(px), wv = tl_load_word(pwk);                                      \
    const uint32_t xe = __sadd16(__sxtb16(xv), offsets), xo = __sadd16(tl_sxtb16_odd(xv), offsets);    \
    const uint32_t we = __sxtb16(wv), wo = tl_sxtb16_odd(wv);                                          \
    s0 = __smlabb(xe, we, s0);                                                                         \
    s2 = __smlatt(xe, we, s2);                                                                         \
    s1 = __smlabb(xo, wo, s1);                                                                         \
    s3 = __smlatt(xo, wo, s3);                                                                         \
  } while (0)
#define TL_DW4_BORDER_ONE(px, pwk) TL_MAC4_ONE_S8((uint32_t)((int32_t)*(px) + x_offset), tl_load_word(pwk), s0, s1, s2, s3)
/* one input, sign-extended in the bottom halfword, against four weights (SMLABB and SMLATB) */
#define TL_MAC4_ONE_S8(xv, wv, s0, s1, s2, s3)                      \
  do {                                                              \
    const uint32_t tl_we = __sxtb16(wv), tl_wo = tl_sxtb16_odd(wv); \
    s0 = __smlabb(xv, tl_we, s0);                                   \
    s2 = __smlatb(tl_we, xv, s2);                                   \
    s1 = __smlabb(xv, tl_wo, s1);                                   \
    s3 = __smlatb(tl_wo, xv, s3);                                   \
  } while (0)
#define TL_DW_ONE(p) ((uint32_t)(int32_t)*(p))

static inline void tl_dwconv_nhwc_s8(const int8_t *x, const int8_t *w, const int32_t *bias, int8_t *y, int32_t *acc,
                                     int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                     int32_t out_w, int32_t multiplier, int32_t k_h, int32_t k_w, int32_t stride_h,
                                     int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top,
                                     int32_t pad_left, int32_t x_offset, const int32_t *out_multiplier,
                                     const int32_t *shift, int32_t per_channel, int32_t zero, int32_t low,
                                     int32_t high) {
  const int32_t out_c = in_c * multiplier, x_step = dil_w * in_c, row_step = dil_h * in_w * in_c;
  const int32_t w_row = k_w * out_c;
  const uint32_t offsets = ((uint32_t)(uint16_t)x_offset) | ((uint32_t)(uint16_t)x_offset << 16);
  int32_t b, oy, ox, o, ky, kx;
  if (multiplier != 1 && multiplier % 4 != 0) {
    tl_dwconv_nhwc_s8_generic(x, w, bias, y, acc, batches, in_h, in_w, in_c, out_h, out_w, multiplier, k_h, k_w,
                              stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, x_offset, out_multiplier, shift,
                              per_channel, zero, low, high);
    return;
  }
  for (o = 0; o < out_c; ++o) {
    int32_t sum = bias ? bias[o] : 0, t;
    for (t = 0; t < k_h * k_w; ++t) sum += x_offset * (int32_t)w[t * out_c + o];
    acc[o] = sum;
  }
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      const int8_t *base = x + b * in_h * in_w * in_c;
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t left = ox * stride_w - pad_left;
        int32_t kx0, kx1, inside;
        const int8_t *corner;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * out_c;
        tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);
        inside = ky0 == 0 && ky1 == k_h && kx0 == 0 && kx1 == k_w;
        corner = inside ? base + (top * in_w + left) * in_c : base;
        for (o = 0; o + 4 <= out_c; o += 4) {
          const int32_t c = o / multiplier;
          const int8_t *pw = w + o;
          int32_t s0, s1, s2, s3;
          if (multiplier == 1) TL_DW4_TAPS(tl_load_word, TL_MAC4_S8, TL_DW4_BORDER_WORD);
          else TL_DW4_TAPS(TL_DW_ONE, TL_MAC4_ONE_S8, TL_DW4_BORDER_ONE);
          out[o] = (int8_t)tl_clamp_s8(tl_mbqm(s0, out_multiplier[o * per_channel], shift[o * per_channel]) + zero,
                                        low, high);
          out[o + 1] = (int8_t)tl_clamp_s8(tl_mbqm(s1, out_multiplier[(o + 1) * per_channel],
                                                    shift[(o + 1) * per_channel]) + zero, low, high);
          out[o + 2] = (int8_t)tl_clamp_s8(tl_mbqm(s2, out_multiplier[(o + 2) * per_channel],
                                                    shift[(o + 2) * per_channel]) + zero, low, high);
          out[o + 3] = (int8_t)tl_clamp_s8(tl_mbqm(s3, out_multiplier[(o + 3) * per_channel],
                                                    shift[(o + 3) * per_channel]) + zero, low, high);
        }
        for (o = out_c - out_c % 4; o < out_c; ++o) { /* the last out_c % 4 channels (multiplier 1) */
          int32_t sum = acc[o];
          for (ky = 0; ky < k_h; ++ky)
            for (kx = 0; kx < k_w; ++kx) {
              const int in = ky >= ky0 && ky < ky1 && kx >= kx0 && kx < kx1;
              const int32_t value = in ? base[((top + ky * dil_h) * in_w + left + kx * dil_w) * in_c + o] : -x_offset;
              sum += value * (int32_t)w[(ky * k_w + kx) * out_c + o];
            }
          out[o] = (int8_t)tl_clamp_s8(tl_mbqm(sum, out_multiplier[o * per_channel], shift[o * per_channel]) + zero,
                                        low, high);
        }
      }
    }
}
#undef TL_DW4_TAPS
#undef TL_DW4_ROW3
#undef TL_DW_ONE
#undef TL_MAC4_ONE_S8
#undef TL_DW4_BORDER_ONE
#undef TL_DW4_BORDER_WORD
#else
TL_DWCONV_NHWC_Q(tl_dwconv_nhwc_s8, int8_t, int32_t, TL_READ_S32, tl_mbqm)
#endif

/* a 1x1 int8 convolution over `pixels` pixels with the weights stored transposed, wt[d][u]:
 * the inner loop runs over contiguous output channels into `acc` (units values of scratch);
 * the bias includes the input zero-point term. Pixel p is written after reading pixel p. */
static inline void tl_pointwise_s8(const int8_t *x, const int8_t *wt, const int32_t *bias, int8_t *y,
                                   int32_t *restrict acc, int32_t pixels, int32_t depth, int32_t units,
                                   const int32_t *multiplier, const int32_t *shift, int32_t per_channel, int32_t zero,
                                   int32_t low, int32_t high) {
  int32_t p, d, u;
  for (p = 0; p < pixels; ++p) {
    const int8_t *px = x + p * depth;
    int8_t *out = y + p * units;
    for (u = 0; u < units; ++u) acc[u] = TL_READ_S32(bias + u);
    for (d = 0; d < depth; ++d) {
      const int32_t value = px[d];
      const int8_t *w = wt + d * units;
      for (u = 0; u < units; ++u) acc[u] += value * (int32_t)TL_READ_S8(w + u);
    }
    for (u = 0; u < units; ++u) {
      const int32_t v = tl_mbqm(acc[u], TL_READ_S32(multiplier + u * per_channel),
                                (int)TL_READ_S32(shift + u * per_channel));
      out[u] = (int8_t)tl_clamp_i32(v + zero, low, high);
    }
  }
}

#endif /* TL_CONV_H */
