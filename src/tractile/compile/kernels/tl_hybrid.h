/* LiteRT's hybrid (dynamic-range) kernels: float activations, int8 weights.
 *
 * Each row of floats is quantized on the fly to int8 (tl_hybrid_quantize: symmetric, or
 * asymmetric with a nudged zero point, as LiteRT's BatchQuantizeFloats), multiplied by the int8
 * weights in int32, and scaled back to float by the row's factor times the weights' scale. Each
 * float operation is its own statement, in the interpreter's order (tractile/ops/quantized/
 * hybrid.py), and GCC may not contract them into fused multiply-adds here, so the quantized
 * rows (hence the results) equal the interpreter's. */
#ifndef TL_HYBRID_H
#define TL_HYBRID_H

#include <math.h>
#include <string.h>

#include "tl_common.h"
#include "tl_fully_connected.h"
#include "tl_lstm.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* q = the int8 row of x[0..n); returns the row's scale factor, *offset its zero point */
static inline float tl_hybrid_quantize(const float *x, int32_t n, int asymmetric, int8_t *q, int32_t *offset) {
  float low = x[0], high = x[0];
  int32_t i;
  for (i = 1; i < n; ++i) {
    if (x[i] < low) low = x[i];
    if (x[i] > high) high = x[i];
  }
  *offset = 0;
  if (!asymmetric) {
    const float range = fabsf(low) > fabsf(high) ? fabsf(low) : fabsf(high);
    float inverse;
    if (range == 0.0f) {
      memset(q, 0, (size_t)n);
      return 1.0f;
    }
    inverse = 127.0f / range;
    for (i = 0; i < n; ++i) {
      const float scaled = x[i] * inverse;
      q[i] = (int8_t)tl_clamp_i32((int32_t)roundf(scaled), -127, 127);
    }
    return range / 127.0f;
  } else {
    const double rmin = (double)(low < 0.0f ? low : 0.0f);
    const double rmax = (double)(high > 0.0f ? high : 0.0f);
    double scale, zero;
    int32_t nudged;
    float factor, inverse, zero_f;
    if (rmin == rmax) {
      memset(q, 0, (size_t)n);
      return 1.0f;
    }
    scale = (rmax - rmin) / 255.0;
    zero = (128.0 + fabs(rmin / scale)) < (127.0 + fabs(rmax / scale)) ? -128.0 - rmin / scale
                                                                       : 127.0 - rmax / scale;
    nudged = zero <= -128.0 ? -128 : (zero >= 127.0 ? 127 : (int32_t)round(zero));
    factor = (float)scale;
    inverse = 1.0f / factor;
    zero_f = (float)nudged;
    for (i = 0; i < n; ++i) {
      const float scaled = x[i] * inverse;
      const float shifted = zero_f + scaled;
      q[i] = (int8_t)tl_clamp_i32((int32_t)roundf(shifted), -128, 127);
    }
    *offset = nudged;
    return factor;
  }
}

/* out[u] += dot(q, w[u]) * (factor * scale[u or 0]) for u < units; row_sums NULL: symmetric */
static inline void tl_hybrid_products(const int8_t *q, float factor, int32_t offset, const int8_t *w,
                                      const int32_t *row_sums, const float *scales, int per_channel, float *out,
                                      int32_t depth, int32_t units) {
  int32_t u;
  for (u = 0; u < units; ++u) {
    int32_t dot = tl_dot_s8(q, w + u * depth, depth);
    float scale, product;
    if (row_sums) dot -= TL_READ_S32(row_sums + u) * offset;
    scale = factor * TL_READ_F32(scales + (per_channel ? u : 0));
    product = (float)dot * scale;
    out[u] = out[u] + product;
  }
}

/* FULLY_CONNECTED: y[b] = clamp(bias + w . x[b]); q: depth int8 of scratch */
static inline void tl_hybrid_dense(const float *x, const int8_t *w, const int32_t *row_sums, const float *scales,
                                   int per_channel, const float *bias, float *y, int32_t batches, int32_t depth,
                                   int32_t units, int asymmetric, int8_t *q, float low, float high) {
  int32_t b, u;
  for (b = 0; b < batches; ++b) {
    float *out = y + b * units;
    int32_t offset;
    const float factor = tl_hybrid_quantize(x + b * depth, depth, asymmetric, q, &offset);
    for (u = 0; u < units; ++u) out[u] = bias ? TL_READ_F32(bias + u) : 0.0f;
    tl_hybrid_products(q, factor, offset, w, asymmetric ? row_sums : NULL, scales, per_channel, out, depth, units);
    for (u = 0; u < units; ++u) out[u] = tl_clamp_f32(out[u], low, high);
  }
}

