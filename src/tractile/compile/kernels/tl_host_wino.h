/* tl_host_wino.h: the host's float NHWC 3x3 convolutions of stride 1 as Winograd F(2x2, 3x3) or
 * F(4x4, 3x3) (Lavin and Gray, 2016): 16 multiplications per 2x2 outputs and input channel, or 36
 * per 4x4, not 36 or 144.
 *
 * The output is cut in tiles of m x m pixels (m = 2 or 4; tile t in batch, tile row, tile column
 * order), each reading a (m + 2) x (m + 2) patch of the input from its first output less the
 * padding (taps outside the input are 0: any padding, and the odd last rows and columns, whose
 * outputs outside the output are not stored). Per strip of `strip` tiles (compile/ops/host_wino.py
 * sizes it so that the transformed strip stays in L2):
 *   1. per tile and channel, the patch d becomes V = B^T d B ((m + 2)^2 values, adds and a few
 *      multiplies by constants), stored as (m + 2)^2 matrices [strip][in_c] in the scratch;
 *   2. per block of 16 output channels, one GEMM per product xi, M[xi] = V[xi] x U[xi] over the
 *      in_c depths into matrices [strip][16] of the scratch, run by tl_gemm.h's float GEMM
 *      (tl_gemm_f32_rows); U = G g G^T, the filters transformed and packed on the host, per block
 *      of 16 outputs (m + 2)^2 matrices [in_c][16] (tl_gemm.h's float order), outputs past the
 *      last zero;
 *   3. per tile, the m x m outputs Y = A^T M A, plus the bias, clamped to [low, high] and stored,
 *      pixels `ldy` floats apart (a slice of a Concat's channels, or `filters`).
 * The transforms run over the channels in vectors chosen by the compiler's target macros (AVX2:
 * 8 floats, AArch64 NEON: 4), the portable loops otherwise and for the channels left over.
 * A strip's outputs are written before later strips' inputs are read: the output must not
 * overlap the input (the emitter declares no overlap). */
#ifndef TL_HOST_WINO_H
#define TL_HOST_WINO_H

#include <math.h>
#include <stddef.h>

#include "tl_common.h"
#include "tl_gemm.h"
#include "tl_threads.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TL_WINO_LANES 8
typedef __m256 tl_wino_v;
#define tl_wino_load(p) _mm256_loadu_ps(p)
#define tl_wino_store(p, v) _mm256_storeu_ps((p), (v))
#define tl_wino_zero() _mm256_setzero_ps()
#define tl_wino_add(a, b) _mm256_add_ps((a), (b))
#define tl_wino_sub(a, b) _mm256_sub_ps((a), (b))
#define tl_wino_mul(a, k) _mm256_mul_ps((a), _mm256_set1_ps(k))
/* NaN-keeping: the second operand of max and min wins when either is NaN */
#define tl_wino_clamp(v, lo, hi) _mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), (v)))
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define TL_WINO_LANES 4
typedef float32x4_t tl_wino_v;
#define tl_wino_load(p) vld1q_f32(p)
#define tl_wino_store(p, v) vst1q_f32((p), (v))
#define tl_wino_zero() vdupq_n_f32(0.0f)
#define tl_wino_add(a, b) vaddq_f32((a), (b))
#define tl_wino_sub(a, b) vsubq_f32((a), (b))
#define tl_wino_mul(a, k) vmulq_n_f32((a), (k))
#define tl_wino_clamp(v, lo, hi) vminq_f32(vdupq_n_f32(hi), vmaxq_f32(vdupq_n_f32(lo), (v)))
#else
#define TL_WINO_LANES 1
#endif

#define tl_wino_add_f(a, b) ((a) + (b))
#define tl_wino_sub_f(a, b) ((a) - (b))
#define tl_wino_mul_f(a, k) ((a) * (k))

