/* tl_lstm.h: TFLite UNIDIRECTIONAL_SEQUENCE_LSTM, float and integer (8x8_16).
 *
 * The output state h[batch][outputs] and the cell state c[batch][units] live in the context
 * and carry over from one call to the next (TFLite's variable tensors). The gates present
 * are stored side by side: input (absent with CIFG, coupled input and forget), forget, cell,
 * output. Integer weights are unit-major, wx[gate * units + u][depth] and
 * wh[gate * units + u][outputs]; float weights depth-major, wx[d][gate * units + u].
 * One step of one batch row computes every gate's pre-activation into `gates` (a scratch of
 * gate_count * units values) from the old h, then updates c and h unit by unit. The input
 * and output are [batch][step][...] (or [step][batch][...] when time major).
 *
 * The integer kernel is TFLite's 8x8_16 as the interpreter runs it: int8 input and output
 * state, int16 gates in Q3.12 and int16 cell state in Q(cell_bits) (its scale a power of
 * two), zero points folded into bx and bh on the host, and per gate the requantization of
 * the input and recurrent products (rq[gate] = {x multiplier, x shift, h multiplier, h shift}). */
#ifndef TL_LSTM_H
#define TL_LSTM_H

#include <math.h>

#include "tl_common.h"
#include "tl_fully_connected.h"
#include "tl_recurrent.h"

/* TFLite fused activation codes (the cell and hidden activation) */
#define TL_ACT_NONE 0
#define TL_ACT_RELU 1
#define TL_ACT_RELU6 2
#define TL_ACT_RELU_N1_TO_1 3
#define TL_ACT_TANH 4

static inline float tl_activation_f32(float x, int activation) {
  switch (activation) {
    case TL_ACT_RELU: return x < 0.0f ? 0.0f : x;
    case TL_ACT_RELU6: return tl_clamp_f32(x, 0.0f, 6.0f);
    case TL_ACT_RELU_N1_TO_1: return tl_clamp_f32(x, -1.0f, 1.0f);
    case TL_ACT_TANH: return tanhf(x);
    default: return x;
  }
}

static inline float tl_sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }

static inline float tl_dot_f32(const float *a, const float *b, int32_t n) {
  float sum = 0.0f;
  int32_t k;
  for (k = 0; k < n; ++k) sum += a[k] * TL_READ_F32(b + k);
  return sum;
}

/* gates[j] += sum_k v[k] * wt[k][j] (weights depth-major: the inner loop over contiguous gate
 * rows vectorises without reordering any sum) */
static inline void tl_lstm_accumulate_f32(float *gates, const float *v, const float *wt, int32_t depth,
                                          int32_t rows) {
  int32_t k, j;
  for (k = 0; k < depth; ++k) {
    const float value = v[k];
    const float *w = wt + k * rows;
    for (j = 0; j < rows; ++j) gates[j] += value * TL_READ_F32(w + j);
  }
}

/* the offset of a row of the sequence: [batch][step] or, time major, [step][batch] */
static inline int32_t tl_lstm_row(int32_t b, int32_t t, int32_t batches, int32_t steps, int time_major) {
  return time_major ? t * batches + b : b * steps + t;
}

/* float. bias: one per gate row (zeros for absent biases). peepholes (cell to input, forget,
 * output gate weights, [units] each), proj [outputs][units] and proj_bias may be NULL;
 * clips are off when 0. */
