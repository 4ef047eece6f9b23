/* tl_rnn.h: ONNX RNN, GRU and LSTM (float), one direction per call.
 *
 * Weights keep ONNX's gate order, transposed (depth-major, so the products vectorise over
 * gate rows without reordering any sum): wt[i][gate * hidden + u] and rt[k][gate * hidden + u];
 * wb and rb are ONNX's two biases (NULL: zeros), added to the input and the recurrent products
 * before these are summed (onnxruntime's order, within rounding of it over long recurrences).
 * Tensors are addressed through element strides so one kernel serves both layouts and both
 * directions: x[t * x_step + b * x_batch + i], y[t * y_step + b * y_batch + u], and the
 * states h[b * s_batch + u] (c likewise), which hold the initial states on entry and the
 * final ones on return. A reverse direction walks time backwards. `gates` is a scratch of
 * 2 * gate_count * hidden floats (GRU: 7 * hidden). Activations are functions the generated
 * code defines from the activation ops' C expressions, `act[which](x)`. */
#ifndef TL_RNN_H
#define TL_RNN_H

#include <math.h>
#include <stddef.h>

#include "tl_common.h"

/* an activation function of the generated code */
typedef float (*tl_rnn_act_fn)(float);

/* clip <= 0: no clip */
static inline float tl_rnn_clip(float x, float clip) { return clip > 0.0f ? tl_clamp_f32(x, -clip, clip) : x; }

/* columns of the products accumulated together: eight 256-bit vectors on 64-bit hosts, a small
 * stack array on microcontrollers */
#ifndef TL_RNN_BLOCK
#if defined(__x86_64__) || defined(__aarch64__)
#define TL_RNN_BLOCK 64
#else
#define TL_RNN_BLOCK 8
#endif
#endif

/* out[j] = init[j] (0 when init is NULL) + sum_k v[k] * wt[k * stride + j] for j < count, summed
 * over k in order. A block of columns is accumulated in a local array across all of k, so the
 * inner loop (over contiguous columns, independent sums) vectorises and out is written once. */
static inline void tl_rnn_product(float *out, const float *init, const float *v, const float *wt, int32_t depth,
                                  int32_t stride, int32_t count) {
  int32_t k, j, jj;
  for (j = 0; j + TL_RNN_BLOCK <= count; j += TL_RNN_BLOCK) {
    float acc[TL_RNN_BLOCK];
    for (jj = 0; jj < TL_RNN_BLOCK; ++jj) acc[jj] = init ? TL_READ_F32(init + j + jj) : 0.0f;
    for (k = 0; k < depth; ++k) {
      const float value = v[k];
      const float *w = wt + k * stride + j;
      for (jj = 0; jj < TL_RNN_BLOCK; ++jj) acc[jj] += value * TL_READ_F32(w + jj);
    }
    for (jj = 0; jj < TL_RNN_BLOCK; ++jj) out[j + jj] = acc[jj];
  }
  if (j < count) {
    const int32_t rest = count - j;
    for (jj = 0; jj < rest; ++jj) out[j + jj] = init ? TL_READ_F32(init + j + jj) : 0.0f;
    for (k = 0; k < depth; ++k) {
      const float value = v[k];
      const float *w = wt + k * stride + j;
      for (jj = 0; jj < rest; ++jj) out[j + jj] += value * TL_READ_F32(w + jj);
    }
  }
}

/* the time index of the s-th step a direction takes */
#define TL_RNN_STEP(t, steps, reverse) ((reverse) ? (steps) - 1 - (t) : (t))

/* ONNX RNN: h = f(clip((x W^T + Wb) + (h R^T + Rb))); gates: 2 * hidden floats */
static inline void tl_rnn_f32(const float *x, float *y, float *h, float *gates, const float *w, const float *r,
                              const float *wb, const float *rb, const tl_rnn_act_fn *act, float clip, int32_t steps,
                              int32_t batches, int32_t depth, int32_t hidden, int reverse, int32_t x_step,
                              int32_t x_batch, int32_t y_step, int32_t y_batch, int32_t s_batch) {
  float *from_h = gates + hidden;
  int32_t b, s, u;
  for (b = 0; b < batches; ++b) {
    float *hb = h + b * s_batch;
    for (s = 0; s < steps; ++s) {
      const int32_t t = TL_RNN_STEP(s, steps, reverse);
      float *yr = y + t * y_step + b * y_batch;
      tl_rnn_product(gates, wb, x + t * x_step + b * x_batch, w, depth, hidden, hidden);
      tl_rnn_product(from_h, rb, hb, r, hidden, hidden, hidden);
      for (u = 0; u < hidden; ++u) yr[u] = hb[u] = act[0](tl_rnn_clip(gates[u] + from_h[u], clip));
    }
  }
}

