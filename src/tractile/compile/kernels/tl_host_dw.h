/* tl_host_dw.h: the host's float depthwise convolution (one filter per channel) and pooling (float
 * average and max, int8 max) vectorised over the channels of an NHWC pixel, chosen by the
 * compiler's target macros: x86-64 AVX2 + FMA (8 floats, 32 int8 per register), AArch64 NEON
 * (4 floats, 16 int8), and the portable loops otherwise and for the channels left over.
 * Per output pixel and group of channels the sums stay in one register over the valid taps, in
 * the portable kernels' order (the depthwise sums with fused multiply-adds; the average's sums
 * and quotient as the portable ones, bit for bit). A max pool lets NaN win, as tl_pool.h's. */
#ifndef TL_HOST_DW_H
#define TL_HOST_DW_H

#include <stddef.h>

#include "tl_common.h"
#include "tl_conv.h"
#include "tl_pool.h"
#include "tl_threads.h"

/* a depthwise multiply-add weighs this many of a GEMM's against tl_threads.h's split threshold
 * (one tap per load, memory-bound: 4-12 times slower per multiply-add; compile/ops/host_dw.py) */
#define TL_HDW_SPLIT_WEIGHT 8

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TL_HDW_F32 8
#define TL_HDW_S8 32
typedef __m256 tl_hdw_f32;
typedef __m256i tl_hdw_s8;
#define tl_hdw_load(p) _mm256_loadu_ps(p)
#define tl_hdw_store(p, v) _mm256_storeu_ps((p), (v))
#define tl_hdw_set(v) _mm256_set1_ps(v)
#define tl_hdw_fma(acc, a, b) _mm256_fmadd_ps((a), (b), (acc))
#define tl_hdw_add(a, b) _mm256_add_ps((a), (b))
#define tl_hdw_div(a, b) _mm256_div_ps((a), (b))
/* NaN-propagating: the second operand wins when either is NaN */
#define tl_hdw_clamp(v, lo, hi) _mm256_min_ps((hi), _mm256_max_ps((lo), (v)))
/* value where value > best or value is NaN, else best (tl_pool.h's rule) */
#define tl_hdw_take(best, v) \
  _mm256_blendv_ps((best), (v), _mm256_or_ps(_mm256_cmp_ps((v), (best), _CMP_GT_OQ), _mm256_cmp_ps((v), (v), _CMP_UNORD_Q)))
/* value where value > best, else best: MAXPS's rule (NaN never taken: max pools sum the taps too, to see one) */
#define tl_hdw_max_first(v, best) _mm256_max_ps((v), (best))
#define tl_hdw_any_nan(v) (_mm256_movemask_ps(_mm256_cmp_ps((v), (v), _CMP_UNORD_Q)) != 0)
#define tl_hdw_load8(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define tl_hdw_store8(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define tl_hdw_set8(v) _mm256_set1_epi8(v)
#define tl_hdw_max8(a, b) _mm256_max_epi8((a), (b))
#define tl_hdw_min8(a, b) _mm256_min_epi8((a), (b))
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define TL_HDW_F32 4
#define TL_HDW_S8 16
typedef float32x4_t tl_hdw_f32;
typedef int8x16_t tl_hdw_s8;
#define tl_hdw_load(p) vld1q_f32(p)
#define tl_hdw_store(p, v) vst1q_f32((p), (v))
#define tl_hdw_set(v) vdupq_n_f32(v)
#define tl_hdw_fma(acc, a, b) vfmaq_f32((acc), (a), (b))
#define tl_hdw_add(a, b) vaddq_f32((a), (b))
#define tl_hdw_div(a, b) vdivq_f32((a), (b))
/* FMAX/FMIN return NaN when either operand is NaN */
#define tl_hdw_clamp(v, lo, hi) vminq_f32((hi), vmaxq_f32((lo), (v)))
#define tl_hdw_take(best, v) \
  vbslq_f32(vorrq_u32(vcgtq_f32((v), (best)), vmvnq_u32(vceqq_f32((v), (v)))), (v), (best))
#define tl_hdw_max_first(v, best) vbslq_f32(vcgtq_f32((v), (best)), (v), (best))
#define tl_hdw_any_nan(v) (vmaxvq_u32(vmvnq_u32(vceqq_f32((v), (v)))) != 0)
#define tl_hdw_load8(p) vld1q_s8(p)
#define tl_hdw_store8(p, v) vst1q_s8((p), (v))
#define tl_hdw_set8(v) vdupq_n_s8(v)
#define tl_hdw_max8(a, b) vmaxq_s8((a), (b))
#define tl_hdw_min8(a, b) vminq_s8((a), (b))
#else
#define TL_HDW_F32 0
#define TL_HDW_S8 0
#endif

