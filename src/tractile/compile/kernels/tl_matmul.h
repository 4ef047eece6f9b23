/* Integer products of two computed operands: TFLite's int8 and int16 BATCH_MATMUL.
 *
 * y[b][m][n] = clamp(requantize(sum_k (a[m][k] + a_offset) * (bm[k][n] + b_offset)) + y_zero)
 * per product b of the broadcast batch, whose matrices start at a_offsets[b] and b_offsets[b]
 * (in elements). The strides say where a[m][k] (m * a_row + k * a_col) and bm[k][n]
 * (k * b_row + n * b_col) are, so transposed operands are read in place. int8 accumulates in
 * int32 as TFLite does (the emitter checks the bound), int16 in int64 with the 64-bit
 * requantization. */
#ifndef TL_MATMUL_H
#define TL_MATMUL_H

#include "tl_common.h"

static inline void tl_matmul_s8(const int8_t *a, const int8_t *bm, int8_t *y, int batches, const int32_t *a_offsets,
                                const int32_t *b_offsets, int rows, int depth, int cols, int a_row, int a_col,
                                int b_row, int b_col, int32_t a_offset, int32_t b_offset, int32_t multiplier,
                                int shift, int32_t y_zero, int32_t low, int32_t high) {
  int b, m, n, k;
  for (b = 0; b < batches; ++b) {
    const int8_t *pa = a + TL_READ_S32(a_offsets + b);
    const int8_t *pb = bm + TL_READ_S32(b_offsets + b);
    int8_t *py = y + b * rows * cols;
    for (m = 0; m < rows; ++m) {
      for (n = 0; n < cols; ++n) {
        int32_t acc = 0;
        for (k = 0; k < depth; ++k) {
          acc += ((int32_t)pa[m * a_row + k * a_col] + a_offset) * ((int32_t)pb[k * b_row + n * b_col] + b_offset);
        }
        py[m * cols + n] = (int8_t)tl_clamp_i32(tl_mbqm(acc, multiplier, shift) + y_zero, low, high);
      }
    }
  }
}

static inline void tl_matmul_s16(const int16_t *a, const int16_t *bm, int16_t *y, int batches,
                                 const int32_t *a_offsets, const int32_t *b_offsets, int rows, int depth, int cols,
                                 int a_row, int a_col, int b_row, int b_col, int32_t a_offset, int32_t b_offset,
                                 int32_t multiplier, int shift, int32_t y_zero, int32_t low, int32_t high) {
  int b, m, n, k;
  for (b = 0; b < batches; ++b) {
    const int16_t *pa = a + TL_READ_S32(a_offsets + b);
    const int16_t *pb = bm + TL_READ_S32(b_offsets + b);
    int16_t *py = y + b * rows * cols;
    for (m = 0; m < rows; ++m) {
      for (n = 0; n < cols; ++n) {
        int64_t acc = 0;
        for (k = 0; k < depth; ++k) {
          acc += (int64_t)((int32_t)pa[m * a_row + k * a_col] + a_offset) *
                 ((int32_t)pb[k * b_row + n * b_col] + b_offset);
        }
        py[m * cols + n] = (int16_t)tl_clamp_i32(tl_mbqm64(acc, multiplier, shift) + y_zero, low, high);
      }
    }
  }
}

/* float, the operands read through the same strides (BATCH_MATMUL with adj_x / adj_y) */
static inline void tl_matmul_f32_strided(const float *a, const float *bm, float *y, int batches,
                                         const int32_t *a_offsets, const int32_t *b_offsets, int rows, int depth,
                                         int cols, int a_row, int a_col, int b_row, int b_col) {
  int b, m, n, k;
  for (b = 0; b < batches; ++b) {
    const float *pa = a + TL_READ_S32(a_offsets + b);
    const float *pb = bm + TL_READ_S32(b_offsets + b);
    float *py = y + b * rows * cols;
    for (m = 0; m < rows; ++m) {
      for (n = 0; n < cols; ++n) {
        float acc = 0.0f;
        for (k = 0; k < depth; ++k) acc += pa[m * a_row + k * a_col] * pb[k * b_row + n * b_col];
        py[m * cols + n] = acc;
      }
    }
  }
}

#endif /* TL_MATMUL_H */