/* ONNX GRU (gates z, r, h); gates: 7 * hidden floats (the input parts, the recurrent parts, r . h) */
static inline void tl_gru_f32(const float *x, float *y, float *h, float *gates, const float *w, const float *r,
                              const float *wb, const float *rb, const tl_rnn_act_fn *act, float clip,
                              int linear_before_reset, int32_t steps, int32_t batches, int32_t depth, int32_t hidden, int reverse,
                              int32_t x_step, int32_t x_batch, int32_t y_step, int32_t y_batch, int32_t s_batch) {
  const int32_t stride = 3 * hidden;
  float *from_h = gates + 3 * hidden, *reset_h = gates + 6 * hidden;
  int32_t b, s, u;
  for (b = 0; b < batches; ++b) {
    float *hb = h + b * s_batch;
    for (s = 0; s < steps; ++s) {
      const int32_t t = TL_RNN_STEP(s, steps, reverse);
      float *yr = y + t * y_step + b * y_batch;
      tl_rnn_product(gates, wb, x + t * x_step + b * x_batch, w, depth, stride, stride);
      tl_rnn_product(from_h, rb, hb, r, hidden, stride, linear_before_reset ? stride : 2 * hidden);
      for (u = 0; u < 2 * hidden; ++u) gates[u] = act[0](tl_rnn_clip(gates[u] + from_h[u], clip));
      if (!linear_before_reset) { /* the candidate reads (r . h) R_h + Rb_h */
        for (u = 0; u < hidden; ++u) reset_h[u] = gates[hidden + u] * hb[u];
        tl_rnn_product(from_h + 2 * hidden, rb ? rb + 2 * hidden : NULL, reset_h, r + 2 * hidden, hidden, stride,
                       hidden);
      }
      for (u = 0; u < hidden; ++u) {
        const float recurrent = linear_before_reset ? gates[hidden + u] * from_h[2 * hidden + u]
                                                    : from_h[2 * hidden + u];
        const float candidate = act[1](tl_rnn_clip(gates[2 * hidden + u] + recurrent, clip));
        yr[u] = hb[u] = candidate + (hb[u] - candidate) * gates[u];
      }
    }
  }
}

/* ONNX LSTM (gates i, o, f, c); peep (i, o, f: 3 * hidden) may be NULL; gates: 8 * hidden floats */
static inline void tl_onnx_lstm_f32(const float *x, float *y, float *h, float *c, float *gates, const float *w,
                                    const float *r, const float *wb, const float *rb, const float *peep,
                                    const tl_rnn_act_fn *act, float clip, int input_forget, int32_t steps,
                                    int32_t batches, int32_t depth, int32_t hidden, int reverse, int32_t x_step, int32_t x_batch,
                                    int32_t y_step, int32_t y_batch, int32_t s_batch) {
  float *from_h = gates + 4 * hidden;
  int32_t b, s, u;
  for (b = 0; b < batches; ++b) {
    float *hb = h + b * s_batch;
    float *cb = c + b * s_batch;
    for (s = 0; s < steps; ++s) {
      const int32_t t = TL_RNN_STEP(s, steps, reverse);
      float *yr = y + t * y_step + b * y_batch;
      tl_rnn_product(gates, wb, x + t * x_step + b * x_batch, w, depth, 4 * hidden, 4 * hidden);
      tl_rnn_product(from_h, rb, hb, r, hidden, 4 * hidden, 4 * hidden);
      for (u = 0; u < hidden; ++u) {
        float i_raw = gates[u] + from_h[u], o_raw = gates[hidden + u] + from_h[hidden + u];
        float f_raw = gates[2 * hidden + u] + from_h[2 * hidden + u];
        float i, f, state;
        if (peep) {
          i_raw += TL_READ_F32(peep + u) * cb[u];
          f_raw += TL_READ_F32(peep + 2 * hidden + u) * cb[u];
        }
        i = act[0](tl_rnn_clip(i_raw, clip));
        f = input_forget ? 1.0f - i : act[0](tl_rnn_clip(f_raw, clip));
        state = f * cb[u] + i * act[1](tl_rnn_clip(gates[3 * hidden + u] + from_h[3 * hidden + u], clip));
        cb[u] = state;
        if (peep) o_raw += TL_READ_F32(peep + hidden + u) * state;
        yr[u] = hb[u] = act[0](tl_rnn_clip(o_raw, clip)) * act[2](state);
      }
    }
  }
}

/* a state's initial value from a constant array (which may be in program memory) */
static inline void tl_rnn_load_f32(float *state, const float *constant, int32_t count) {
  int32_t k;
  for (k = 0; k < count; ++k) state[k] = TL_READ_F32(constant + k);
}

/* zero `steps` steps of y (the frames of a stream before its start) */
static inline void tl_rnn_zero_steps(float *y, int32_t steps, int32_t batches, int32_t hidden, int32_t y_step,
                                     int32_t y_batch) {
  int32_t t, b, u;
  for (t = 0; t < steps; ++t)
    for (b = 0; b < batches; ++b)
      for (u = 0; u < hidden; ++u) y[t * y_step + b * y_batch + u] = 0.0f;
}

/* streaming: how many of this push's `pulse` frames come before the stream's start (`delay`
 * frames in), the position advancing (it stops counting once past the delay) */
static inline int32_t tl_stream_skip(int32_t *position, int32_t delay, int32_t pulse) {
  int32_t skip = delay - *position;
  skip = skip < 0 ? 0 : (skip > pulse ? pulse : skip);
  if (*position < delay) *position += pulse;
  return skip;
}

#endif /* TL_RNN_H */
