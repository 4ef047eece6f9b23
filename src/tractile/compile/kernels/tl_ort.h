/* tl_ort.h: onnxruntime's quantized arithmetic (the "onnxruntime" flavour of the quantized core
 * ops: ONNX models quantized by onnxruntime's quantizer, QDQ or QOperator), int8 and uint8.
 *
 * Everything is float32 arithmetic, one operation per statement (so that no compiler fuses a
 * multiply and an add: GCC does not in ISO C mode, clang only within one expression), rounding
 * half to even as the FPU does by default: int32 sums requantize as float(sum) * scale (the
 * float32 s_x * s_w / s_y); QLinearAdd adds dequantized values and divides by the output scale;
 * QLinearAveragePool averages dequantized values in float; tables serve the rest. tl_ort_round
 * rounds with the 1.5 * 2^23 constant, exact for |v| <= 2^22 (values are clamped first). */
#ifndef TL_ORT_H
#define TL_ORT_H

#include "tl_common.h"
#include "tl_conv.h"
#include "tl_fully_connected.h"

#define TL_ORT_LIMIT 4194304.0f

/* nearest integer, halves to even, of a float clamped to [-2^22, 2^22] (NaN to -2^22) */
static inline int32_t tl_ort_round(float v) {
  const float magic = 12582912.0f;
  float r = v > -TL_ORT_LIMIT ? v : -TL_ORT_LIMIT;
  r = r < TL_ORT_LIMIT ? r : TL_ORT_LIMIT;
  r = r + magic;
  r = r - magic;
  return (int32_t)r;
}

/* an int32 sum requantized: rint(float(acc) * scale) */
static inline int32_t tl_ort_requant(int32_t acc, float scale) {
  const float v = (float)acc * scale;
  return tl_ort_round(v);
}

/* the same with the float32 scale passed as its bits (the integer convolutions' requantization
 * slot takes int32 multipliers) */
static inline int32_t tl_ort_requant_bits(int32_t acc, int32_t scale_bits, int unused) {
  union {
    int32_t bits;
    float value;
  } scale;
  (void)unused;
  scale.bits = scale_bits;
  return tl_ort_requant(acc, scale.value);
}

/* QLinearAdd of offset values a = qa - za, b = qb - zb */
static inline int32_t tl_ort_add(int32_t a, int32_t b, float scale_a, float scale_b, float scale_y, int32_t zero,
                                 int32_t low, int32_t high) {
  const float fa = (float)a * scale_a;
  const float fb = (float)b * scale_b;
  const float sum = fa + fb;
  const float v = sum / scale_y;
  return tl_clamp_i32(tl_ort_round(v) + zero, low, high);
}

/* QLinearMul of offset values, ratio = s_a * s_b / s_y */
static inline int32_t tl_ort_mul(int32_t a, int32_t b, float ratio, int32_t zero, int32_t low, int32_t high) {
  const float v = (float)(a * b) * ratio;
  return tl_clamp_i32(tl_ort_round(v) + zero, low, high);
}

/* QuantizeLinear: rint(x / scale) + zero, saturated */
static inline int32_t tl_ort_quantize(float x, float scale, int32_t zero, int32_t low, int32_t high) {
  const float v = x / scale;
  return tl_clamp_i32(tl_ort_round(v) + zero, low, high);
}

/* integer convolutions (tl_conv.h's loops) with onnxruntime's requantization: `multiplier`
 * holds the float32 scales' bits, `shift` is unused */
TL_CONV_NHWC_Q(tl_conv_nhwc_s8_ort, int8_t, int32_t, TL_READ_S32, tl_ort_requant_bits)
TL_CONV_NHWC_Q(tl_conv_nhwc_u8_ort, uint8_t, int32_t, TL_READ_S32, tl_ort_requant_bits)
TL_DWCONV_NHWC_Q(tl_dwconv_nhwc_s8_ort, int8_t, int32_t, TL_READ_S32, tl_ort_requant_bits)
TL_DWCONV_NHWC_Q(tl_dwconv_nhwc_u8_ort, uint8_t, int32_t, TL_READ_S32, tl_ort_requant_bits)

/* dense layers: int8 inputs with offset int8 weights, uint8 inputs with offset int16 weights;
 * the bias holds the input zero-point correction; one scale per unit or one (per_channel 0) */
