/* tl_svdf.h: TFLite SVDF, a rank-decomposed dense layer over a memory of past projections.
 *
 * The memory (TFLite's variable tensor) lives in the context: memory[b][f][m] for batch b,
 * filter f and the last `frames` frames, oldest first. A call shifts each filter's frames by
 * one (a memmove of frames - 1 elements: the reduction that follows reads them all anyway, and
 * contiguous constant-length loops vectorise, which a ring's two split loops did not), writes
 * the projection of the input on the filter (wf[f][d], filter-major) as the newest frame, and
 * reduces each filter's frames against its time weights (wt[f][m]); `rank` consecutive
 * filters sum into one output unit.
 *
 * Integer SVDF follows the interpreter (TFLite Micro's kernel for int8 memory with a zero
 * point, TFLite's for int16 memory): the input zero point is folded into fbias[f] on the host
 * (-x_zero * sum_d wf[f][d]) and the memory zero point with the bias into ubias[u]
 * (bias[u] - m_zero * sum of the unit's time weights). Both are int32 sums that wrap modulo 2^32
 * as TFLite's int32 accumulators do (uint32_t arithmetic here), so the folded constants were
 * reduced modulo 2^32 on the host. The int16 memory comes with int16 time weights (TFLite). */
#ifndef TL_SVDF_H
#define TL_SVDF_H

#include <string.h>

#include "tl_common.h"
#include "tl_fully_connected.h"

/* the projection of one input row on filter f, requantized to the memory's range */
static inline int32_t tl_svdf_project_s8(const int8_t *x, const int8_t *wf, const int32_t *fbias, int32_t f,
                                         int32_t depth, int32_t multiplier, int32_t shift, int32_t m_low,
                                         int32_t m_high, int32_t m_zero) {
  const int32_t dot = tl_add_wrap_s32(tl_dot_s8(x, wf + f * depth, depth), TL_READ_S32(fbias + f));
  return tl_clamp_i32(tl_mbqm(dot, multiplier, shift), m_low, m_high) + m_zero;
}

static inline int8_t tl_svdf_output_s8(int32_t acc, int32_t multiplier, int32_t shift, int32_t y_zero,
                                       int32_t low, int32_t high) {
  return (int8_t)tl_clamp_i32(tl_mbqm(acc, multiplier, shift) + y_zero, low, high);
}

/* int8 input and output, int8 memory (TFLite Micro) */
static inline void tl_svdf_s8(const int8_t *x, const int8_t *wf, const int32_t *fbias, const int8_t *wt,
                              const int32_t *ubias, int8_t *memory, int8_t *y, int32_t batches,
                              int32_t depth, int32_t filters, int32_t frames, int32_t rank, int32_t multiplier1,
                              int32_t shift1, int32_t m_zero, int32_t multiplier2, int32_t shift2, int32_t y_zero,
                              int32_t low, int32_t high) {
  int32_t b, f, m;
  for (b = 0; b < batches; ++b) {
    int8_t *rows = memory + b * filters * frames;
    for (f = 0; f < filters; ++f) {
      int8_t *row = rows + f * frames;
      memmove(row, row + 1, (size_t)(frames - 1) * sizeof *row);
      /* out of int8 (the zero point pushed it over) the value wraps, as in C and TFLite Micro */
      row[frames - 1] = (int8_t)tl_svdf_project_s8(x + b * depth, wf, fbias, f, depth, multiplier1, shift1, -128,
                                                   127, m_zero);
    }
    for (f = 0; f < filters; f += rank) {
      uint32_t acc = (uint32_t)TL_READ_S32(ubias + f / rank);
      int32_t r;
      for (r = f; r < f + rank; ++r) {
        const int8_t *frame = rows + r * frames;
        const int8_t *w = wt + r * frames;
        for (m = 0; m < frames; ++m) acc += (uint32_t)(frame[m] * TL_READ_S8(w + m));
      }
      y[b * (filters / rank) + f / rank] = tl_svdf_output_s8(tl_wrap_s32(acc), multiplier2, shift2, y_zero, low,
                                                             high);
    }
  }
}

/* int8 input and output, int16 memory and time weights (TFLite) */
static inline void tl_svdf_s8_s16(const int8_t *x, const int8_t *wf, const int32_t *fbias, const int16_t *wt,
                                  const int32_t *ubias, int16_t *memory, int8_t *y, int32_t batches,
                                  int32_t depth, int32_t filters, int32_t frames, int32_t rank, int32_t multiplier1,
                                  int32_t shift1, int32_t m_zero, int32_t multiplier2, int32_t shift2,
                                  int32_t y_zero, int32_t low, int32_t high) {
  int32_t b, f, m;
  for (b = 0; b < batches; ++b) {
    int16_t *rows = memory + b * filters * frames;
    for (f = 0; f < filters; ++f) {
      int16_t *row = rows + f * frames;
      memmove(row, row + 1, (size_t)(frames - 1) * sizeof *row);
      row[frames - 1] = (int16_t)tl_svdf_project_s8(x + b * depth, wf, fbias, f, depth, multiplier1, shift1,
                                                    -32768, 32767, m_zero);
    }
    for (f = 0; f < filters; f += rank) {
      uint32_t acc = (uint32_t)TL_READ_S32(ubias + f / rank);
      int32_t r;
      for (r = f; r < f + rank; ++r) {
        const int16_t *frame = rows + r * frames;
        const int16_t *w = wt + r * frames;
        for (m = 0; m < frames; ++m) acc += (uint32_t)((int32_t)frame[m] * TL_READ_S16(w + m));
      }
      y[b * (filters / rank) + f / rank] = tl_svdf_output_s8(tl_wrap_s32(acc), multiplier2, shift2, y_zero, low,
                                                             high);
    }
  }
}

/* float; bias may be NULL; the fused activation is a clamp to [low, high] */
static inline void tl_svdf_f32(const float *x, const float *wf, const float *wt, const float *bias, float *memory,
                               float *y, int32_t batches, int32_t depth, int32_t filters,
                               int32_t frames, int32_t rank, float low, float high) {
  int32_t b, f, m, d;
  for (b = 0; b < batches; ++b) {
    float *rows = memory + b * filters * frames;
    const float *row = x + b * depth;
    for (f = 0; f < filters; ++f) {
      float dot = 0.0f;
      for (d = 0; d < depth; ++d) dot += row[d] * TL_READ_F32(wf + f * depth + d);
      memmove(rows + f * frames, rows + f * frames + 1, (size_t)(frames - 1) * sizeof *rows);
      rows[f * frames + frames - 1] = dot;
    }
    for (f = 0; f < filters; f += rank) {
      float acc = 0.0f;
      int32_t r;
      for (r = f; r < f + rank; ++r) {
        const float *frame = rows + r * frames;
        const float *w = wt + r * frames;
        float sum = 0.0f;
        for (m = 0; m < frames; ++m) sum += frame[m] * TL_READ_F32(w + m);
        acc += sum;
      }
      if (bias) acc += TL_READ_F32(bias + f / rank);
      y[b * (filters / rank) + f / rank] = tl_clamp_f32(acc, low, high);
    }
  }
}

#endif /* TL_SVDF_H */
