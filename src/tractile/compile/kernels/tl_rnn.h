/* tl_rnn.h: ONNX RNN, GRU and LSTM (float), one direction per call.
 *
 * Weights keep ONNX's gate order, transposed (depth-major, so the products vectorise over
 * gate rows without reordering any sum): wt[i][gate * hidden + u] and rt[k][gate * hidden + u],
 * rt packed in blocks of columns (TL_RNN_PACK);
 * wb and rb are ONNX's two biases (NULL: zeros), added to the input and the recurrent products
 * before these are summed (onnxruntime's order, within rounding of it over long recurrences).
 * Tensors are addressed through element strides so one kernel serves both layouts and both
 * directions: x[t * x_step + b * x_batch + i], y[t * y_step + b * y_batch + u], and the
 * states h[b * s_batch + u] (c likewise), which hold the initial states on entry and the
 * final ones on return. A reverse direction walks time backwards. `gates` is a scratch of
 * 2 * gate_count * hidden floats (GRU: 7 * hidden). With w NULL, x holds each step's input products
 * (biases included) instead of its inputs, gate_count * hidden floats a row (x_step, x_batch in
 * those rows). Activations are functions the generated
 * code defines from the activation ops' C expressions, `act[which](x)`. */
#ifndef TL_RNN_H
#define TL_RNN_H

#include <math.h>
#include <stddef.h>

#include "tl_common.h"
#include "tl_exp.h"

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

/* the recurrent weights' layout: R^T's columns in blocks of TL_RNN_PACK, each block's rows
 * contiguous ([depth][TL_RNN_PACK], the last block [depth][count % TL_RNN_PACK]), so a step reads
 * them in one stream; GRU's columns of the candidate (2 h .. 3 h) are packed apart */
#define TL_RNN_PACK 64

/* out[j] = init[j] + sum_k v[k] * rt[k][j] for j < count, rt packed as above from `p` (the same
 * sums, in the same order, as tl_rnn_product on the unpacked columns) */
static inline void tl_rnn_packed_product(float *out, const float *init, const float *v, const float *p, int32_t depth,
                                         int32_t count) {
  int32_t j;
  for (j = 0; j < count; j += TL_RNN_PACK) {
    const int32_t width = count - j < TL_RNN_PACK ? count - j : TL_RNN_PACK;
    tl_rnn_product(out + j, init ? init + j : NULL, v, p + j * depth, depth, width, width);
  }
}

/* The default activations, sigmoid and tanh, as functions the generated code puts in its tables.
 * On 64-bit hosts they are branch-free polynomials the compiler vectorises over a gate's units
 * (tl_exp.h's exp; tanh of small arguments by its odd series to keep the relative precision);
 * elsewhere expf and tanhf. tl_rnn_apply runs either over whole arrays. */
#ifndef TL_RNN_VECTOR_ACT
#define TL_RNN_VECTOR_ACT TL_VECTOR_EXP
#endif

#if TL_RNN_VECTOR_ACT
static inline float tl_rnn_sigmoid_of(float x) { return 1.0f / (1.0f + tl_exp_poly(-x)); }

