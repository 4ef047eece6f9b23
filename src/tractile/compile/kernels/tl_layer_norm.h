/* tl_layer_norm.h: ONNX LayerNormalization (float) over the last `depth` elements of each row:
 * y = (x - mean) / sqrt(variance + epsilon) * scale + bias (bias NULL: none); the mean and the
 * variance summed in double. y may be x. */
#ifndef TL_LAYER_NORM_H
#define TL_LAYER_NORM_H

#include <math.h>

#include "tl_common.h"

/* the sums of a row: in TL_LAYER_NORM_LANES independent double lanes on 64-bit hosts (vectorised),
 * one chain elsewhere */
#if defined(__x86_64__) || defined(__aarch64__)
#define TL_LAYER_NORM_LANES 8
#else
#define TL_LAYER_NORM_LANES 1
#endif

static inline double tl_layer_norm_sum(const float *x, int32_t depth, float mean, int32_t squared) {
  const int32_t full = depth - depth % TL_LAYER_NORM_LANES;
  double lane[TL_LAYER_NORM_LANES], total = 0.0;
  int32_t k, j;
  for (j = 0; j < TL_LAYER_NORM_LANES; ++j) lane[j] = 0.0;
  if (squared) {
    for (k = 0; k < full; k += TL_LAYER_NORM_LANES)
      for (j = 0; j < TL_LAYER_NORM_LANES; ++j) {
        const float centred = x[k + j] - mean;
        lane[j] += (double)(centred * centred);
      }
    for (k = full; k < depth; ++k) {
      const float centred = x[k] - mean;
      total += (double)(centred * centred);
    }
  } else {
    for (k = 0; k < full; k += TL_LAYER_NORM_LANES)
      for (j = 0; j < TL_LAYER_NORM_LANES; ++j) lane[j] += x[k + j];
    for (k = full; k < depth; ++k) total += x[k];
  }
  for (j = 0; j < TL_LAYER_NORM_LANES; ++j) total += lane[j];
  return total;
}

static inline void tl_layer_norm_f32(const float *x, float *y, const float *scale, const float *bias, int32_t rows,
                                     int32_t depth, float epsilon) {
  int32_t row, k;
  for (row = 0; row < rows; ++row) {
    const float *xr = x + row * depth;
    float *yr = y + row * depth;
    const float mean = (float)(tl_layer_norm_sum(xr, depth, 0.0f, 0) / depth);
    const float inverse = 1.0f / sqrtf((float)(tl_layer_norm_sum(xr, depth, mean, 1) / depth) + epsilon);
    for (k = 0; k < depth; ++k) {
      const float normal = (xr[k] - mean) * inverse * TL_READ_F32(scale + k);
      yr[k] = bias ? normal + TL_READ_F32(bias + k) : normal;
    }
  }
}

#endif /* TL_LAYER_NORM_H */
