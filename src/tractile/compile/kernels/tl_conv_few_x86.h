/* tl_conv_few_x86.h: int8 NHWC convolutions with at most 8 filters on AVX2 without VNNI (where
 * tl_gemm_s16.h's 16-output tile would leave half its lanes idle), windows read in place.
 *
 * Per output row, the k_h input rows its windows read are widened to int16 into `col` with their
 * padding (taps outside the input holding the input zero point, the bias folded as tl_gemm.h's),
 * so that every window row is k_w * in_c contiguous int16 values. The weights (`few`, host_gemm.pack_few) hold per window row ky and
 * pair q of its taps one ymm: filter f's taps 2q and 2q + 1 in int16 lanes 2f, 2f + 1 (zeros past
 * the row's taps and past the filters). Per output pixel, one 32-bit broadcast of the input pair
 * and one vpmaddwd + vpaddd per (ky, q) give the 8 filters' sums; four pixels of a row run at
 * once (independent chains sharing the weight loads). The sums are the int32 sums of tl_gemm.h's
 * portable loops modulo 2^32; the requantization is tl_gemm_s8_store's, on 8 lanes.
 * Elsewhere (portable C, NEON, VNNI) tl_conv_few_s8 is tl_conv_gemm_s8. */
#ifndef TL_CONV_FEW_X86_H
#define TL_CONV_FEW_X86_H

#include "tl_gemm.h"

#ifdef TL_GEMM_S16_TILE

typedef struct {
  const int8_t *x;
  const int16_t *few;
  const int32_t *bias, *multiplier, *shift;
  int8_t *y;
  tl_conv_geometry g;
  int32_t image_w, x_zero, per_channel, zero, low, high;
} tl_conv_few_args;

/* the k_h input rows of output row oy of batch b as int16, image_w pixels each (the columns
 * before and after the input, and rows outside it, = x_zero), then 2 zeros */
static inline void tl_conv_few_band(int16_t *band, const tl_conv_few_args *a, int32_t b, int32_t oy) {
  const tl_conv_geometry *g = &a->g;
  const int32_t row = a->image_w * g->in_c, inside = g->in_w * g->in_c, before = g->pad_left * g->in_c;
  const int16_t pad = (int16_t)a->x_zero;
  int32_t ky, i;
  for (ky = 0; ky < g->k_h; ++ky) {
    int16_t *d = band + ky * row;
    const int32_t iy = oy * g->stride_h - g->pad_top + ky * g->dil_h;
    if (iy < 0 || iy >= g->in_h) {
      for (i = 0; i < row; ++i) d[i] = pad;
      continue;
    }
    for (i = 0; i < before; ++i) d[i] = pad;
    tl_x86_widen_bytes(d + before, a->x + (b * g->in_h + iy) * inside, inside);
    for (i = before + inside; i < row; ++i) d[i] = pad;
  }
  band[g->k_h * row] = 0;
  band[g->k_h * row + 1] = 0;
}

static inline __m256i tl_conv_few_pair(const int16_t *p) {
  int32_t word;
  memcpy(&word, p, 4);
  return _mm256_set1_epi32(word);
}

/* the 8 filters' sums of `n` (1 or 4) pixels whose windows start at a, a + step, ...: rows of
 * `pairs` tap pairs, row_step apart */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void tl_conv_few_sums(const int16_t *a, int32_t step, int32_t row_step, int32_t k_h, int32_t pairs,
                             const int16_t *w, int32_t n, __m256i *sums) {
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  int32_t ky, q;
  if (n == 4) {
    for (ky = 0; ky < k_h; ++ky) {
      const int16_t *r = a + ky * row_step;
      for (q = 0; q < pairs; ++q, w += 16) {
        const __m256i wv = _mm256_loadu_si256((const __m256i *)(const void *)w);
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(tl_conv_few_pair(r + 2 * q), wv));
        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(tl_conv_few_pair(r + step + 2 * q), wv));
        s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(tl_conv_few_pair(r + 2 * step + 2 * q), wv));
        s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(tl_conv_few_pair(r + 3 * step + 2 * q), wv));
      }
    }
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
  } else {
    for (ky = 0; ky < k_h; ++ky) {
      const int16_t *r = a + ky * row_step;
      for (q = 0; q < pairs; ++q, w += 16)
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(tl_conv_few_pair(r + 2 * q),
                                                    _mm256_loadu_si256((const __m256i *)(const void *)w)));
    }
  }
  sums[0] = s0;
}

