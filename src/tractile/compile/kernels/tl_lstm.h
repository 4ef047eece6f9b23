/* tl_lstm.h: TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM (no peepholes, no projection), float and the
 * integer 8x8_16 kernel, with the output and cell states kept in the context.
 *
 * Gate columns sit side by side (input gate omitted with CIFG, then forget, cell, output),
 * `units` each. The integer kernel follows the interpreter: int16 gates in Q3.12 from two
 * requantized products, gemmlowp's int16 sigmoid and tanh read from tables made on the host
 * (index: value + 32768), an int16 cell state with a power-of-two scale. */
#ifndef TL_LSTM_H
#define TL_LSTM_H

#include <math.h>

#include "tl_common.h"

static inline int32_t tl_lstm_index(int32_t t, int32_t b, int32_t steps, int32_t batches, int32_t time_major) {
  return time_major ? t * batches + b : b * steps + t;
}

static inline void tl_lstm_f32(const float *x, const float *wx, const float *bias, const float *wh, float *h,
                               float *c, float *y, float *gates, int32_t steps, int32_t batches, int32_t depth,
                               int32_t units, int32_t cifg, int32_t time_major, float cell_clip) {
  const int32_t columns = (cifg ? 3 : 4) * units, first = cifg ? -1 : 0;
  int32_t t, b, d, u, j;
  for (t = 0; t < steps; ++t)
    for (b = 0; b < batches; ++b) {
      const int32_t row = tl_lstm_index(t, b, steps, batches, time_major);
      const float *xr = x + row * depth;
      float *hb = h + b * units, *cb = c + b * units;
      for (j = 0; j < columns; ++j) gates[j] = TL_READ_F32(bias + j);
      for (d = 0; d < depth; ++d)
        for (j = 0; j < columns; ++j) gates[j] += xr[d] * TL_READ_F32(wx + d * columns + j);
      for (u = 0; u < units; ++u)
        for (j = 0; j < columns; ++j) gates[j] += hb[u] * TL_READ_F32(wh + u * columns + j);
      for (u = 0; u < units; ++u) {
        const float forget = 1.0f / (1.0f + expf(-gates[(1 + first) * units + u]));
        const float input = cifg ? 1.0f - forget : 1.0f / (1.0f + expf(-gates[u]));
        const float cell = tanhf(gates[(2 + first) * units + u]);
        float state = forget * cb[u] + input * cell;
        if (cell_clip > 0.0f) state = tl_clamp_f32(state, -cell_clip, cell_clip);
        cb[u] = state;
        hb[u] = 1.0f / (1.0f + expf(-gates[(3 + first) * units + u])) * tanhf(state);
        y[row * units + u] = hb[u];
      }
    }
}

static inline int32_t tl_clamp16(int32_t x) { return tl_clamp_i32(x, -32768, 32767); }

static inline void tl_lstm_s8(const int8_t *x, const int8_t *wx, const int32_t *bx, const int8_t *wh,
                              const int32_t *bh, const int32_t *x_multiplier, const int32_t *x_shift,
                              const int32_t *h_multiplier, const int32_t *h_shift, int8_t *h, int16_t *c, int8_t *y,
                              int16_t *gates, const int16_t *sigmoid, const int16_t *tanh_q3,
                              const int16_t *tanh_cell, int32_t steps, int32_t batches, int32_t depth, int32_t units,
                              int32_t cifg, int32_t time_major, int32_t cell_shift, int32_t cell_clip,
                              int32_t hidden_multiplier, int32_t hidden_shift, int32_t hidden_zero) {
  const int32_t gate_count = cifg ? 3 : 4, first = cifg ? -1 : 0;
  int32_t t, b, d, u, k;
  for (t = 0; t < steps; ++t)
    for (b = 0; b < batches; ++b) {
      const int32_t row = tl_lstm_index(t, b, steps, batches, time_major);
      const int8_t *xr = x + row * depth;
      int8_t *hb = h + b * units;
      int16_t *cb = c + b * units;
      for (k = 0; k < gate_count; ++k)
        for (u = 0; u < units; ++u) {
          const int32_t j = k * units + u;
          int32_t from_x = TL_READ_S32(bx + j), from_h = TL_READ_S32(bh + j), value;
          for (d = 0; d < depth; ++d) from_x += (int32_t)xr[d] * (int32_t)TL_READ_S8(wx + j * depth + d);
          for (d = 0; d < units; ++d) from_h += (int32_t)hb[d] * (int32_t)TL_READ_S8(wh + j * units + d);
          from_x = tl_clamp16(tl_mbqm(from_x, TL_READ_S32(x_multiplier + k), (int)TL_READ_S32(x_shift + k)));
          value = tl_clamp16(tl_mbqm(from_h, TL_READ_S32(h_multiplier + k), (int)TL_READ_S32(h_shift + k)) + from_x);
          gates[j] = TL_READ_S16((k + (cifg ? 1 : 0) == 2 ? tanh_q3 : sigmoid) + value + 32768);
        }
      for (u = 0; u < units; ++u) {
        const int32_t forget = gates[(1 + first) * units + u], cell = gates[(2 + first) * units + u];
        const int32_t input = cifg ? 32767 - forget : gates[u];
        int32_t kept = (int16_t)tl_rdbpot(forget * (int32_t)cb[u], 15);
        int32_t update = (int16_t)tl_rdbpot(input * cell, cell_shift);
        int32_t state = tl_clamp16(kept + update), product;
        if (cell_clip > 0) state = tl_clamp_i32(state, -cell_clip, cell_clip);
        cb[u] = (int16_t)state;
        product = (int32_t)gates[(3 + first) * units + u] * (int32_t)TL_READ_S16(tanh_cell + state + 32768);
        hb[u] = (int8_t)tl_clamp_i32(tl_mbqm(product, hidden_multiplier, hidden_shift) + hidden_zero, -128, 127);
      }
      for (u = 0; u < units; ++u) y[row * units + u] = hb[u];
    }
}

#endif /* TL_LSTM_H */