/* float depthwise, one filter per channel (w [k_h][k_w][channels]); the channels from `c0` on of
 * one output pixel over the valid taps [ky0, ky1) x [kx0, kx1), `px` the window's corner */
static inline void tl_hdw_pixel_f32(const float *px, const float *w, const float *bias, float *out, int32_t c0,
                                    int32_t channels, int32_t ky0, int32_t ky1, int32_t kx0, int32_t kx1,
                                    int32_t k_w, int32_t row_step, int32_t col_step, float low, float high) {
  int32_t c = c0, ky, kx;
#if TL_HDW_F32
  const tl_hdw_f32 lo = tl_hdw_set(low), hi = tl_hdw_set(high);
  /* four registers of channels at a time: four chains of fused multiply-adds in flight */
  for (; c + 4 * TL_HDW_F32 <= channels; c += 4 * TL_HDW_F32) {
    tl_hdw_f32 a0 = bias ? tl_hdw_load(bias + c) : tl_hdw_set(0.0f);
    tl_hdw_f32 a1 = bias ? tl_hdw_load(bias + c + TL_HDW_F32) : tl_hdw_set(0.0f);
    tl_hdw_f32 a2 = bias ? tl_hdw_load(bias + c + 2 * TL_HDW_F32) : tl_hdw_set(0.0f);
    tl_hdw_f32 a3 = bias ? tl_hdw_load(bias + c + 3 * TL_HDW_F32) : tl_hdw_set(0.0f);
    for (ky = ky0; ky < ky1; ++ky) {
      const float *row = px + (ptrdiff_t)ky * row_step + c, *wr = w + (ptrdiff_t)ky * k_w * channels + c;
      for (kx = kx0; kx < kx1; ++kx) {
        const float *xp = row + (ptrdiff_t)kx * col_step, *wp = wr + (ptrdiff_t)kx * channels;
        a0 = tl_hdw_fma(a0, tl_hdw_load(xp), tl_hdw_load(wp));
        a1 = tl_hdw_fma(a1, tl_hdw_load(xp + TL_HDW_F32), tl_hdw_load(wp + TL_HDW_F32));
        a2 = tl_hdw_fma(a2, tl_hdw_load(xp + 2 * TL_HDW_F32), tl_hdw_load(wp + 2 * TL_HDW_F32));
        a3 = tl_hdw_fma(a3, tl_hdw_load(xp + 3 * TL_HDW_F32), tl_hdw_load(wp + 3 * TL_HDW_F32));
      }
    }
    tl_hdw_store(out + c, tl_hdw_clamp(a0, lo, hi));
    tl_hdw_store(out + c + TL_HDW_F32, tl_hdw_clamp(a1, lo, hi));
    tl_hdw_store(out + c + 2 * TL_HDW_F32, tl_hdw_clamp(a2, lo, hi));
    tl_hdw_store(out + c + 3 * TL_HDW_F32, tl_hdw_clamp(a3, lo, hi));
  }
  for (; c + TL_HDW_F32 <= channels; c += TL_HDW_F32) {
    tl_hdw_f32 acc = bias ? tl_hdw_load(bias + c) : tl_hdw_set(0.0f);
    for (ky = ky0; ky < ky1; ++ky) {
      const float *row = px + (ptrdiff_t)ky * row_step + c, *wr = w + (ptrdiff_t)ky * k_w * channels + c;
      for (kx = kx0; kx < kx1; ++kx)
        acc = tl_hdw_fma(acc, tl_hdw_load(row + (ptrdiff_t)kx * col_step), tl_hdw_load(wr + (ptrdiff_t)kx * channels));
    }
    tl_hdw_store(out + c, tl_hdw_clamp(acc, lo, hi));
  }
#endif
  for (; c < channels; ++c) {
    float acc = bias ? bias[c] : 0.0f;
    for (ky = ky0; ky < ky1; ++ky) {
      const float *row = px + (ptrdiff_t)ky * row_step + c, *wr = w + (ptrdiff_t)ky * k_w * channels + c;
      for (kx = kx0; kx < kx1; ++kx) acc += row[(ptrdiff_t)kx * col_step] * wr[(ptrdiff_t)kx * channels];
    }
    out[c] = tl_clamp_f32(acc, low, high);
  }
}

