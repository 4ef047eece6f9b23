/* tl_lstm16.h: TFLite Micro's 16x8 UNIDIRECTIONAL_SEQUENCE_LSTM (int16 input and output state,
 * int8 weights, int64 biases; all four gates, no peepholes, projection or layer norm).
 *
 * Layout as tl_lstm.h's integer kernel: wx[gate * units + u][depth], wh[gate * units + u][units],
 * rq[gate] = {x multiplier, x shift, h multiplier, h shift}. Each gate is two fully connected
 * products with int64 accumulators, each requantized with the 64-bit multiplier and saturated
 * to int16 before their saturating sum (Q3.12); the gate functions interpolate TFLite Micro's
 * 256-entry table of sigmoid(i / 24) (`table`, unsigned Q0.16); the cell and hidden updates
 * are element-wise products requantized in 32 bits. */
#ifndef TL_LSTM16_H
#define TL_LSTM16_H

#include "tl_common.h"
#include "tl_recurrent.h"

static inline int32_t tl_lstm16_interpolate(const int32_t *table, int32_t magnitude, int bits) {
  const int32_t index = (magnitude >> bits) < 254 ? (magnitude >> bits) : 254;
  const int32_t low = TL_READ_S32(table + index);
  return low * (1 << bits) + (magnitude & ((1 << bits) - 1)) * (TL_READ_S32(table + index + 1) - low);
}

/* an arithmetic right shift of a possibly negative value (C leaves >> of negatives to the
 * implementation): floor(x / 2^bits) */
static inline int32_t tl_lstm16_floor_shift(int32_t x, int bits) {
  return x >= 0 ? x >> bits : -(int32_t)((uint32_t)(-(x + 1)) >> bits) - 1;
}

/* Q3.12 to Q0.15 sigmoid, as TFLite Micro's int16 LOGISTIC */
static inline int32_t tl_lstm16_sigmoid(const int32_t *table, int32_t x) {
  const int32_t scaled = x * 3;
  const int32_t magnitude = scaled < 0 ? -scaled : scaled;
  int32_t r = (magnitude >> 9) >= 255 ? (int32_t)0x7FFF << 10 : tl_lstm16_interpolate(table, magnitude, 9);
  r = scaled >= 0 ? r + (1 << 9) : (1 << 25) - r + (1 << 9) - 1;
  return r >> 10;
}

/* int16 to Q0.15 tanh, as TFLite Micro's int16 TANH: the input times 3 * 2^left_shift, or
 * times 3 shifted right with rounding when left_shift is negative */
static inline int32_t tl_lstm16_tanh(const int32_t *table, int32_t x, int left_shift) {
  const int32_t scaled = left_shift >= 0 ? x * (3 << left_shift)
                                         : tl_lstm16_floor_shift(x * 3 + (1 << (-left_shift - 1)), -left_shift);
  const int32_t magnitude = scaled < 0 ? -scaled : scaled;
  int32_t r = (magnitude >> 8) >= 255 ? (int32_t)0xFFFF << 8 : tl_lstm16_interpolate(table, magnitude, 8);
  r = scaled >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
  return tl_lstm16_floor_shift(r, 8);
}

/* one fully connected product of int16 values by int8 weights, requantized to int16 */
static inline int32_t tl_lstm16_product(const int16_t *v, const int8_t *w, const int64_t *bias, int32_t n,
                                        int32_t multiplier, int32_t shift) {
  int64_t acc = TL_READ_S64(bias);
  int32_t k;
  for (k = 0; k < n; ++k) acc += (int64_t)v[k] * TL_READ_S8(w + k);
  return tl_sat16(tl_mbqm64(acc, multiplier, shift));
}

/* gates: 4 * units int16 scratch. ic/fc/hid: the {multiplier, shift} of the input * cell gate,
 * forget * cell and output * tanh(cell) products; tanh_shift: the cell tanh's left shift;
 * cell_clip off when 0. */
static inline void tl_lstm_s16(const int16_t *x, int16_t *y, int16_t *h, int16_t *c, int16_t *gates,
                               const int8_t *wx, const int64_t *bx, const int8_t *wh, const int64_t *bh,
                               const int32_t *rq, const int32_t *table, int32_t batches, int32_t steps,
                               int32_t depth, int32_t units, int time_major, int32_t fc_m, int32_t fc_s,
                               int32_t ic_m, int32_t ic_s, int32_t hid_m, int32_t hid_s, int32_t h_zero,
                               int tanh_shift, int32_t cell_clip) {
  int32_t b, t, j, u;
  for (b = 0; b < batches; ++b) {
    int16_t *hb = h + b * units;
    int16_t *cb = c + b * units;
    for (t = 0; t < steps; ++t) {
      const int32_t row = time_major ? t * batches + b : b * steps + t;
      const int16_t *xr = x + row * depth;
      for (j = 0; j < 4 * units; ++j) {
        const int32_t *r = rq + 4 * (j / units);
        const int32_t from_x = tl_lstm16_product(xr, wx + j * depth, bx + j, depth, TL_READ_S32(r),
                                                 TL_READ_S32(r + 1));
        const int32_t from_h = tl_lstm16_product(hb, wh + j * units, bh + j, units, TL_READ_S32(r + 2),
                                                 TL_READ_S32(r + 3));
        gates[j] = (int16_t)tl_sat16(from_x + from_h);
      }
      for (u = 0; u < units; ++u) {
        const int32_t i = tl_lstm16_sigmoid(table, gates[u]);
        const int32_t f = tl_lstm16_sigmoid(table, gates[units + u]);
        const int32_t g = tl_lstm16_tanh(table, gates[2 * units + u], 0);
        const int32_t o = tl_lstm16_sigmoid(table, gates[3 * units + u]);
        const int32_t kept = tl_sat16(tl_mbqm(f * cb[u], fc_m, fc_s));
        int32_t state = tl_sat16(kept + tl_sat16(tl_mbqm(i * g, ic_m, ic_s)));
        if (cell_clip > 0) state = tl_clamp_i32(state, -cell_clip, cell_clip);
        cb[u] = (int16_t)state;
        hb[u] = (int16_t)tl_sat16(tl_mbqm(tl_lstm16_tanh(table, state, tanh_shift) * o, hid_m, hid_s) + h_zero);
      }
      for (u = 0; u < units; ++u) y[row * units + u] = hb[u];
    }
  }
}

#endif /* TL_LSTM16_H */