/* SVDF: the memory (batches, filters, frames) shifted by one frame takes the hybrid feature
 * projection of x; the output is its float reduction against the (dequantized) time weights */
static inline void tl_hybrid_svdf(const float *x, const int8_t *wf, const int32_t *row_sums, const float *scale,
                                  const float *wt, const float *bias, float *memory, float *y, float *column,
                                  int8_t *q, int32_t batches, int32_t depth, int32_t filters, int32_t frames,
                                  int32_t rank, int asymmetric, float low, float high) {
  int32_t b, f, m;
  for (b = 0; b < batches; ++b) {
    float *rows = memory + b * filters * frames;
    int32_t offset;
    const float factor = tl_hybrid_quantize(x + b * depth, depth, asymmetric, q, &offset);
    for (f = 0; f < filters; ++f) column[f] = 0.0f;
    tl_hybrid_products(q, factor, offset, wf, asymmetric ? row_sums : NULL, scale, 0, column, depth, filters);
    for (f = 0; f < filters; ++f) {
      memmove(rows + f * frames, rows + f * frames + 1, (size_t)(frames - 1) * sizeof *rows);
      rows[f * frames + frames - 1] = column[f];
    }
    for (f = 0; f < filters; f += rank) {
      float acc = 0.0f;
      int32_t r;
      for (r = f; r < f + rank; ++r) {
        float sum = 0.0f;
        for (m = 0; m < frames; ++m) sum += rows[r * frames + m] * TL_READ_F32(wt + r * frames + m);
        acc += sum;
      }
      if (bias) acc += TL_READ_F32(bias + f / rank);
      y[b * (filters / rank) + f / rank] = tl_clamp_f32(acc, low, high);
    }
  }
}

/* LSTM: gates in the order input (absent when cifg), forget, cell, output; wx [gates * units]
 * [depth] and wh [gates * units][outputs] int8 with per-gate scales sx, sh; bias per gate row;
 * peepholes dequantized (NULL when absent); proj [outputs][units] int8 or NULL. Scratch: gates
 * (gates * units floats), hidden (units floats), q (max(depth, outputs, units) int8). */
static inline void tl_hybrid_lstm(const float *x, float *y, float *h, float *c, float *gates, float *hidden,
                                  int8_t *q, const int8_t *wx, const int32_t *wx_sums, const float *sx,
                                  const int8_t *wh, const int32_t *wh_sums, const float *sh, const float *bias,
                                  const float *peep_i, const float *peep_f, const float *peep_o, const int8_t *proj,
                                  const int32_t *proj_sums, const float *proj_scale, const float *proj_bias,
                                  int32_t batches, int32_t steps, int32_t depth, int32_t units, int32_t outputs,
                                  int time_major, int cifg, int activation, float cell_clip, float proj_clip,
                                  int asymmetric) {
  const int32_t count = cifg ? 3 : 4;
  const int32_t forget = cifg ? 0 : units, cell = forget + units, output = cell + units;
  int32_t b, t, g, u, j;
  for (b = 0; b < batches; ++b) {
    float *hb = h + b * outputs;
    float *cb = c + b * units;
    for (t = 0; t < steps; ++t) {
      const int32_t row = tl_lstm_row(b, t, batches, steps, time_major);
      int32_t x_offset, h_offset;
      float x_factor, h_factor;
      for (j = 0; j < count * units; ++j) gates[j] = TL_READ_F32(bias + j);
      x_factor = tl_hybrid_quantize(x + row * depth, depth, asymmetric, q, &x_offset);
      for (g = 0; g < count; ++g) {
        tl_hybrid_products(q, x_factor, x_offset, wx + g * units * depth, wx_sums ? wx_sums + g * units : NULL,
                           sx + g, 0, gates + g * units, depth, units);
      }
      h_factor = tl_hybrid_quantize(hb, outputs, asymmetric, q, &h_offset);
      for (g = 0; g < count; ++g) {
        tl_hybrid_products(q, h_factor, h_offset, wh + g * units * outputs, wh_sums ? wh_sums + g * units : NULL,
                           sh + g, 0, gates + g * units, outputs, units);
      }
      for (u = 0; u < units; ++u) {
        float f_raw = gates[forget + u], i_raw = cifg ? 0.0f : gates[u], o_raw = gates[output + u];
        float f, i, kept, update, state, o;
        if (peep_i) i_raw = i_raw + TL_READ_F32(peep_i + u) * cb[u];
        if (peep_f) f_raw = f_raw + TL_READ_F32(peep_f + u) * cb[u];
        f = tl_sigmoid_f32(f_raw);
        i = cifg ? 1.0f - f : tl_sigmoid_f32(i_raw);
        kept = f * cb[u];
        update = tl_activation_f32(gates[cell + u], activation) * i;
        state = kept + update;
        if (cell_clip > 0.0f) state = tl_clamp_f32(state, -cell_clip, cell_clip);
        cb[u] = state;
        if (peep_o) o_raw = o_raw + TL_READ_F32(peep_o + u) * state;
        o = tl_sigmoid_f32(o_raw);
        hidden[u] = o * tl_activation_f32(state, activation);
      }
      if (proj) {
        int32_t p_offset;
        const float p_factor = tl_hybrid_quantize(hidden, units, asymmetric, q, &p_offset);
        for (j = 0; j < outputs; ++j) hb[j] = proj_bias ? TL_READ_F32(proj_bias + j) : 0.0f;
        tl_hybrid_products(q, p_factor, p_offset, proj, proj_sums, proj_scale, 0, hb, units, outputs);
        if (proj_clip > 0.0f) {
          for (j = 0; j < outputs; ++j) hb[j] = tl_clamp_f32(hb[j], -proj_clip, proj_clip);
        }
      } else {
        for (u = 0; u < units; ++u) hb[u] = hidden[u];
      }
      for (j = 0; j < outputs; ++j) y[row * outputs + j] = hb[j];
    }
  }
}

