/* tl_dw_pairs_x86.h: int8 depthwise convolutions (one filter per channel) on AVX2, channels in
 * lanes and taps in int16 pairs.
 *
 * Per output pixel, the window's k_h * k_w taps are pointers to their input channels, taps
 * outside the input pointing at a row of input zero points (`zeros`, in_c bytes of scratch): the
 * input zero point's product with every weight is folded into the bias (`folded`), so padding
 * adds nothing and no offset is added per tap. Per pair of taps and 8 channels, the two taps'
 * bytes are interleaved (vpunpcklbw), widened to int16 and one vpmaddwd against the weights
 * (`pairs`, host_gemm.pack_dw_pairs: per pair p, per channel c, taps 2p and 2p + 1 as int16;
 * channels to a multiple of 16 and the last pair zero-padded) gives the 8 channels' sums of two
 * products. The sums are those of tl_dwconv_host_s8 modulo 2^32; the requantization is
 * tl_gemm_s8_store's, 8 lanes at a time. Output pixel p is written after its taps are read, in
 * tl_dwconv_host_s8's order (the depthwise convolution may run in place). Without AVX2,
 * tl_dwconv_pairs_s8 is tl_dwconv_host_s8 (raw bias, `pairs` and `folded` unused). */
#ifndef TL_DW_PAIRS_X86_H
#define TL_DW_PAIRS_X86_H

#include "tl_gemm.h"

#define TL_DW_PAIRS_TAPS 64

#ifdef TL_GEMM_DW_S8

/* 8 channels' sums over `count` tap pairs from channel offset c (`width` < 8: a tail, its bytes
 * copied first) */
static inline __m256i tl_dw_pairs_eight(const int8_t *const *taps, int32_t count, const int16_t *w, int32_t stride,
                                        int32_t c, int32_t width) {
  __m256i s = _mm256_setzero_si256();
  int32_t p;
  if (width == 8) {
    for (p = 0; p < count; ++p, w += stride) {
      const __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)(taps[2 * p] + c));
      const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(taps[2 * p + 1] + c));
      s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)),
                                                _mm256_loadu_si256((const __m256i *)(const void *)w)));
    }
    return s;
  }
  for (p = 0; p < count; ++p, w += stride) {
    int8_t ta[16] = {0}, tb[16] = {0};
    memcpy(ta, taps[2 * p] + c, (size_t)width);
    memcpy(tb, taps[2 * p + 1] + c, (size_t)width);
    s = _mm256_add_epi32(
        s, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(_mm_loadu_si128((const __m128i *)(void *)ta),
                                                                    _mm_loadu_si128((const __m128i *)(void *)tb))),
                             _mm256_loadu_si256((const __m256i *)(const void *)w)));
  }
  return s;
}

/* 16 channels' sums (two ymm of 8) over `count` tap pairs from channel offset c */
static inline void tl_dw_pairs_sixteen(const int8_t *const *taps, int32_t count, const int16_t *w, int32_t stride,
                                       int32_t c, __m256i *s0, __m256i *s1) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0;
  int32_t p;
  for (p = 0; p < count; ++p, w += stride) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(taps[2 * p] + c));
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(taps[2 * p + 1] + c));
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)),
                                                _mm256_loadu_si256((const __m256i *)(const void *)w)));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b)),
                                                _mm256_loadu_si256((const __m256i *)(const void *)(w + 16))));
  }
  *s0 = a0;
  *s1 = a1;
}

#endif

/* tl_dwconv_host_s8's arguments, then the weights as tap pairs (`pairs`) and the bias with the
 * input zero point folded in (`folded`; both `padded` long: in_c rounded up to 16); acc holds at
 * least in_c bytes (the row of zero points) */
static inline void tl_dwconv_pairs_s8(const int8_t *x, const int8_t *w, const int32_t *bias, int8_t *y, int32_t *acc,
                                      int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                      int32_t out_w, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                                      int32_t dil_h, int32_t dil_w, int32_t pad_top, int32_t pad_left,
                                      int32_t x_offset, const int32_t *multiplier, const int32_t *left,
                                      const int32_t *right, int32_t zero, int32_t low, int32_t high,
                                      const int16_t *pairs, const int32_t *folded) {
#ifdef TL_GEMM_DW_S8
  const int32_t taps = k_h * k_w, count = (taps + 1) / 2, padded = (in_c + 15) / 16 * 16, stride = 2 * padded;
  const int8_t *tap[TL_DW_PAIRS_TAPS + 1];
  int8_t *zeros = (int8_t *)(void *)acc;
  const __m256i z = _mm256_set1_epi32(zero), lo = _mm256_set1_epi32(low), hi = _mm256_set1_epi32(high);
  int32_t b, oy, ox, ky, kx, c;
  (void)w;
  (void)bias;
  int32_t offset[TL_DW_PAIRS_TAPS];
  memset(zeros, (int8_t)(-x_offset), (size_t)in_c);
  tap[taps] = zeros;
  for (ky = 0; ky < k_h; ++ky)
    for (kx = 0; kx < k_w; ++kx) offset[ky * k_w + kx] = (ky * dil_h * in_w + kx * dil_w) * in_c;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int8_t *rows[TL_DW_PAIRS_TAPS];
      int all_rows = 1;
      for (ky = 0; ky < k_h; ++ky) {
        const int32_t iy = oy * stride_h - pad_top + ky * dil_h;
        rows[ky] = iy >= 0 && iy < in_h ? x + (b * in_h + iy) * in_w * in_c : NULL;
        all_rows &= rows[ky] != NULL;
      }
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t start = ox * stride_w - pad_left;
        const int inside = start >= 0 && start + (k_w - 1) * dil_w < in_w;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * in_c;
        if (all_rows && inside) {
          const int8_t *origin = rows[0] + start * in_c;
          int32_t t;
          for (t = 0; t < taps; ++t) tap[t] = origin + offset[t];
        } else {
          for (ky = 0; ky < k_h; ++ky)
            for (kx = 0; kx < k_w; ++kx) {
              const int32_t ix = start + kx * dil_w;
              tap[ky * k_w + kx] = rows[ky] && ix >= 0 && ix < in_w ? rows[ky] + ix * in_c : zeros;
            }
        }
        for (c = 0; c + 16 <= in_c; c += 16) {
          __m256i s0, s1;
          tl_dw_pairs_sixteen(tap, count, pairs + 2 * c, stride, c, &s0, &s1);
          tl_x86_store8(s0, _mm256_loadu_si256((const __m256i *)(const void *)(folded + c)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(multiplier + c)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(left + c)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(right + c)), z, lo, hi, out + c, 8);
          tl_x86_store8(s1, _mm256_loadu_si256((const __m256i *)(const void *)(folded + c + 8)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(multiplier + c + 8)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(left + c + 8)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(right + c + 8)), z, lo, hi, out + c + 8,
                        8);
        }
        for (; c < in_c; c += 8) {
          const int32_t width = in_c - c < 8 ? in_c - c : 8;
          tl_x86_store8(tl_dw_pairs_eight(tap, count, pairs + 2 * c, stride, c, width),
                        _mm256_loadu_si256((const __m256i *)(const void *)(folded + c)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(multiplier + c)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(left + c)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(right + c)), z, lo, hi, out + c, width);
        }
      }
    }
#else
  (void)pairs;
  (void)folded;
  tl_dwconv_host_s8(x, w, bias, y, acc, batches, in_h, in_w, in_c, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h,
                    dil_w, pad_top, pad_left, x_offset, multiplier, left, right, zero, low, high);
#endif
}

#endif