/* F(2x2, 3x3): d (a 4x4 patch, row-major) becomes B^T d B in place, with
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] */
#define TL_WINO_INPUT2(suffix, type, ADD, SUB)                       \
  static inline void tl_wino_input2_##suffix(type *d) {              \
    type t[16];                                                      \
    int32_t j, i;                                                    \
    for (j = 0; j < 4; ++j) {                                        \
      t[j] = SUB(d[j], d[8 + j]);                                    \
      t[4 + j] = ADD(d[4 + j], d[8 + j]);                            \
      t[8 + j] = SUB(d[8 + j], d[4 + j]);                            \
      t[12 + j] = SUB(d[4 + j], d[12 + j]);                          \
    }                                                                \
    for (i = 0; i < 16; i += 4) {                                    \
      d[i] = SUB(t[i], t[i + 2]);                                    \
      d[i + 1] = ADD(t[i + 1], t[i + 2]);                            \
      d[i + 2] = SUB(t[i + 2], t[i + 1]);                            \
      d[i + 3] = SUB(t[i + 1], t[i + 3]);                            \
    }                                                                \
  }

/* F(2x2, 3x3): y = A^T m A (y[0], y[1] the first output row, y[2], y[3] the second) of a tile's
 * 16 products m (row-major), with A^T = [1 1 1 0; 0 1 -1 -1] */
#define TL_WINO_OUTPUT2(suffix, type, ADD, SUB)                      \
  static inline void tl_wino_output2_##suffix(const type *m, type *y) { \
    type s[8];                                                       \
    int32_t j;                                                       \
    for (j = 0; j < 4; ++j) {                                        \
      s[j] = ADD(ADD(m[j], m[4 + j]), m[8 + j]);                     \
      s[4 + j] = SUB(SUB(m[4 + j], m[8 + j]), m[12 + j]);            \
    }                                                                \
    y[0] = ADD(ADD(s[0], s[1]), s[2]);                               \
    y[1] = SUB(SUB(s[1], s[2]), s[3]);                               \
    y[2] = ADD(ADD(s[4], s[5]), s[6]);                               \
    y[3] = SUB(SUB(s[5], s[6]), s[7]);                               \
  }

/* F(4x4, 3x3) in one dimension: r[k * rs] = (B^T d)[k] for d[k * ds], k < 6, with B^T's rows
 * [4 0 -5 0 1 0], [0 -4 -4 1 1 0], [0 4 -4 -1 1 0], [0 -2 -1 2 1 0], [0 2 -1 -2 1 0], [0 4 0 -5 0 1] */
#define TL_WINO_INPUT4(suffix, type, ADD, SUB, MUL)                                            \
  static inline void tl_wino_line4_##suffix(const type *d, int32_t ds, type *r, int32_t rs) {    \
    const type d0 = d[0], d1 = d[ds], d2 = d[2 * ds], d3 = d[3 * ds], d4 = d[4 * ds], d5 = d[5 * ds]; \
    r[0] = ADD(SUB(MUL(d0, 4.0f), MUL(d2, 5.0f)), d4);                                         \
    r[rs] = SUB(ADD(d3, d4), MUL(ADD(d1, d2), 4.0f));                                          \
    r[2 * rs] = ADD(SUB(d4, d3), MUL(SUB(d1, d2), 4.0f));                                      \
    r[3 * rs] = ADD(SUB(d4, d2), MUL(SUB(d3, d1), 2.0f));                                      \
    r[4 * rs] = ADD(SUB(d4, d2), MUL(SUB(d1, d3), 2.0f));                                      \
    r[5 * rs] = ADD(SUB(MUL(d1, 4.0f), MUL(d3, 5.0f)), d5);                                    \
  }                                                                                            \
  static inline void tl_wino_input4_##suffix(type *d) {                                        \
    type t[36];                                                                                \
    int32_t k;                                                                                 \
    for (k = 0; k < 6; ++k) tl_wino_line4_##suffix(d + k, 6, t + k, 6);                        \
    for (k = 0; k < 6; ++k) tl_wino_line4_##suffix(t + 6 * k, 1, d + 6 * k, 1);                \
  }