#if TL_HDW_F32
/* a 3x3 float depthwise's interior at stride 1 (windows wholly in the input, no column dilation)
 * runs TL_HDW_RUN output pixels of a row by TL_HDW_REGS registers of channels at a time: that many
 * independent sums in flight hide the fused multiply-adds' latency, which one pixel's four
 * registers do not. Taken on four groups of registers of channels or more, where the input a
 * run reads over its channels (3 rows of 8 pixels) stays within TL_HDW_RUN_BYTES: elsewhere it
 * was measured slower than a pixel at a time, which walks the rows in order (MobileNet's layers
 * in the model, AVX2: 56 x 56 x 128 215-223 -> 169-210 us; 112 x 112 x 32 226-241 -> 246-266;
 * 112 x 112 x 64 at stride 2 124 -> 139; 28 x 28 x 256 slower by 30% outside the model). */
#define TL_HDW_RUN 6
#define TL_HDW_REGS 2
#define TL_HDW_RUN_BYTES 12288

/* TL_HDW_RUN output pixels of one row, their windows' corners `step` floats apart from `px`:
 * channels [0, full) (full a multiple of TL_HDW_REGS registers), each pixel's sum taken as
 * tl_hdw_pixel_f32 takes it (bias, then the taps row by row) */
static inline void tl_hdw_run3x3_f32(const float *px, const float *w, const float *bias, float *out, int32_t full,
                                     int32_t channels, int32_t row_step, int32_t step, float low, float high) {
  const tl_hdw_f32 lo = tl_hdw_set(low), hi = tl_hdw_set(high);
  tl_hdw_f32 a[TL_HDW_RUN][TL_HDW_REGS];
  int32_t c, i, g;
  for (c = 0; c < full; c += TL_HDW_REGS * TL_HDW_F32) {
    for (g = 0; g < TL_HDW_REGS; ++g) {
      const tl_hdw_f32 start = bias ? tl_hdw_load(bias + c + g * TL_HDW_F32) : tl_hdw_set(0.0f);
      for (i = 0; i < TL_HDW_RUN; ++i) a[i][g] = start;
    }
    /* tap (ky, kx), spelled out nine times: the compilers unroll the loops over registers and pixels */
#define TL_HDW_TAP(ky, kx)                                                                                    \
  do {                                                                                                        \
    const float *const p = px + (ptrdiff_t)(ky) * row_step + (ptrdiff_t)(kx) * channels + c;                 \
    for (g = 0; g < TL_HDW_REGS; ++g) {                                                                       \
      const tl_hdw_f32 k = tl_hdw_load(w + (ptrdiff_t)((ky) * 3 + (kx)) * channels + c + g * TL_HDW_F32);     \
      for (i = 0; i < TL_HDW_RUN; ++i)                                                                        \
        a[i][g] = tl_hdw_fma(a[i][g], tl_hdw_load(p + (ptrdiff_t)i * step + g * TL_HDW_F32), k);              \
    }                                                                                                         \
  } while (0)
    TL_HDW_TAP(0, 0);
    TL_HDW_TAP(0, 1);
    TL_HDW_TAP(0, 2);
    TL_HDW_TAP(1, 0);
    TL_HDW_TAP(1, 1);
    TL_HDW_TAP(1, 2);
    TL_HDW_TAP(2, 0);
    TL_HDW_TAP(2, 1);
    TL_HDW_TAP(2, 2);
#undef TL_HDW_TAP
    for (i = 0; i < TL_HDW_RUN; ++i)
      for (g = 0; g < TL_HDW_REGS; ++g)
        tl_hdw_store(out + (ptrdiff_t)i * channels + c + g * TL_HDW_F32, tl_hdw_clamp(a[i][g], lo, hi));
  }
}

/* output pixels [first, last) of one row (last - first >= TL_HDW_RUN), `px` the window corner of
 * pixel `first`: runs of TL_HDW_RUN pixels (the last one ending at `last`, recomputing a few
 * pixels rather than leaving a short run), then the channels after the last full group of
 * registers pixel by pixel */
