/* tl_pool.h: average and max pooling on NHWC tensors (TFLite's AVERAGE_POOL_2D, MAX_POOL_2D: float,
 * int8, int16; ONNX's pools, made NHWC at compile time: float, dilations, count_include_pad),
 * TFLite's L2_POOL_2D (float) and ONNX's global pools.
 * Padding taps are skipped; an integer average rounds halves away from zero over the
 * valid taps, as TFLite's kernels do. Outputs are written pixel after pixel in NHWC order. */
#ifndef TL_POOL_H
#define TL_POOL_H

#include <math.h>

#include "tl_common.h"

static inline void tl_pool_window(int32_t start, int32_t taps, int32_t size, int32_t *first, int32_t *last) {
  *first = start < 0 ? 0 : start;
  *last = start + taps > size ? size : start + taps;
}

/* the first and one-past-last tap of a pooling window starting at `start` (may be negative)
 * whose taps, `dilation` apart, fall inside [0, size) */
static inline void tl_pool_taps(int32_t start, int32_t dilation, int32_t taps, int32_t size, int32_t *first,
                                int32_t *last) {
  int32_t lo = 0, hi = taps;
  while (lo < taps && start + lo * dilation < 0) ++lo;
  while (hi > lo && start + (hi - 1) * dilation >= size) --hi;
  *first = lo;
  *last = hi;
}

/* float average pooling (TFLite's AVERAGE_POOL_2D, ONNX's AveragePool made NHWC, whose padding
 * counted by count_include_pad is real zeros by then): the sum over the valid taps divided by
 * their count */
static inline void tl_avg_pool_nhwc_f32(const float *x, float *y, int32_t batches, int32_t in_h, int32_t in_w,
                                        int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                                        int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                                        float low, float high, int32_t dil_h, int32_t dil_w) {
  int32_t b, oy, ox, c, ky, kx;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;
        int32_t y0, y1, x0, x1;
        float *out = y + ((b * out_h + oy) * out_w + ox) * channels;
        float count;
        tl_pool_taps(top, dil_h, k_h, in_h, &y0, &y1);
        tl_pool_taps(left, dil_w, k_w, in_w, &x0, &x1);
        count = (float)((y1 - y0) * (x1 - x0) > 0 ? (y1 - y0) * (x1 - x0) : 1);
        for (c = 0; c < channels; ++c) {
          float total = 0.0f;
          for (ky = y0; ky < y1; ++ky)
            for (kx = x0; kx < x1; ++kx)
              total += x[((b * in_h + top + ky * dil_h) * in_w + left + kx * dil_w) * channels + c];
          out[c] = tl_clamp_f32(total / count, low, high);
        }
      }
}

/* TFLite's L2_POOL_2D: the root of the mean of the squares over the valid taps (needs <math.h>) */
static inline void tl_l2_pool_nhwc_f32(const float *x, float *y, int32_t batches, int32_t in_h, int32_t in_w,
                                       int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                                       int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left) {
  int32_t b, oy, ox, c, iy, ix;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        int32_t y0, y1, x0, x1;
        float *out = y + ((b * out_h + oy) * out_w + ox) * channels;
        tl_pool_window(oy * stride_h - pad_top, k_h, in_h, &y0, &y1);
        tl_pool_window(ox * stride_w - pad_left, k_w, in_w, &x0, &x1);
        for (c = 0; c < channels; ++c) {
          float total = 0.0f;
          for (iy = y0; iy < y1; ++iy)
            for (ix = x0; ix < x1; ++ix) {
              const float v = x[((b * in_h + iy) * in_w + ix) * channels + c];
              total += v * v;
            }
          out[c] = sqrtf(total / (float)((y1 - y0) * (x1 - x0)));
        }
      }
}

#define TL_AVG_POOL_NHWC_Q(name, x_type)                                                                    \
  static inline void name(const x_type *x, x_type *y, int32_t batches, int32_t in_h, int32_t in_w,           \
                          int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,          \
                          int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t low, \
                          int32_t high) {                                                                    \
    int32_t b, oy, ox, c, iy, ix;                                                                            \
    for (b = 0; b < batches; ++b)                                                                            \
      for (oy = 0; oy < out_h; ++oy)                                                                         \
        for (ox = 0; ox < out_w; ++ox) {                                                                     \
          int32_t y0, y1, x0, x1, count;                                                                     \
          x_type *out = y + ((b * out_h + oy) * out_w + ox) * channels;                                      \
          tl_pool_window(oy * stride_h - pad_top, k_h, in_h, &y0, &y1);                                      \
          tl_pool_window(ox * stride_w - pad_left, k_w, in_w, &x0, &x1);                                     \
          count = (y1 - y0) * (x1 - x0);                                                                     \
          for (c = 0; c < channels; ++c) {                                                                   \
            int32_t total = 0, average;                                                                      \
            for (iy = y0; iy < y1; ++iy)                                                                     \
              for (ix = x0; ix < x1; ++ix) total += x[((b * in_h + iy) * in_w + ix) * channels + c];         \
            average = total > 0 ? (total + count / 2) / count : (total - count / 2) / count;                 \
            out[c] = (x_type)tl_clamp_i32(average, low, high);                                               \
          }                                                                                                  \
        }                                                                                                    \
  }

TL_AVG_POOL_NHWC_Q(tl_avg_pool_nhwc_s8, int8_t)
TL_AVG_POOL_NHWC_Q(tl_avg_pool_nhwc_s16, int16_t)

