/* tl_svdf.h: TFLite's SVDF. The memory (batch x filters x memory_size, in the context) shifts
 * by one frame per invoke, takes the feature projection of the new input as its last frame,
 * and is reduced against the time weights; `rank` filters sum into each unit. Integer SVDF
 * follows the interpreter (TFLite Micro's int8 memory with a zero point, or TFLite's int16). */
#ifndef TL_SVDF_H
#define TL_SVDF_H

#include <string.h>

#include "tl_common.h"

static inline void tl_svdf_f32(const float *x, const float *features, const float *times, const float *bias,
                               float *memory, float *y, int32_t batches, int32_t depth, int32_t filters,
                               int32_t memory_size, int32_t rank, float low, float high) {
  const int32_t units = filters / rank;
  int32_t b, f, d, m, u;
  for (b = 0; b < batches; ++b) {
    for (f = 0; f < filters; ++f) {
      float *row = memory + (b * filters + f) * memory_size;
      float projected = 0.0f;
      memmove(row, row + 1, (size_t)(memory_size - 1) * sizeof *row);
      for (d = 0; d < depth; ++d) projected += x[b * depth + d] * TL_READ_F32(features + f * depth + d);
      row[memory_size - 1] = projected;
    }
    for (u = 0; u < units; ++u) {
      float total = bias ? TL_READ_F32(bias + u) : 0.0f;
      for (f = u * rank; f < (u + 1) * rank; ++f) {
        const float *row = memory + (b * filters + f) * memory_size;
        float sum = 0.0f;
        for (m = 0; m < memory_size; ++m) sum += row[m] * TL_READ_F32(times + f * memory_size + m);
        total += sum;
      }
      y[b * units + u] = tl_clamp_f32(total, low, high);
    }
  }
}

#define TL_SVDF_Q(name, state_type, state_low, state_high)                                                       \
  static inline void name(const int8_t *x, const int8_t *features, const int8_t *times, const int32_t *bias,    \
                          state_type *memory, int8_t *y, int32_t batches, int32_t depth, int32_t filters,       \
                          int32_t memory_size, int32_t rank, int32_t x_zero, int32_t state_zero,                \
                          int32_t first_multiplier, int32_t first_shift, int32_t second_multiplier,             \
                          int32_t second_shift, int32_t y_zero, int32_t low, int32_t high) {                    \
    const int32_t units = filters / rank;                                                                       \
    int32_t b, f, d, m, u;                                                                                      \
    for (b = 0; b < batches; ++b) {                                                                             \
      for (f = 0; f < filters; ++f) {                                                                           \
        state_type *row = memory + (b * filters + f) * memory_size;                                             \
        int32_t dot = 0, projected;                                                                             \
        memmove(row, row + 1, (size_t)(memory_size - 1) * sizeof *row);                                         \
        for (d = 0; d < depth; ++d)                                                                             \
          dot += ((int32_t)x[b * depth + d] - x_zero) * (int32_t)TL_READ_S8(features + f * depth + d);          \
        projected = tl_clamp_i32(tl_mbqm(dot, first_multiplier, first_shift), state_low, state_high) +           \
                    state_zero;                                                                                 \
        /* out of the state type's range (a zero point pushed it over) it wraps, as in C and TFLite */           \
        row[memory_size - 1] = (state_type)projected;                                                           \
      }                                                                                                         \
      for (u = 0; u < units; ++u) {                                                                             \
        int32_t acc = bias ? TL_READ_S32(bias + u) : 0;                                                         \
        for (f = u * rank; f < (u + 1) * rank; ++f) {                                                           \
          const state_type *row = memory + (b * filters + f) * memory_size;                                     \
          for (m = 0; m < memory_size; ++m)                                                                     \
            acc += ((int32_t)row[m] - state_zero) * (int32_t)TL_READ_S8(times + f * memory_size + m);           \
        }                                                                                                       \
        y[b * units + u] = (int8_t)tl_clamp_i32(tl_mbqm(acc, second_multiplier, second_shift) + y_zero, low, high); \
      }                                                                                                         \
    }                                                                                                           \
  }

TL_SVDF_Q(tl_svdf_s8, int8_t, -128, 127)
TL_SVDF_Q(tl_svdf_s16, int16_t, -32768, 32767)

#endif /* TL_SVDF_H */