static inline void tl_hdw_row3x3_f32(const float *px, const float *w, const float *bias, float *out, int32_t first,
                                     int32_t last, int32_t channels, int32_t row_step, int32_t step, float low,
                                     float high) {
  const int32_t full = channels / (TL_HDW_REGS * TL_HDW_F32) * (TL_HDW_REGS * TL_HDW_F32);
  int32_t o;
  for (o = first;; o += TL_HDW_RUN) {
    if (o > last - TL_HDW_RUN) o = last - TL_HDW_RUN;
    tl_hdw_run3x3_f32(px + (ptrdiff_t)(o - first) * step, w, bias, out + (ptrdiff_t)o * channels, full, channels,
                      row_step, step, low, high);
    if (o == last - TL_HDW_RUN) break;
  }
  if (full < channels)
    for (o = first; o < last; ++o)
      tl_hdw_pixel_f32(px + (ptrdiff_t)(o - first) * step, w, bias, out + (ptrdiff_t)o * channels, full, channels, 0,
                       3, 0, 3, 3, row_step, channels, low, high);
}
#endif

/* output rows [begin, end) of all batches' out_h rows; [inner0, inner1): the output columns of a
 * 3x3 interior taken in runs (inner0 == out_w: none) */
static inline void tl_dwconv_f32_span(const float *x, const float *w, const float *bias, float *y, int32_t in_h,
                                      int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h,
                                      int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
                                      int32_t pad_top, int32_t pad_left, int32_t inner0, int32_t inner1, float low,
                                      float high, int32_t begin, int32_t end) {
  const int32_t row_step = dil_h * in_w * channels, col_step = dil_w * channels;
  int32_t row, ox;
#if !TL_HDW_F32
  (void)inner0;
  (void)inner1;
#endif
  for (row = begin; row < end; ++row) {
    const int32_t b = row / out_h, top = row % out_h * stride_h - pad_top;
    int32_t ky0, ky1;
    float *const out_row = y + (ptrdiff_t)row * out_w * channels;
    tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);
    for (ox = 0; ox < out_w; ++ox) {
      const int32_t left = ox * stride_w - pad_left;
      int32_t kx0, kx1;
      /* the window's corner as an offset: it may lie outside the input, only valid taps are read */
      const ptrdiff_t corner = ((ptrdiff_t)(b * in_h + top) * in_w + left) * channels;
#if TL_HDW_F32
      if (ox == inner0 && ky0 == 0 && ky1 == 3) {
        tl_hdw_row3x3_f32(x + corner, w, bias, out_row, inner0, inner1, channels, row_step, stride_w * channels, low,
                          high);
        ox = inner1 - 1;
        continue;
      }
#endif
      tl_valid_taps(left, dil_w, k_w, in_w, &kx0, &kx1);
      tl_hdw_pixel_f32(x + (corner + ky0 * row_step + kx0 * col_step), w + (ky0 * k_w + kx0) * channels, bias,
                       out_row + (ptrdiff_t)ox * channels, 0, channels, 0, ky1 - ky0, 0, kx1 - kx0, k_w, row_step,
                       col_step, low, high);
    }
  }
}

typedef struct {
  const float *x, *w, *bias;
  float *y;
  int32_t in_h, in_w, channels, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
  int32_t inner0, inner1;
  float low, high;
} tl_dwconv_f32_args;

static inline void tl_dwconv_f32_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_dwconv_f32_args *a = (const tl_dwconv_f32_args *)args;
  (void)scratch;
  tl_dwconv_f32_span(a->x, a->w, a->bias, a->y, a->in_h, a->in_w, a->channels, a->out_h, a->out_w, a->k_h, a->k_w,
                     a->stride_h, a->stride_w, a->dil_h, a->dil_w, a->pad_top, a->pad_left, a->inner0, a->inner1,
                     a->low, a->high, begin, end);
}

/* y = clamp(the depthwise convolution of x + bias). Rows are split across the context's threads
 * when the layer weighs enough (its multiply-adds * TL_HDW_SPLIT_WEIGHT) and y does not overlap
 * x; on one thread the rows run in a direct call, which the compiler specialises per layer */