/* float max pooling over the valid taps (NaN wins; a window of padding only gives -inf) */
static inline void tl_max_pool_nhwc_f32(const float *x, float *y, int32_t batches, int32_t in_h, int32_t in_w,
                                        int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                                        int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                                        float low, float high, int32_t dil_h, int32_t dil_w) {
  int32_t b, oy, ox, c, ky, kx;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;
        int32_t y0, y1, x0, x1;
        float *out = y + ((b * out_h + oy) * out_w + ox) * channels;
        tl_pool_taps(top, dil_h, k_h, in_h, &y0, &y1);
        tl_pool_taps(left, dil_w, k_w, in_w, &x0, &x1);
        for (c = 0; c < channels; ++c) {
          float best = -INFINITY;
          for (ky = y0; ky < y1; ++ky)
            for (kx = x0; kx < x1; ++kx) {
              const float value = x[((b * in_h + top + ky * dil_h) * in_w + left + kx * dil_w) * channels + c];
              if (value > best || value != value) best = value;
            }
          out[c] = tl_clamp_f32(best, low, high);
        }
      }
}

#define TL_MAX_POOL_NHWC_Q(name, x_type, lowest)                                                            \
  static inline void name(const x_type *x, x_type *y, int32_t batches, int32_t in_h, int32_t in_w,           \
                          int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,          \
                          int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t low, \
                          int32_t high) {                                                                    \
    int32_t b, oy, ox, c, iy, ix;                                                                            \
    for (b = 0; b < batches; ++b)                                                                            \
      for (oy = 0; oy < out_h; ++oy)                                                                         \
        for (ox = 0; ox < out_w; ++ox) {                                                                     \
          int32_t y0, y1, x0, x1;                                                                            \
          x_type *out = y + ((b * out_h + oy) * out_w + ox) * channels;                                      \
          tl_pool_window(oy * stride_h - pad_top, k_h, in_h, &y0, &y1);                                      \
          tl_pool_window(ox * stride_w - pad_left, k_w, in_w, &x0, &x1);                                     \
          for (c = 0; c < channels; ++c) {                                                                   \
            int32_t best = lowest;                                                                           \
            for (iy = y0; iy < y1; ++iy)                                                                     \
              for (ix = x0; ix < x1; ++ix)                                                                   \
                best = tl_max_i32(best, x[((b * in_h + iy) * in_w + ix) * channels + c]);                    \
            out[c] = (x_type)tl_clamp_i32(best, low, high);                                                  \
          }                                                                                                  \
        }                                                                                                    \
  }

TL_MAX_POOL_NHWC_Q(tl_max_pool_nhwc_s8, int8_t, -128)
TL_MAX_POOL_NHWC_Q(tl_max_pool_nhwc_s16, int16_t, -32768)
TL_MAX_POOL_NHWC_Q(tl_max_pool_nhwc_u8, uint8_t, 0)

/* ONNX GlobalAveragePool / GlobalMaxPool: one value per plane of `size` values */
static inline void tl_global_pool_f32(const float *x, float *y, int32_t planes, int32_t size, int32_t take_max) {
  int32_t p, i;
  for (p = 0; p < planes; ++p) {
    const float *plane = x + p * size;
    float result = plane[0];
    if (take_max) {
      for (i = 1; i < size; ++i)
        if (plane[i] > result || plane[i] != plane[i]) result = plane[i];
    } else {
      for (i = 1; i < size; ++i) result += plane[i];
      result /= (float)size;
    }
    y[p] = result;
  }
}

/* A global average pool computed a band of rows at a time (regions by rows): the rows' sums per
 * channel added to an accumulator, pixel after pixel as the whole-tensor kernels add them, then
 * divided once every row is in. */
#define TL_SUM_ROWS(name, x_type, acc_type)                                                         \
  static inline void name(const x_type *x, acc_type *acc, int32_t pixels, int32_t channels) {       \
    int32_t p, c;                                                                                   \
    for (p = 0; p < pixels; ++p)                                                                    \
      for (c = 0; c < channels; ++c) acc[c] += x[p * channels + c];                                 \
  }

TL_SUM_ROWS(tl_sum_rows_s8, int8_t, int32_t)
TL_SUM_ROWS(tl_sum_rows_s16, int16_t, int32_t)
TL_SUM_ROWS(tl_sum_rows_f32, float, float)

#define TL_AVG_FINISH_Q(name, x_type)                                                                   \
  static inline void name(const int32_t *acc, x_type *y, int32_t channels, int32_t count, int32_t low, \
                          int32_t high) {                                                              \
    int32_t c;                                                                                         \
    for (c = 0; c < channels; ++c) {                                                                   \
      const int32_t total = acc[c];                                                                    \
      const int32_t average = total > 0 ? (total + count / 2) / count : (total - count / 2) / count;   \
      y[c] = (x_type)tl_clamp_i32(average, low, high);                                                 \
    }                                                                                                  \
  }

TL_AVG_FINISH_Q(tl_avg_finish_s8, int8_t)
TL_AVG_FINISH_Q(tl_avg_finish_s16, int16_t)

static inline void tl_avg_finish_f32(const float *acc, float *y, int32_t channels, int32_t count, float low,
                                     float high) {
  int32_t c;
  for (c = 0; c < channels; ++c) y[c] = tl_clamp_f32(acc[c] / (float)count, low, high);
}

#endif /* TL_POOL_H */