/* F(4x4, 3x3): y = A^T m A (4 rows of 4) of a tile's 36 products m (row-major), with A^T's rows
 * [1 1 1 1 1 0], [0 1 -1 2 -2 0], [0 1 1 4 4 0], [0 1 -1 8 -8 1] */
#define TL_WINO_OUTPUT4(suffix, type, ADD, SUB, MUL)                                           \
  static inline void tl_wino_out4_##suffix(const type *m, int32_t ms, type *r, int32_t rs) {     \
    const type a = ADD(m[ms], m[2 * ms]), b = SUB(m[ms], m[2 * ms]);                           \
    const type c = ADD(m[3 * ms], m[4 * ms]), e = SUB(m[3 * ms], m[4 * ms]);                   \
    r[0] = ADD(ADD(m[0], a), c);                                                               \
    r[rs] = ADD(b, MUL(e, 2.0f));                                                              \
    r[2 * rs] = ADD(a, MUL(c, 4.0f));                                                          \
    r[3 * rs] = ADD(ADD(b, MUL(e, 8.0f)), m[5 * ms]);                                          \
  }                                                                                            \
  static inline void tl_wino_output4_##suffix(const type *m, type *y) {                        \
    type s[24];                                                                                \
    int32_t k;                                                                                 \
    for (k = 0; k < 6; ++k) tl_wino_out4_##suffix(m + k, 6, s + k, 6);                          \
    for (k = 0; k < 4; ++k) tl_wino_out4_##suffix(s + 6 * k, 1, y + 4 * k, 1);                 \
  }

TL_WINO_INPUT2(f, float, tl_wino_add_f, tl_wino_sub_f)
TL_WINO_OUTPUT2(f, float, tl_wino_add_f, tl_wino_sub_f)
TL_WINO_INPUT4(f, float, tl_wino_add_f, tl_wino_sub_f, tl_wino_mul_f)
TL_WINO_OUTPUT4(f, float, tl_wino_add_f, tl_wino_sub_f, tl_wino_mul_f)
#if TL_WINO_LANES > 1
TL_WINO_INPUT2(v, tl_wino_v, tl_wino_add, tl_wino_sub)
TL_WINO_OUTPUT2(v, tl_wino_v, tl_wino_add, tl_wino_sub)
TL_WINO_INPUT4(v, tl_wino_v, tl_wino_add, tl_wino_sub, tl_wino_mul)
TL_WINO_OUTPUT4(v, tl_wino_v, tl_wino_add, tl_wino_sub, tl_wino_mul)
#endif

typedef struct {
  const float *x, *u, *bias;
  float *y;
  int32_t in_h, in_w, in_c, out_h, out_w, filters, pad_top, pad_left, tiles_h, tiles_w, strip, ldy;
  int32_t m, side, products;
  float low, high;
} tl_wino_args;

/* the side x side inputs of tile t's patch (NULL outside the input) */
static inline void tl_wino_inputs(const tl_wino_args *a, int32_t t, const float **src) {
  const int32_t per_image = a->tiles_h * a->tiles_w, b = t / per_image;
  const int32_t top = (t % per_image) / a->tiles_w * a->m - a->pad_top, left = t % a->tiles_w * a->m - a->pad_left;
  int32_t i, j;
  for (i = 0; i < a->side; ++i)
    for (j = 0; j < a->side; ++j) {
      const int32_t iy = top + i, ix = left + j;
      src[a->side * i + j] =
          iy >= 0 && iy < a->in_h && ix >= 0 && ix < a->in_w
              ? a->x + ((size_t)(b * a->in_h + iy) * (size_t)a->in_w + (size_t)ix) * (size_t)a->in_c
              : NULL;
    }
}