static inline void tl_dwconv_host_f32(const float *x, const float *w, const float *bias, float *y, int32_t batches,
                                      int32_t in_h, int32_t in_w, int32_t channels, int32_t out_h, int32_t out_w,
                                      int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t dil_h,
                                      int32_t dil_w, int32_t pad_top, int32_t pad_left, float low, float high,
                                      tl_threads *threads) {
  const int64_t work = (int64_t)batches * out_h * out_w * channels * k_h * k_w * TL_HDW_SPLIT_WEIGHT;
  int32_t inner0 = out_w, inner1 = out_w;
#if TL_HDW_F32
  if (k_h == 3 && k_w == 3 && dil_w == 1 && stride_w == 1 && channels >= 4 * TL_HDW_REGS * TL_HDW_F32 &&
      (int64_t)3 * (TL_HDW_RUN + 2) * channels * 4 <= TL_HDW_RUN_BYTES) {
    inner0 = (pad_left + stride_w - 1) / stride_w;
    inner1 = in_w - 3 + pad_left < 0 ? 0 : (in_w - 3 + pad_left) / stride_w + 1;
    if (inner1 > out_w) inner1 = out_w;
    if (inner1 - inner0 < TL_HDW_RUN) inner0 = inner1 = out_w;
  }
#endif
  if (tl_splits(threads, work) && tl_disjoint(x, (size_t)batches * in_h * in_w * channels * 4u, y,
                                              (size_t)batches * out_h * out_w * channels * 4u)) {
    tl_dwconv_f32_args a;
    a.x = x;
    a.w = w;
    a.bias = bias;
    a.y = y;
    a.in_h = in_h;
    a.in_w = in_w;
    a.channels = channels;
    a.out_h = out_h;
    a.out_w = out_w;
    a.k_h = k_h;
    a.k_w = k_w;
    a.stride_h = stride_h;
    a.stride_w = stride_w;
    a.dil_h = dil_h;
    a.dil_w = dil_w;
    a.pad_top = pad_top;
    a.pad_left = pad_left;
    a.inner0 = inner0;
    a.inner1 = inner1;
    a.low = low;
    a.high = high;
    tl_parallel_rows(tl_dwconv_f32_range, &a, batches * out_h, 1, threads, NULL, 0, work);
    return;
  }
  tl_dwconv_f32_span(x, w, bias, y, in_h, in_w, channels, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w,
                     pad_top, pad_left, inner0, inner1, low, high, 0, batches * out_h);
}

/* the window of one pooled pixel: its first input pixel and the valid taps' counts */
#define TL_HDW_WINDOW                                                                                              \
  const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;                                    \
  int32_t y0, y1, x0, x1, c = 0, ky, kx, rows, cols;                                                               \
  tl_pool_taps(top, dil_h, k_h, in_h, &y0, &y1);                                                                   \
  tl_pool_taps(left, dil_w, k_w, in_w, &x0, &x1);                                                                  \
  rows = y1 - y0, cols = x1 - x0;                                                                                  \
  if (rows < 0) rows = 0;                                                                                          \
  if (cols < 0) cols = 0;                                                                                          \
  first = rows && cols ? x + (((ptrdiff_t)(b * in_h + top + y0 * dil_h) * in_w + left + x0 * dil_w) * channels) : x