static inline void tl_lstm_f32(const float *x, float *y, float *h, float *c, float *gates, const float *wx,
                               const float *wh, const float *bias, const float *peep_i, const float *peep_f,
                               const float *peep_o, const float *proj, const float *proj_bias, int32_t batches,
                               int32_t steps, int32_t depth, int32_t units, int32_t outputs, int time_major, int cifg,
                               int activation, float cell_clip, float proj_clip) {
  const int32_t forget = cifg ? 0 : units, cell = forget + units, output = cell + units;
  const int32_t rows = output + units;
  int32_t b, t, j, u;
  for (b = 0; b < batches; ++b) {
    float *hb = h + b * outputs;
    float *cb = c + b * units;
    for (t = 0; t < steps; ++t) {
      const int32_t row = tl_lstm_row(b, t, batches, steps, time_major);
      const float *xr = x + row * depth;
      float *yr = y + row * outputs;
      for (j = 0; j < rows; ++j) gates[j] = TL_READ_F32(bias + j);
      tl_lstm_accumulate_f32(gates, xr, wx, depth, rows);
      tl_lstm_accumulate_f32(gates, hb, wh, outputs, rows);
      for (u = 0; u < units; ++u) {
        float f_raw = gates[forget + u], i_raw = cifg ? 0.0f : gates[u], o_raw = gates[output + u];
        float f, i, state;
        if (peep_i) i_raw += TL_READ_F32(peep_i + u) * cb[u];
        if (peep_f) f_raw += TL_READ_F32(peep_f + u) * cb[u];
        f = tl_sigmoid_f32(f_raw);
        i = cifg ? 1.0f - f : tl_sigmoid_f32(i_raw);
        state = f * cb[u] + i * tl_activation_f32(gates[cell + u], activation);
        if (cell_clip > 0.0f) state = tl_clamp_f32(state, -cell_clip, cell_clip);
        cb[u] = state;
        if (peep_o) o_raw += TL_READ_F32(peep_o + u) * state;
        gates[forget + u] = tl_sigmoid_f32(o_raw) * tl_activation_f32(state, activation);
      }
      if (proj) {
        for (j = 0; j < outputs; ++j) {
          float value = tl_dot_f32(gates + forget, proj + j * units, units);
          if (proj_bias) value += TL_READ_F32(proj_bias + j);
          if (proj_clip > 0.0f) value = tl_clamp_f32(value, -proj_clip, proj_clip);
          hb[j] = value;
        }
      } else {
        for (u = 0; u < units; ++u) hb[u] = gates[forget + u];
      }
      for (j = 0; j < outputs; ++j) yr[j] = hb[j];
    }
  }
}

/* one gate's pre-activation (Q3.12) from the input and output state rows */
static inline int32_t tl_lstm_gate_s8(const int8_t *xr, const int8_t *hr, const int8_t *wx, const int32_t *bx,
                                      const int8_t *wh, const int32_t *bh, const int32_t *rq, int32_t j,
                                      int32_t depth, int32_t outputs) {
  const int32_t from_x = tl_sat16(tl_mbqm(tl_dot_s8(xr, wx + j * depth, depth) + TL_READ_S32(bx + j),
                                          TL_READ_S32(rq), TL_READ_S32(rq + 1)));
  const int32_t from_h = tl_mbqm(tl_dot_s8(hr, wh + j * outputs, outputs) + TL_READ_S32(bh + j),
                                 TL_READ_S32(rq + 2), TL_READ_S32(rq + 3));
  return tl_sat16(from_h + from_x);
}

/* a peephole's contribution (weights int16, prq = {multiplier, shift}) added to the gate of
 * flat cell k. TFLite's reference kernel walks the flattened gates and cells of one call with a
 * period of outputs, not units (one call per batch row when batch-major, one for all rows when
 * time-major): with a projection (outputs < units) cell k gets weight k % outputs, and none
 * from k = limit (the call's rows * outputs) on. */
static inline int32_t tl_lstm_peephole_s8(int32_t gate, const int16_t *peephole, const int32_t *prq, int32_t k,
                                          int32_t limit, int32_t outputs, int32_t cell) {
  if (!peephole || k >= limit) return gate;
  return tl_sat16(tl_mbqm(TL_READ_S16(peephole + k % outputs) * cell, TL_READ_S32(prq), TL_READ_S32(prq + 1)) +
                  gate);
}

/* gemmlowp's int16 sigmoid (tanh) of a Q3.12 value: from a table of every int16 input when
 * one is given (the host, where 128 KiB of constants cost nothing and a lookup is 3x faster),
 * else computed */
static inline int32_t tl_lstm_sigmoid(const int16_t *table, int32_t x) {
  return table ? TL_READ_S16(table + x + 32768) : tl_logistic16(x, 3);
}
static inline int32_t tl_lstm_tanh(const int16_t *table, int32_t x, int integer_bits) {
  return table ? TL_READ_S16(table + x + 32768) : tl_tanh16(x, integer_bits);
}