#define TL_FC_ORT(name, x_type, w_type, dot)                                                                   \
  static inline void name(const x_type *x, const w_type *w, const int32_t *bias, x_type *y, int batches,       \
                          int depth, int units, const float *scale, int per_channel, int32_t y_zero,           \
                          int32_t low, int32_t high) {                                                         \
    int b, u;                                                                                                  \
    for (b = 0; b < batches; ++b)                                                                              \
      for (u = 0; u < units; ++u) {                                                                            \
        const int32_t acc = tl_add_wrap_s32(dot(x + (int32_t)b * depth, w + (int32_t)u * depth, depth),        \
                                            TL_READ_S32(bias + u));                                            \
        const int32_t v = tl_ort_requant(acc, TL_READ_F32(scale + u * per_channel)) + y_zero;                  \
        y[(int32_t)b * units + u] = (x_type)tl_clamp_i32(v, low, high);                                        \
      }                                                                                                        \
  }

TL_FC_ORT(tl_fc_s8_ort, int8_t, int8_t, tl_dot_s8)
TL_FC_ORT(tl_fc_u8_ort, uint8_t, int16_t, tl_dot_u8_s16)

/* QLinearGlobalAveragePool on NHWC: each channel's int32 sum over the plane, minus
 * zero * count, requantized by scale = s_x / (s_y * count) */
#define TL_GAP_ORT(name, x_type)                                                                               \
  static inline void name(const x_type *x, x_type *y, int32_t batches, int32_t pixels, int32_t channels,       \
                          int32_t x_zero, float scale, int32_t y_zero, int32_t low, int32_t high) {            \
    int32_t b, p, c;                                                                                           \
    for (b = 0; b < batches; ++b)                                                                              \
      for (c = 0; c < channels; ++c) {                                                                         \
        int32_t acc = -x_zero * pixels;                                                                        \
        for (p = 0; p < pixels; ++p) acc += (int32_t)x[(b * pixels + p) * channels + c];                       \
        y[b * channels + c] = (x_type)tl_clamp_i32(tl_ort_requant(acc, scale) + y_zero, low, high);            \
      }                                                                                                        \
  }

TL_GAP_ORT(tl_gap_nhwc_s8_ort, int8_t)
TL_GAP_ORT(tl_gap_nhwc_u8_ort, uint8_t)

/* QLinearAveragePool on NHWC: the dequantized values s_x * (x - z_x) of the taps inside the
 * input summed in float32 row by row, divided by the window's count (counts[oy * out_w + ox]),
 * then quantized as avg / s_y + z_y (the zero point added in float, as onnxruntime does) */
#define TL_AVG_POOL_ORT(name, x_type)                                                                          \
  static inline void name(const x_type *x, x_type *y, int32_t batches, int32_t in_h, int32_t in_w,             \
                          int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,            \
                          int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,               \
                          const float *counts, int32_t x_zero, float x_scale, float y_scale, int32_t y_zero,   \
                          int32_t low, int32_t high) {                                                         \
    int32_t b, oy, ox, c, ky, kx;                                                                              \
    const float zero = (float)y_zero;                                                                          \
    for (b = 0; b < batches; ++b)                                                                              \
      for (oy = 0; oy < out_h; ++oy)                                                                           \
        for (ox = 0; ox < out_w; ++ox) {                                                                       \
          const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;                        \
          const float count = TL_READ_F32(counts + oy * out_w + ox);                                           \
          for (c = 0; c < channels; ++c) {                                                                     \
            float sum = 0.0f;                                                                                  \
            for (ky = 0; ky < k_h; ++ky) {                                                                     \
              if (top + ky < 0 || top + ky >= in_h) continue;                                                  \
              for (kx = 0; kx < k_w; ++kx) {                                                                   \
                const int32_t ix = left + kx;                                                                  \
                float value;                                                                                   \
                if (ix < 0 || ix >= in_w) continue;                                                            \
                value = (float)((int32_t)x[((b * in_h + top + ky) * in_w + ix) * channels + c] - x_zero);      \
                value = value * x_scale;                                                                       \
                sum = sum + value;                                                                             \
              }                                                                                                \
            }                                                                                                  \
            {                                                                                                  \
              const float average = sum / count;                                                               \
              const float scaled = average / y_scale;                                                          \
              const float shifted = scaled + zero;                                                             \
              y[((b * out_h + oy) * out_w + ox) * channels + c] =                                              \
                  (x_type)tl_clamp_i32(tl_ort_round(shifted), low, high);                                      \
            }                                                                                                  \
          }                                                                                                    \
        }                                                                                                      \
  }

TL_AVG_POOL_ORT(tl_avg_pool_nhwc_s8_ort, int8_t)
TL_AVG_POOL_ORT(tl_avg_pool_nhwc_u8_ort, uint8_t)

#endif /* TL_ORT_H */