/* the loops over output pixels around a pooling's body (x_type its element type) */
#define TL_HDW_POOL_BEGIN                                                                                          \
  const int32_t row_step = dil_h * in_w * channels, col_step = dil_w * channels;                                   \
  int32_t b, oy, ox;                                                                                               \
  for (b = 0; b < batches; ++b)                                                                                    \
    for (oy = 0; oy < out_h; ++oy)                                                                                 \
      for (ox = 0; ox < out_w; ++ox) {                                                                             \
        const x_type *first;                                                                                       \
        x_type *out = y + ((b * out_h + oy) * out_w + ox) * channels;                                              \
        TL_HDW_WINDOW;
#define TL_HDW_POOL_END }

static inline void tl_avg_pool_host_f32(const float *x, float *y, int32_t batches, int32_t in_h, int32_t in_w,
                                        int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                                        int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                                        float low, float high, int32_t dil_h, int32_t dil_w) {
  typedef float x_type;
  TL_HDW_POOL_BEGIN
    const float count = (float)(rows * cols > 0 ? rows * cols : 1);
#if TL_HDW_F32
    const tl_hdw_f32 lo = tl_hdw_set(low), hi = tl_hdw_set(high), n = tl_hdw_set(count);
    for (; c + TL_HDW_F32 <= channels; c += TL_HDW_F32) {
      tl_hdw_f32 total = tl_hdw_set(0.0f);
      for (ky = 0; ky < rows; ++ky)
        for (kx = 0; kx < cols; ++kx) total = tl_hdw_add(total, tl_hdw_load(first + ky * row_step + kx * col_step + c));
      tl_hdw_store(out + c, tl_hdw_clamp(tl_hdw_div(total, n), lo, hi));
    }
#endif
    for (; c < channels; ++c) {
      float total = 0.0f;
      for (ky = 0; ky < rows; ++ky)
        for (kx = 0; kx < cols; ++kx) total += first[ky * row_step + kx * col_step + c];
      out[c] = tl_clamp_f32(total / count, low, high);
    }
  TL_HDW_POOL_END
}

static inline void tl_max_pool_host_f32(const float *x, float *y, int32_t batches, int32_t in_h, int32_t in_w,
                                        int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                                        int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                                        float low, float high, int32_t dil_h, int32_t dil_w) {
  typedef float x_type;
  TL_HDW_POOL_BEGIN
#if TL_HDW_F32
    const tl_hdw_f32 lo = tl_hdw_set(low), hi = tl_hdw_set(high);
    for (; c + TL_HDW_F32 <= channels; c += TL_HDW_F32) {
      /* the largest by the plain rule, and the sum of the taps, NaN when one is: then the taps again by
       * tl_pool.h's rule (the last NaN taken), rarely */
      tl_hdw_f32 best = tl_hdw_set(-INFINITY), total = tl_hdw_set(0.0f);
      for (ky = 0; ky < rows; ++ky)
        for (kx = 0; kx < cols; ++kx) {
          const tl_hdw_f32 v = tl_hdw_load(first + ky * row_step + kx * col_step + c);
          best = tl_hdw_max_first(v, best);
          total = tl_hdw_add(total, v);
        }
      if (tl_hdw_any_nan(total)) {
        best = tl_hdw_set(-INFINITY);
        for (ky = 0; ky < rows; ++ky)
          for (kx = 0; kx < cols; ++kx) best = tl_hdw_take(best, tl_hdw_load(first + ky * row_step + kx * col_step + c));
      }
      tl_hdw_store(out + c, tl_hdw_clamp(best, lo, hi));
    }
#endif
    for (; c < channels; ++c) {
      float best = -INFINITY;
      for (ky = 0; ky < rows; ++ky)
        for (kx = 0; kx < cols; ++kx) {
          const float value = first[ky * row_step + kx * col_step + c];
          if (value > best || value != value) best = value;
        }
      out[c] = tl_clamp_f32(best, low, high);
    }
  TL_HDW_POOL_END
}

/* int8 max pooling (no dilations; low, high within int8) */
static inline void tl_max_pool_host_s8(const int8_t *x, int8_t *y, int32_t batches, int32_t in_h, int32_t in_w,
                                       int32_t channels, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w,
                                       int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                                       int32_t low, int32_t high) {
  typedef int8_t x_type;
  const int32_t dil_h = 1, dil_w = 1;
  TL_HDW_POOL_BEGIN
#if TL_HDW_S8
    const tl_hdw_s8 lo = tl_hdw_set8((int8_t)low), hi = tl_hdw_set8((int8_t)high);
    for (; c + TL_HDW_S8 <= channels; c += TL_HDW_S8) {
      tl_hdw_s8 best = tl_hdw_set8(-128);
      for (ky = 0; ky < rows; ++ky)
        for (kx = 0; kx < cols; ++kx) best = tl_hdw_max8(best, tl_hdw_load8(first + ky * row_step + kx * col_step + c));
      tl_hdw_store8(out + c, tl_hdw_min8(hi, tl_hdw_max8(lo, best)));
    }
#endif
    for (; c < channels; ++c) {
      int32_t best = -128;
      for (ky = 0; ky < rows; ++ky)
        for (kx = 0; kx < cols; ++kx) best = tl_max_i32(best, first[ky * row_step + kx * col_step + c]);
      out[c] = (int8_t)tl_clamp_i32(best, low, high);
    }
  TL_HDW_POOL_END
}

/* a float sum or mean over the middle axis of [outer][count][inner] (a global average pool on NHWC
 * data): y[o][i] = sum_r x[o][r][i] in the order of r, divided by count for a mean, as the
 * reduction loop computes it, but a row of `inner` at a time (the compiler vectorises it); y must
 * not overlap x */
static inline void tl_reduce_rows_f32(const float *x, float *y, int32_t outer, int32_t count, int32_t inner,
                                      int32_t mean) {
  int32_t o, r, i;
  for (o = 0; o < outer; ++o) {
    float *out = y + (ptrdiff_t)o * inner;
    for (i = 0; i < inner; ++i) out[i] = 0.0f;
    for (r = 0; r < count; ++r) {
      const float *row = x + ((ptrdiff_t)o * count + r) * inner;
      for (i = 0; i < inner; ++i) out[i] += row[i];
    }
    if (mean)
      for (i = 0; i < inner; ++i) out[i] = out[i] / (float)count;
  }
}

#endif