/* tile t's m x m output pixels at output `n` (NULL outside the output) */
static inline void tl_wino_outputs(const tl_wino_args *a, int32_t t, int32_t n, float **dst) {
  const int32_t per_image = a->tiles_h * a->tiles_w, b = t / per_image;
  const int32_t oy = (t % per_image) / a->tiles_w * a->m, ox = t % a->tiles_w * a->m;
  int32_t i, j;
  for (i = 0; i < a->m; ++i)
    for (j = 0; j < a->m; ++j)
      dst[a->m * i + j] = oy + i < a->out_h && ox + j < a->out_w
                              ? a->y + ((size_t)(b * a->out_h + oy + i) * (size_t)a->out_w + (size_t)(ox + j)) *
                                           (size_t)a->ldy + (size_t)n
                              : NULL;
}

/* step 1 for one tile: its V at v (the products' matrices `stride` floats apart) */
static inline void tl_wino_transform_input(const float *const *src, float *v, size_t stride, int32_t in_c,
                                           int32_t m) {
  const int32_t products = (m + 2) * (m + 2);
  int32_t c = 0, k;
#if TL_WINO_LANES > 1
  for (; c + TL_WINO_LANES <= in_c; c += TL_WINO_LANES) {
    tl_wino_v d[36];
    for (k = 0; k < products; ++k) d[k] = src[k] ? tl_wino_load(src[k] + c) : tl_wino_zero();
    if (m == 2)
      tl_wino_input2_v(d);
    else
      tl_wino_input4_v(d);
    for (k = 0; k < products; ++k) tl_wino_store(v + (size_t)k * stride + c, d[k]);
  }
#endif
  for (; c < in_c; ++c) {
    float d[36];
    for (k = 0; k < products; ++k) d[k] = src[k] ? src[k][c] : 0.0f;
    if (m == 2)
      tl_wino_input2_f(d);
    else
      tl_wino_input4_f(d);
    for (k = 0; k < products; ++k) v[(size_t)k * stride + c] = d[k];
  }
}

/* step 3 for one tile and block of outputs: p its products (16 outputs each, `stride` floats
 * apart), bias its 16 biases, dst its m x m pixels at the block's first output (NULL: not
 * stored), the first `width` outputs stored */
static inline void tl_wino_transform_output(const float *p, size_t stride, const float *bias, float *const *dst,
                                            int32_t width, int32_t m, float low, float high) {
  const int32_t products = (m + 2) * (m + 2), outputs = m * m;
  int32_t c = 0, k, q;
#if TL_WINO_LANES > 1
  for (; c < width; c += TL_WINO_LANES) {
    tl_wino_v in[36], y[16];
    for (k = 0; k < products; ++k) in[k] = tl_wino_load(p + (size_t)k * stride + c);
    if (m == 2)
      tl_wino_output2_v(in, y);
    else
      tl_wino_output4_v(in, y);
    for (q = 0; q < outputs; ++q) {
      const tl_wino_v out = tl_wino_clamp(tl_wino_add(y[q], tl_wino_load(bias + c)), low, high);
      if (!dst[q]) continue;
      if (c + TL_WINO_LANES <= width) {
        tl_wino_store(dst[q] + c, out);
      } else {
        float lanes[TL_WINO_LANES];
        int32_t i;
        tl_wino_store(lanes, out);
        for (i = 0; c + i < width; ++i) dst[q][c + i] = lanes[i];
      }
    }
  }
#endif
  for (; c < width; ++c) {
    float in[36], y[16];
    for (k = 0; k < products; ++k) in[k] = p[(size_t)k * stride + c];
    if (m == 2)
      tl_wino_output2_f(in, y);
    else
      tl_wino_output4_f(in, y);
    for (q = 0; q < outputs; ++q)
      if (dst[q]) dst[q][c] = tl_clamp_f32(y[q] + bias[c], low, high);
  }
}

