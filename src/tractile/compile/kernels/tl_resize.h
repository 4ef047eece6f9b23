/* tl_resize.h: TFLite's RESIZE_BILINEAR on NHWC tensors, the source rows and columns (lower and
 * upper index, fraction) computed on the host as the interpreter computes them
 * (tractile/ops/image_tflite.py): float32 and uint8 weigh the four taps in float32, each product
 * and sum its own rounding in the interpreter's order (uint8 adds 0.5 and truncates); int8 and
 * int16 use TFLite's integer kernel (fractions in 1/1024, the sum rounded over 20 bits). */
#ifndef TL_RESIZE_H
#define TL_RESIZE_H

#include "tl_common.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* the four taps of output (oy, ox) for channel c, offsets into x */
#define TL_RESIZE_TAPS                                                                                 \
  const int32_t top = (b * in_h + TL_READ_S32(rows + 2 * oy)) * in_w;                                \
  const int32_t bottom = (b * in_h + TL_READ_S32(rows + 2 * oy + 1)) * in_w;                         \
  const int32_t left = TL_READ_S32(cols + 2 * ox), right = TL_READ_S32(cols + 2 * ox + 1);

static inline float tl_resize_f32_value(float tl, float bl, float tr, float br, float dy, float dx) {
  const float one = 1.0f;
  float total = tl * (one - dy) * (one - dx);
  total = total + bl * dy * (one - dx);
  total = total + tr * (one - dy) * dx;
  total = total + br * dy * dx;
  return total;
}

/* float32 (uint8: quantized != 0, values rounded by +0.5 and truncation); rows and cols hold
 * (lower, upper) pairs, dys and dxs the fractions */
static inline void tl_resize_bilinear_f32(const float *x, float *y, int32_t batches, int32_t in_h, int32_t in_w,
                                          int32_t channels, int32_t out_h, int32_t out_w, const int32_t *rows,
                                          const float *dys, const int32_t *cols, const float *dxs) {
  int32_t b, oy, ox, c;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        TL_RESIZE_TAPS
        const float dy = TL_READ_F32(dys + oy), dx = TL_READ_F32(dxs + ox);
        float *out = y + ((b * out_h + oy) * out_w + ox) * channels;
        for (c = 0; c < channels; ++c)
          out[c] = tl_resize_f32_value(x[(top + left) * channels + c], x[(bottom + left) * channels + c],
                                       x[(top + right) * channels + c], x[(bottom + right) * channels + c], dy, dx);
      }
}

static inline void tl_resize_bilinear_u8(const uint8_t *x, uint8_t *y, int32_t batches, int32_t in_h, int32_t in_w,
                                         int32_t channels, int32_t out_h, int32_t out_w, const int32_t *rows,
                                         const float *dys, const int32_t *cols, const float *dxs) {
  int32_t b, oy, ox, c;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy)
      for (ox = 0; ox < out_w; ++ox) {
        TL_RESIZE_TAPS
        const float dy = TL_READ_F32(dys + oy), dx = TL_READ_F32(dxs + ox);
        uint8_t *out = y + ((b * out_h + oy) * out_w + ox) * channels;
        for (c = 0; c < channels; ++c) {
          const float total = tl_resize_f32_value(
              (float)x[(top + left) * channels + c], (float)x[(bottom + left) * channels + c],
              (float)x[(top + right) * channels + c], (float)x[(bottom + right) * channels + c], dy, dx);
          out[c] = (uint8_t)(total + 0.5f);
        }
      }
}

static inline int32_t tl_resize_integer_value(int64_t tl, int64_t bl, int64_t tr, int64_t br, int64_t dy, int64_t dx) {
  const int64_t one = 1 << 10;
  const int64_t total = tl * (one - dy) * (one - dx) + bl * dy * (one - dx) + tr * (one - dy) * dx + br * dy * dx;
  const int64_t rounded = total + (total > 0 ? ((int64_t)1 << 19) : -((int64_t)1 << 19));
  return (int32_t)(rounded / ((int64_t)1 << 20));
}

/* int8 and int16: dys and dxs the fractions in 1/1024 */
#define TL_RESIZE_BILINEAR_INTEGER(NAME, T)                                                                    \
  static inline void NAME(const T *x, T *y, int32_t batches, int32_t in_h, int32_t in_w, int32_t channels,     \
                          int32_t out_h, int32_t out_w, const int32_t *rows, const int32_t *dys,               \
                          const int32_t *cols, const int32_t *dxs) {                                           \
    int32_t b, oy, ox, c;                                                                                      \
    for (b = 0; b < batches; ++b)                                                                              \
      for (oy = 0; oy < out_h; ++oy)                                                                           \
        for (ox = 0; ox < out_w; ++ox) {                                                                       \
          TL_RESIZE_TAPS                                                                                       \
          const int64_t dy = TL_READ_S32(dys + oy), dx = TL_READ_S32(dxs + ox);                                \
          T *out = y + ((b * out_h + oy) * out_w + ox) * channels;                                             \
          for (c = 0; c < channels; ++c)                                                                       \
            out[c] = (T)tl_resize_integer_value(x[(top + left) * channels + c], x[(bottom + left) * channels + c], \
                                                x[(top + right) * channels + c],                               \
                                                x[(bottom + right) * channels + c], dy, dx);                  \
        }                                                                                                      \
  }

TL_RESIZE_BILINEAR_INTEGER(tl_resize_bilinear_i8, int8_t)
TL_RESIZE_BILINEAR_INTEGER(tl_resize_bilinear_i16, int16_t)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif /* TL_RESIZE_H */