/* int8 8x8_16. gates: gate_count * units int16; hidden: units int8 (with a projection, else
 * unused). prq: the peepholes' {multiplier, shift} (input, forget, output). proj [outputs][units]
 * and its bias pb (hidden zero point folded) may be NULL; clips are off when 0. Without a
 * projection the output state is requantized with (hidden_m, hidden_s) to hidden_zero.
 * sigmoid, tanh_q3, tanh_cell: NULL, or the tables of the sigmoid and tanh of Q3.12 and of the
 * tanh of Q(cell_bits), 65,536 entries each. */
static inline void tl_lstm_s8(const int8_t *x, int8_t *y, int8_t *h, int16_t *c, int16_t *gates, int8_t *hidden,
                              const int8_t *wx, const int32_t *bx, const int8_t *wh, const int32_t *bh,
                              const int32_t *rq, const int16_t *peep_i, const int16_t *peep_f,
                              const int16_t *peep_o, const int32_t *prq, const int8_t *proj, const int32_t *pb,
                              int32_t batches, int32_t steps, int32_t depth, int32_t units, int32_t outputs,
                              int time_major, int cifg, int cell_bits, int update_shift, int32_t cell_clip,
                              int32_t hidden_m, int32_t hidden_s, int32_t hidden_zero, int32_t proj_m,
                              int32_t proj_s, int32_t y_zero, int32_t proj_clip, const int16_t *sigmoid,
                              const int16_t *tanh_q3, const int16_t *tanh_cell) {
  const int32_t forget = cifg ? 0 : units, cell = forget + units, output = cell + units;
  const int32_t rows = output + units;
  const int32_t limit = (time_major ? batches : 1) * outputs;
  int32_t b, t, j, u;
  for (b = 0; b < batches; ++b) {
    int8_t *hb = h + b * outputs;
    int16_t *cb = c + b * units;
    for (t = 0; t < steps; ++t) {
      const int32_t row = tl_lstm_row(b, t, batches, steps, time_major);
      const int8_t *xr = x + row * depth;
      int8_t *yr = y + row * outputs;
      for (j = 0; j < rows; ++j)
        gates[j] = (int16_t)tl_lstm_gate_s8(xr, hb, wx, bx, wh, bh, rq + 4 * (j / units), j, depth, outputs);
      for (u = 0; u < units; ++u) {
        const int32_t k = time_major ? b * units + u : u;
        const int32_t f_raw = tl_lstm_peephole_s8(gates[forget + u], peep_f, prq + 2, k, limit, outputs, cb[u]);
        const int32_t f = tl_lstm_sigmoid(sigmoid, f_raw);
        const int32_t g = tl_lstm_tanh(tanh_q3, gates[cell + u], 3);
        const int32_t i = cifg ? 32767 - f
                               : tl_lstm_sigmoid(sigmoid,
                                                 tl_lstm_peephole_s8(gates[u], peep_i, prq, k, limit, outputs, cb[u]));
        int32_t state = tl_wrap16(tl_rdbpot(f * cb[u], 15));
        int32_t o, product;
        state = tl_sat16(state + tl_wrap16(tl_rdbpot(i * g, update_shift)));
        if (cell_clip > 0) state = tl_clamp_i32(state, -cell_clip, cell_clip);
        cb[u] = (int16_t)state;
        o = tl_lstm_sigmoid(sigmoid,
                            tl_lstm_peephole_s8(gates[output + u], peep_o, prq + 4, k, limit, outputs, state));
        product = o * tl_lstm_tanh(tanh_cell, state, cell_bits);
        if (proj) {
          hidden[u] = (int8_t)tl_clamp_i32(tl_mbqm(product, hidden_m, hidden_s) - hidden_zero, -128, 127);
        } else {
          hb[u] = (int8_t)tl_clamp_i32(tl_mbqm(product, hidden_m, hidden_s) + hidden_zero, -128, 127);
        }
      }
      if (proj) {
        for (j = 0; j < outputs; ++j) {
          int32_t value = tl_mbqm(tl_dot_s8(hidden, proj + j * units, units) + TL_READ_S32(pb + j), proj_m, proj_s);
          value = tl_clamp_i32(value + y_zero, -128, 127);
          if (proj_clip > 0) value = tl_clamp_i32(value, -proj_clip, proj_clip);
          hb[j] = (int8_t)value;
        }
      }
      for (j = 0; j < outputs; ++j) yr[j] = hb[j];
    }
  }
}

#endif /* TL_LSTM_H */