/* tiles [begin, end) a strip at a time; scratch: products * strip * (in_c + 16) floats */
static inline void tl_wino_f32_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_wino_args *a = (const tl_wino_args *)args;
  const size_t v_stride = (size_t)a->strip * (size_t)a->in_c, m_stride = (size_t)a->strip * TL_GEMM_NR;
  const size_t block = (size_t)a->products * (size_t)a->in_c * TL_GEMM_NR;
  float *v = (float *)scratch, *m = v + (size_t)a->products * v_stride;
  int32_t p, t, n, xi, j;
  for (p = begin; p < end; p += a->strip) {
    const int32_t count = end - p < a->strip ? end - p : a->strip;
    for (t = 0; t < count; ++t) {
      const float *src[36];
      tl_wino_inputs(a, p + t, src);
      tl_wino_transform_input(src, v + (size_t)t * (size_t)a->in_c, v_stride, a->in_c, a->m);
    }
    for (n = 0; n < a->filters; n += TL_GEMM_NR) {
      const int32_t width = a->filters - n < TL_GEMM_NR ? a->filters - n : TL_GEMM_NR;
      const float *u = a->u + (size_t)(n / TL_GEMM_NR) * block;
      float bias[TL_GEMM_NR];
      for (j = 0; j < TL_GEMM_NR; ++j) bias[j] = a->bias && j < width ? a->bias[n + j] : 0.0f;
      for (xi = 0; xi < a->products; ++xi)
        tl_gemm_f32_rows(v + (size_t)xi * v_stride, a->in_c, count, a->in_c,
                         u + (size_t)xi * (size_t)a->in_c * TL_GEMM_NR, NULL, NULL, m + (size_t)xi * m_stride,
                         TL_GEMM_NR, TL_GEMM_NR, -INFINITY, INFINITY);
      for (t = 0; t < count; ++t) {
        float *dst[16];
        tl_wino_outputs(a, p + t, n, dst);
        tl_wino_transform_output(m + (size_t)t * TL_GEMM_NR, m_stride, bias, dst, width, a->m, a->low, a->high);
      }
    }
  }
}

/* y (NHWC, pixels ldy floats apart) = clamp(bias + the 3x3 convolution of x (NHWC) by the
 * filters u (transformed and packed as above for tiles of `tile` x `tile` outputs: 2 or 4),
 * stride 1, no dilation, padding pad_top and pad_left above and left, whatever out_h and out_w
 * leave below and right); bias may be NULL; scratch holds (tile + 2)^2 * strip * (in_c + 16)
 * floats; the tiles split across `threads` by strips */
static inline void tl_wino_f32(const float *x, const float *u, const float *bias, float *y, float *scratch,
                               int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                               int32_t filters, int32_t pad_top, int32_t pad_left, int32_t tile, int32_t strip,
                               int32_t ldy, float low, float high, tl_threads *threads) {
  tl_wino_args a;
  int32_t tiles;
  a.x = x;
  a.u = u;
  a.bias = bias;
  a.y = y;
  a.in_h = in_h;
  a.in_w = in_w;
  a.in_c = in_c;
  a.out_h = out_h;
  a.out_w = out_w;
  a.filters = filters;
  a.pad_top = pad_top;
  a.pad_left = pad_left;
  a.m = tile == 4 ? 4 : 2;
  a.side = a.m + 2;
  a.products = a.side * a.side;
  a.tiles_h = (out_h + a.m - 1) / a.m;
  a.tiles_w = (out_w + a.m - 1) / a.m;
  a.strip = strip;
  a.ldy = ldy;
  a.low = low;
  a.high = high;
  tiles = batches * a.tiles_h * a.tiles_w;
  tl_parallel_rows(tl_wino_f32_range, &a, tiles, strip, threads, scratch,
                   (size_t)a.products * (size_t)strip * ((size_t)in_c + TL_GEMM_NR) * sizeof(float),
                   (int64_t)tiles * a.products * in_c * filters);
}

#endif