/* output rows begin .. end - 1 (over batches and rows) */
static inline void tl_conv_few_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_conv_few_args *a = (const tl_conv_few_args *)args;
  const tl_conv_geometry *g = &a->g;
  const int32_t f = g->filters, in_c = g->in_c, pairs = (g->k_w * in_c + 1) / 2;
  const int32_t step = g->stride_w * in_c, row_step = a->image_w * in_c;
  int16_t *band = (int16_t *)scratch;
  int32_t bias[8], multiplier[8], left[8], right[8], j, r, ox, i;
  __m256i vb, vm, vl, vr, z, lo, hi, sums[4];
  for (j = 0; j < 8; ++j) {
    const int32_t u = j < f ? j : 0, s = a->shift[u * a->per_channel];
    bias[j] = a->bias[u];
    multiplier[j] = a->multiplier[u * a->per_channel];
    left[j] = s > 0 ? s : 0;
    right[j] = s > 0 ? 0 : -s;
  }
  vb = _mm256_loadu_si256((const __m256i *)(const void *)bias);
  vm = _mm256_loadu_si256((const __m256i *)(const void *)multiplier);
  vl = _mm256_loadu_si256((const __m256i *)(const void *)left);
  vr = _mm256_loadu_si256((const __m256i *)(const void *)right);
  z = _mm256_set1_epi32(a->zero);
  lo = _mm256_set1_epi32(a->low);
  hi = _mm256_set1_epi32(a->high);
  for (r = begin; r < end; ++r) {
    const int32_t b = r / g->out_h, oy = r % g->out_h;
    int8_t *out = a->y + r * g->out_w * f;
    tl_conv_few_band(band, a, b, oy);
    for (ox = 0; ox < g->out_w; ox += 4) {
      const int32_t n = g->out_w - ox >= 4 ? 4 : 1;
      tl_conv_few_sums(band + ox * step, step, row_step, g->k_h, pairs, a->few, n, sums);
      for (i = 0; i < n; ++i) tl_x86_store8(sums[i], vb, vm, vl, vr, z, lo, hi, out + (ox + i) * f, f);
      if (n == 1) ox -= 3;
    }
  }
}

#endif

/* an NHWC int8 convolution of at most 8 filters: tl_conv_gemm_s8's arguments (`wide` NULL), then
 * the int16 weights `few` and the width of the padded input (image_w pixels); col holds at least
 * 2 * (k_h * image_w * in_c + 2) bytes and tl_conv_gemm_s8's col */
static inline void tl_conv_few_s8(const int8_t *x, const int8_t *packed, const int32_t *bias, int8_t *y, int8_t *col,
                                  int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                  int32_t out_w, int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h,
                                  int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top, int32_t pad_left,
                                  int32_t x_zero, int32_t kp, const int32_t *multiplier, const int32_t *shift,
                                  int32_t per_channel, int32_t zero, int32_t low, int32_t high, const int16_t *few,
                                  int32_t image_w, tl_threads *threads) {
#ifdef TL_GEMM_S16_TILE
  tl_conv_few_args a;
  (void)packed;
  (void)kp;
  (void)dil_w;
  TL_CONV_GEOMETRY(a.g);
  a.x = x;
  a.few = few;
  a.bias = bias;
  a.multiplier = multiplier;
  a.shift = shift;
  a.y = y;
  a.image_w = image_w;
  a.x_zero = x_zero;
  a.per_channel = per_channel;
  a.zero = zero;
  a.low = low;
  a.high = high;
  if (!tl_disjoint(x, (size_t)batches * in_h * in_w * in_c, y, (size_t)batches * out_h * out_w * filters))
    threads = NULL;
  tl_parallel_rows(tl_conv_few_range, &a, batches * out_h, 1, threads, col,
                   (size_t)(k_h * image_w * in_c + 2) * 2u, (int64_t)batches * out_h * out_w * k_h * k_w * in_c * filters);
#else
  (void)few;
  (void)image_w;
  tl_conv_gemm_s8(x, packed, bias, y, col, batches, in_h, in_w, in_c, out_h, out_w, filters, k_h, k_w, stride_h,
                  stride_w, dil_h, dil_w, pad_top, pad_left, x_zero, kp, multiplier, shift, per_channel, zero, low,
                  high, NULL, threads);
#endif
}

#endif
