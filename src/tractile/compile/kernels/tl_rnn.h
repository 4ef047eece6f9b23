/* tl_rnn.h: ONNX LSTM and GRU, forward, float, default activations. x is [T][B][I] (layout 0)
 * or [B][T][I] (layout 1), y the same with hidden units; weights are stored transposed,
 * wt[i][gate column] and rt[u][gate column], so the inner loops run over contiguous gate
 * columns. h and c hold the running state (batch x hidden); `x_gates`/`h_gates` are scratch.
 * ONNX gate orders: LSTM i, o, f, c; GRU z, r, h. */
#ifndef TL_RNN_H
#define TL_RNN_H

#include <math.h>
#include <string.h>

#include "tl_common.h"

static inline float tl_sigmoid_f32(float v) { return 1.0f / (1.0f + expf(-v)); }

/* gates[j] = bias[j] + sum_i row[i] * wt[i][j] for j < columns */
static inline void tl_gate_product(const float *row, const float *wt, const float *bias, float *gates,
                                   int32_t depth, int32_t columns) {
  int32_t i, j;
  for (j = 0; j < columns; ++j) gates[j] = bias ? TL_READ_F32(bias + j) : 0.0f;
  for (i = 0; i < depth; ++i) {
    const float value = row[i];
    const float *w = wt + i * columns;
    for (j = 0; j < columns; ++j) gates[j] += value * TL_READ_F32(w + j);
  }
}

static inline void tl_onnx_lstm_f32(const float *x, const float *wt, const float *rt, const float *wb,
                                    const float *rb, float *h, float *c, float *y, float *restrict x_gates,
                                    float *restrict h_gates, int32_t steps, int32_t batch, int32_t inputs,
                                    int32_t hidden, int32_t layout) {
  int32_t t, b, u;
  for (t = 0; t < steps; ++t)
    for (b = 0; b < batch; ++b) {
      const int32_t row = layout ? b * steps + t : t * batch + b;
      float *hb = h + b * hidden, *cb = c + b * hidden;
      tl_gate_product(x + row * inputs, wt, wb, x_gates, inputs, 4 * hidden);
      tl_gate_product(hb, rt, rb, h_gates, hidden, 4 * hidden);
      for (u = 0; u < hidden; ++u) {
        const float in = tl_sigmoid_f32(x_gates[u] + h_gates[u]);
        const float out = tl_sigmoid_f32(x_gates[hidden + u] + h_gates[hidden + u]);
        const float forget = tl_sigmoid_f32(x_gates[2 * hidden + u] + h_gates[2 * hidden + u]);
        const float cell = tanhf(x_gates[3 * hidden + u] + h_gates[3 * hidden + u]);
        cb[u] = forget * cb[u] + in * cell;
        hb[u] = out * tanhf(cb[u]);
        y[row * hidden + u] = hb[u];
      }
    }
}

static inline void tl_onnx_gru_f32(const float *x, const float *wt, const float *rt, const float *wb,
                                   const float *rb, float *h, float *y, float *restrict x_gates,
                                   float *restrict h_gates, float *restrict reset_h, int32_t steps, int32_t batch,
                                   int32_t inputs, int32_t hidden, int32_t layout, int32_t linear_before_reset) {
  int32_t t, b, u, i;
  for (t = 0; t < steps; ++t)
    for (b = 0; b < batch; ++b) {
      const int32_t row = layout ? b * steps + t : t * batch + b;
      float *hb = h + b * hidden;
      tl_gate_product(x + row * inputs, wt, wb, x_gates, inputs, 3 * hidden);
      tl_gate_product(hb, rt, rb, h_gates, hidden, 3 * hidden);
      if (!linear_before_reset) { /* the candidate reads (r * h) R_h + Rb_h instead */
        for (u = 0; u < hidden; ++u)
          reset_h[u] = tl_sigmoid_f32(x_gates[hidden + u] + h_gates[hidden + u]) * hb[u];
        for (u = 0; u < hidden; ++u) h_gates[2 * hidden + u] = rb ? TL_READ_F32(rb + 2 * hidden + u) : 0.0f;
        for (i = 0; i < hidden; ++i)
          for (u = 0; u < hidden; ++u) h_gates[2 * hidden + u] += reset_h[i] * TL_READ_F32(rt + i * 3 * hidden + 2 * hidden + u);
      }
      for (u = 0; u < hidden; ++u) {
        const float update = tl_sigmoid_f32(x_gates[u] + h_gates[u]);
        const float reset = tl_sigmoid_f32(x_gates[hidden + u] + h_gates[hidden + u]);
        const float candidate = tanhf(x_gates[2 * hidden + u] +
                                      (linear_before_reset ? reset * h_gates[2 * hidden + u] : h_gates[2 * hidden + u]));
        reset_h[u] = (1.0f - update) * candidate + update * hb[u];
      }
      for (u = 0; u < hidden; ++u) {
        hb[u] = reset_h[u];
        y[row * hidden + u] = hb[u];
      }
    }
}

#endif /* TL_RNN_H */