/* CONV_2D and DEPTHWISE_CONV_2D over NHWC (LiteRT's hybrid kernels): each batch's image
 * quantized into q (in_h * in_w * in_c int8; asymmetrically per channel, symmetrically per
 * tensor), padded positions skipped; w [out_c][kh][kw][in_c / groups] int8 with per-output-
 * channel scales; scales_first multiplies the image's factor and the channel's scale before
 * the sum, as LiteRT's depthwise and per-tensor kernels do */
static inline void tl_hybrid_conv(const float *x, const int8_t *w, const float *scales, const float *bias, float *y,
                                  int8_t *q, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                  int32_t out_w, int32_t out_c, int32_t kh, int32_t kw, int32_t sh, int32_t sw,
                                  int32_t dh, int32_t dw, int32_t pad_top, int32_t pad_left, int32_t groups,
                                  int asymmetric, int scales_first, float low, float high) {
  const int32_t per_group = in_c / groups, per_out = out_c / groups;
  int32_t b, oy, ox, oc, i, j, k;
  for (b = 0; b < batches; ++b) {
    int32_t offset;
    const float factor = tl_hybrid_quantize(x + b * in_h * in_w * in_c, in_h * in_w * in_c, asymmetric, q, &offset);
    for (oy = 0; oy < out_h; ++oy) {
      for (ox = 0; ox < out_w; ++ox) {
        float *out = y + ((b * out_h + oy) * out_w + ox) * out_c;
        for (oc = 0; oc < out_c; ++oc) {
          const int32_t first = (oc / per_out) * per_group;
          const int8_t *filter = w + oc * kh * kw * per_group;
          int32_t acc = 0;
          float value;
          for (i = 0; i < kh; ++i) {
            const int32_t iy = oy * sh - pad_top + i * dh;
            if (iy < 0 || iy >= in_h) continue;
            for (j = 0; j < kw; ++j) {
              const int32_t ix = ox * sw - pad_left + j * dw;
              const int8_t *pixel;
              if (ix < 0 || ix >= in_w) continue;
              pixel = q + (iy * in_w + ix) * in_c + first;
              for (k = 0; k < per_group; ++k) {
                acc += (int32_t)TL_READ_S8(filter + (i * kw + j) * per_group + k) * ((int32_t)pixel[k] - offset);
              }
            }
          }
          if (scales_first) {
            const float scale = TL_READ_F32(scales + oc) * factor;
            value = (float)acc * scale;
          } else {
            const float scaled = (float)acc * TL_READ_F32(scales + oc);
            value = scaled * factor;
          }
          if (bias) value = value + TL_READ_F32(bias + oc);
          out[oc] = tl_clamp_f32(value, low, high);
        }
      }
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif /* TL_HYBRID_H */