static inline float tl_rnn_tanh_of(float x) {
  const float a = fabsf(x);
  const float e = tl_exp_poly(-2.0f * a);
  const float large = (1.0f - e) / (1.0f + e);
  const float z = x * x;
  const float series = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                         + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
  return isless(a, 0.625f) ? series : copysignf(large, x);
}
#else
static inline float tl_rnn_sigmoid_of(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float tl_rnn_tanh_of(float x) { return tanhf(x); }
#endif

static float tl_rnn_sigmoid(float x) { return tl_rnn_sigmoid_of(x); }
static float tl_rnn_tanh(float x) { return tl_rnn_tanh_of(x); }

/* v[k] = act(v[k]) for k < count: the default activations inlined (vectorised), others called */
static inline void tl_rnn_apply(float *v, int32_t count, tl_rnn_act_fn act) {
  int32_t k;
  if (act == tl_rnn_sigmoid) {
    for (k = 0; k < count; ++k) v[k] = tl_rnn_sigmoid_of(v[k]);
  } else if (act == tl_rnn_tanh) {
    for (k = 0; k < count; ++k) v[k] = tl_rnn_tanh_of(v[k]);
  } else {
    for (k = 0; k < count; ++k) v[k] = act(v[k]);
  }
}

/* into[k] = clip(into[k] + add[k]) for k < count */
static inline void tl_rnn_sum(float *into, const float *add, int32_t count, float clip) {
  int32_t k;
  if (clip > 0.0f) {
    for (k = 0; k < count; ++k) into[k] = tl_clamp_f32(into[k] + add[k], -clip, clip);
  } else {
    for (k = 0; k < count; ++k) into[k] += add[k];
  }
}

/* the input products of one step, `count` gates: x W^T + Wb, or with w NULL, x's row itself (the
 * products of every step computed before, biases included, by a GEMM on the host) */
static inline void tl_rnn_input(float *gates, const float *wb, const float *x, const float *w, int32_t depth,
                                int32_t count) {
  int32_t k;
  if (w) {
    tl_rnn_product(gates, wb, x, w, depth, count, count);
  } else {
    for (k = 0; k < count; ++k) gates[k] = x[k];
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
      tl_rnn_input(gates, wb, x + t * x_step + b * x_batch, w, depth, hidden);
      tl_rnn_packed_product(from_h, rb, hb, r, hidden, hidden);
      tl_rnn_sum(gates, from_h, hidden, clip);
      tl_rnn_apply(gates, hidden, act[0]);
      for (u = 0; u < hidden; ++u) yr[u] = hb[u] = gates[u];
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
  float *candidate = gates + 2 * hidden;
  const float *candidate_r = r + 2 * hidden * hidden;
  int32_t b, s, u;
  for (b = 0; b < batches; ++b) {
    float *hb = h + b * s_batch;
    for (s = 0; s < steps; ++s) {
      const int32_t t = TL_RNN_STEP(s, steps, reverse);
      float *yr = y + t * y_step + b * y_batch;
      tl_rnn_input(gates, wb, x + t * x_step + b * x_batch, w, depth, stride);
      tl_rnn_packed_product(from_h, rb, hb, r, hidden, 2 * hidden);
      if (linear_before_reset)
        tl_rnn_packed_product(from_h + 2 * hidden, rb ? rb + 2 * hidden : NULL, hb, candidate_r, hidden, hidden);
      tl_rnn_sum(gates, from_h, 2 * hidden, clip);
      tl_rnn_apply(gates, 2 * hidden, act[0]);
      if (!linear_before_reset) { /* the candidate reads (r . h) R_h + Rb_h */
        for (u = 0; u < hidden; ++u) reset_h[u] = gates[hidden + u] * hb[u];
        tl_rnn_packed_product(from_h + 2 * hidden, rb ? rb + 2 * hidden : NULL, reset_h, candidate_r, hidden, hidden);
      } else {
        for (u = 0; u < hidden; ++u) from_h[2 * hidden + u] *= gates[hidden + u];
      }
      tl_rnn_sum(candidate, from_h + 2 * hidden, hidden, clip);
      tl_rnn_apply(candidate, hidden, act[1]);
      for (u = 0; u < hidden; ++u) yr[u] = hb[u] = candidate[u] + (hb[u] - candidate[u]) * gates[u];
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
  float *in = gates, *out = gates + hidden, *forget = gates + 2 * hidden, *cell = gates + 3 * hidden;
  int32_t b, s, u;
  for (b = 0; b < batches; ++b) {
    float *hb = h + b * s_batch;
    float *cb = c + b * s_batch;
    for (s = 0; s < steps; ++s) {
      const int32_t t = TL_RNN_STEP(s, steps, reverse);
      float *yr = y + t * y_step + b * y_batch;
      tl_rnn_input(gates, wb, x + t * x_step + b * x_batch, w, depth, 4 * hidden);
      tl_rnn_packed_product(from_h, rb, hb, r, hidden, 4 * hidden);
      for (u = 0; u < 4 * hidden; ++u) gates[u] += from_h[u];
      if (peep) {
        for (u = 0; u < hidden; ++u) {
          in[u] += TL_READ_F32(peep + u) * cb[u];
          forget[u] += TL_READ_F32(peep + 2 * hidden + u) * cb[u];
        }
      }
      if (clip > 0.0f) /* with peepholes, the output gate is clipped once it has its peephole term */
        for (u = 0; u < 4 * hidden; ++u)
          if (!peep || u < hidden || u >= 2 * hidden) gates[u] = tl_clamp_f32(gates[u], -clip, clip);
      if (peep) { /* the output gate reads the new state */
        tl_rnn_apply(in, hidden, act[0]);
        tl_rnn_apply(forget, hidden, act[0]);
      } else {
        tl_rnn_apply(in, 3 * hidden, act[0]);
      }
      if (input_forget)
        for (u = 0; u < hidden; ++u) forget[u] = 1.0f - in[u];
      tl_rnn_apply(cell, hidden, act[1]);
      for (u = 0; u < hidden; ++u) from_h[u] = cb[u] = forget[u] * cb[u] + in[u] * cell[u];
      if (peep) {
        for (u = 0; u < hidden; ++u) out[u] = tl_rnn_clip(out[u] + TL_READ_F32(peep + hidden + u) * cb[u], clip);
        tl_rnn_apply(out, hidden, act[0]);
      }
      tl_rnn_apply(from_h, hidden, act[2]);
      for (u = 0; u < hidden; ++u) yr[u] = hb[u] = out[u] * from_h[u];
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
