/* tl_layer_norm.h: ONNX LayerNormalization (float) over the last `depth` elements of each row:
 * y = (x - mean) / sqrt(variance + epsilon) * scale + bias (bias NULL: none); the mean and the
 * variance summed in double. y may be x. */
#ifndef TL_LAYER_NORM_H
#define TL_LAYER_NORM_H

#include <math.h>

#include "tl_common.h"

static inline void tl_layer_norm_f32(const float *x, float *y, const float *scale, const float *bias, int32_t rows,
                                     int32_t depth, float epsilon) {
  int32_t row, k;
  for (row = 0; row < rows; ++row) {
    const float *xr = x + row * depth;
    float *yr = y + row * depth;
    double sum = 0.0, squares = 0.0;
    float mean, inverse;
    for (k = 0; k < depth; ++k) sum += xr[k];
    mean = (float)(sum / depth);
    for (k = 0; k < depth; ++k) {
      const float centred = xr[k] - mean;
      squares += (double)(centred * centred);
    }
    inverse = 1.0f / sqrtf((float)(squares / depth) + epsilon);
    for (k = 0; k < depth; ++k) {
      const float normal = (xr[k] - mean) * inverse * TL_READ_F32(scale + k);
      yr[k] = bias ? normal + TL_READ_F32(bias + k) : normal;
    }
  }
}

#endif /* TL_LAYER_NORM_H */
