/* tl_gemm_x86.h: tl_gemm.h's micro-kernels for x86-64 (AVX2 + FMA, AVX-512, VNNI), chosen by the
 * compiler's target macros (the host build passes -march=native).
 *
 * int8, one block of 16 outputs, per group of 4 depths: the 64 packed bytes hold output j's 4
 * weights in bytes 4j .. 4j + 3.
 *   VNNI (vpdpbusd, unsigned x signed bytes): the activations are made unsigned by adding 128
 *   (x ^ 0x80), broadcast as one 32-bit word, and each product sum starts at -128 * sum(w)
 *   (the block's first 16 words), so the sum is the signed one;
 *   AVX2: bytes sign-extended to int16 (no vpmaddubsw, whose int16 pair sums saturate), the 4
 *   activations repeated across the register, vpmaddwd giving two partial sums per output that
 *   one vphaddd adds at the end.
 * float: rows of 16 floats times a broadcast activation, fused multiply-adds; on AVX2 six rows at
 * a time with the bias, the clamp and the stores in the micro-kernel (tl_gemm_f32_kernel). */
#ifndef TL_GEMM_X86_H
#define TL_GEMM_X86_H
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)

#include <immintrin.h>

#define TL_GEMM_S8_TILE

static inline int32_t tl_x86_word(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
/* four rows at a time, one zmm of 16 accumulators per row */
static inline void tl_gemm_s8_tile(const int8_t *col, int32_t rows, int32_t kp, const int8_t *block, int32_t *acc) {
  const __m512i flip = _mm512_set1_epi32((int32_t)0x80808080u);
  const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512((const void *)block));
  const int8_t *w = block + 4 * TL_GEMM_NR;
  const int32_t groups = kp / 4;
  int32_t r, g;
  for (r = 0; r + 4 <= rows; r += 4) {
    const int8_t *a = col + r * kp;
    __m512i s0 = start, s1 = start, s2 = start, s3 = start;
    for (g = 0; g < groups; ++g) {
      const __m512i wv = _mm512_loadu_si512((const void *)(w + 64 * g));
      s0 = _mm512_dpbusd_epi32(s0, _mm512_xor_si512(_mm512_set1_epi32(tl_x86_word(a + 4 * g)), flip), wv);
      s1 = _mm512_dpbusd_epi32(s1, _mm512_xor_si512(_mm512_set1_epi32(tl_x86_word(a + kp + 4 * g)), flip), wv);
      s2 = _mm512_dpbusd_epi32(s2, _mm512_xor_si512(_mm512_set1_epi32(tl_x86_word(a + 2 * kp + 4 * g)), flip), wv);
      s3 = _mm512_dpbusd_epi32(s3, _mm512_xor_si512(_mm512_set1_epi32(tl_x86_word(a + 3 * kp + 4 * g)), flip), wv);
    }
    _mm512_storeu_si512((void *)(acc + r * TL_GEMM_NR), s0);
    _mm512_storeu_si512((void *)(acc + (r + 1) * TL_GEMM_NR), s1);
    _mm512_storeu_si512((void *)(acc + (r + 2) * TL_GEMM_NR), s2);
    _mm512_storeu_si512((void *)(acc + (r + 3) * TL_GEMM_NR), s3);
  }
  for (; r < rows; ++r) {
    const int8_t *a = col + r * kp;
    __m512i s0 = start;
    for (g = 0; g < groups; ++g)
      s0 = _mm512_dpbusd_epi32(s0, _mm512_xor_si512(_mm512_set1_epi32(tl_x86_word(a + 4 * g)), flip),
                               _mm512_loadu_si512((const void *)(w + 64 * g)));
    _mm512_storeu_si512((void *)(acc + r * TL_GEMM_NR), s0);
  }
}
#elif defined(__AVXVNNI__)
/* 256-bit VNNI (AVX-VNNI): two ymm of 8 accumulators per row, two rows at a time */
static inline void tl_gemm_s8_tile(const int8_t *col, int32_t rows, int32_t kp, const int8_t *block, int32_t *acc) {
  const __m256i flip = _mm256_set1_epi32((int32_t)0x80808080u);
  const __m256i start0 = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)block));
  const __m256i start1 = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)block + 1));
  const int8_t *w = block + 4 * TL_GEMM_NR;
  const int32_t groups = kp / 4;
  int32_t r, g;
  for (r = 0; r < rows; r += 2) {
    const int8_t *a0 = col + r * kp, *a1 = col + (r + 1 < rows ? r + 1 : r) * kp;
    __m256i s00 = start0, s01 = start1, s10 = start0, s11 = start1;
    for (g = 0; g < groups; ++g) {
      const __m256i w0 = _mm256_loadu_si256((const __m256i *)(w + 64 * g));
      const __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + 64 * g + 32));
      const __m256i x0 = _mm256_xor_si256(_mm256_set1_epi32(tl_x86_word(a0 + 4 * g)), flip);
      const __m256i x1 = _mm256_xor_si256(_mm256_set1_epi32(tl_x86_word(a1 + 4 * g)), flip);
      s00 = _mm256_dpbusd_avx_epi32(s00, x0, w0);
      s01 = _mm256_dpbusd_avx_epi32(s01, x0, w1);
      s10 = _mm256_dpbusd_avx_epi32(s10, x1, w0);
      s11 = _mm256_dpbusd_avx_epi32(s11, x1, w1);
    }
    _mm256_storeu_si256((__m256i *)(acc + r * TL_GEMM_NR), s00);
    _mm256_storeu_si256((__m256i *)(acc + r * TL_GEMM_NR + 8), s01);
    if (r + 1 < rows) {
      _mm256_storeu_si256((__m256i *)(acc + (r + 1) * TL_GEMM_NR), s10);
      _mm256_storeu_si256((__m256i *)(acc + (r + 1) * TL_GEMM_NR + 8), s11);
    }
  }
}
#else
/* 16 int16 lanes: output j's weights k .. k + 3 for 4 outputs (16 bytes sign-extended) */
static inline __m256i tl_x86_widen(const int8_t *p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}
/* activations k .. k + 3 repeated four times as int16 */
static inline __m256i tl_x86_repeat(const int8_t *p) { return _mm256_cvtepi8_epi16(_mm_set1_epi32(tl_x86_word(p))); }
/* the sums of output pairs' partial sums, in output order: a holds outputs 0-3, b 4-7 */
static inline __m256i tl_x86_pairs(__m256i a, __m256i b) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), 0xD8);
}
/* AVX2: two rows at a time, four ymm of partial sums per row */
static inline void tl_gemm_s8_tile(const int8_t *col, int32_t rows, int32_t kp, const int8_t *block, int32_t *acc) {
  const int8_t *w = block + 4 * TL_GEMM_NR;
  const int32_t groups = kp / 4;
  int32_t r, g;
  for (r = 0; r + 2 <= rows; r += 2) {
    const int8_t *a0 = col + r * kp, *a1 = col + (r + 1) * kp;
    __m256i s00 = _mm256_setzero_si256(), s01 = s00, s02 = s00, s03 = s00;
    __m256i s10 = s00, s11 = s00, s12 = s00, s13 = s00;
    for (g = 0; g < groups; ++g) {
      const int8_t *wg = w + 64 * g;
      const __m256i w0 = tl_x86_widen(wg), w1 = tl_x86_widen(wg + 16);
      const __m256i w2 = tl_x86_widen(wg + 32), w3 = tl_x86_widen(wg + 48);
      const __m256i x0 = tl_x86_repeat(a0 + 4 * g), x1 = tl_x86_repeat(a1 + 4 * g);
      s00 = _mm256_add_epi32(s00, _mm256_madd_epi16(x0, w0));
      s01 = _mm256_add_epi32(s01, _mm256_madd_epi16(x0, w1));
      s02 = _mm256_add_epi32(s02, _mm256_madd_epi16(x0, w2));
      s03 = _mm256_add_epi32(s03, _mm256_madd_epi16(x0, w3));
      s10 = _mm256_add_epi32(s10, _mm256_madd_epi16(x1, w0));
      s11 = _mm256_add_epi32(s11, _mm256_madd_epi16(x1, w1));
      s12 = _mm256_add_epi32(s12, _mm256_madd_epi16(x1, w2));
      s13 = _mm256_add_epi32(s13, _mm256_madd_epi16(x1, w3));
    }
    _mm256_storeu_si256((__m256i *)(acc + r * TL_GEMM_NR), tl_x86_pairs(s00, s01));
    _mm256_storeu_si256((__m256i *)(acc + r * TL_GEMM_NR + 8), tl_x86_pairs(s02, s03));
    _mm256_storeu_si256((__m256i *)(acc + (r + 1) * TL_GEMM_NR), tl_x86_pairs(s10, s11));
    _mm256_storeu_si256((__m256i *)(acc + (r + 1) * TL_GEMM_NR + 8), tl_x86_pairs(s12, s13));
  }
  if (r < rows) { /* the last row alone (a dense layer's single row) */
    const int8_t *a0 = col + r * kp;
    __m256i s00 = _mm256_setzero_si256(), s01 = s00, s02 = s00, s03 = s00;
    for (g = 0; g < groups; ++g) {
      const int8_t *wg = w + 64 * g;
      const __m256i x0 = tl_x86_repeat(a0 + 4 * g);
      s00 = _mm256_add_epi32(s00, _mm256_madd_epi16(x0, tl_x86_widen(wg)));
      s01 = _mm256_add_epi32(s01, _mm256_madd_epi16(x0, tl_x86_widen(wg + 16)));
      s02 = _mm256_add_epi32(s02, _mm256_madd_epi16(x0, tl_x86_widen(wg + 32)));
      s03 = _mm256_add_epi32(s03, _mm256_madd_epi16(x0, tl_x86_widen(wg + 48)));
    }
    _mm256_storeu_si256((__m256i *)(acc + r * TL_GEMM_NR), tl_x86_pairs(s00, s01));
    _mm256_storeu_si256((__m256i *)(acc + r * TL_GEMM_NR + 8), tl_x86_pairs(s02, s03));
  }
}

/* AVX2 without VNNI, k x k convolutions: tl_gemm.h's tl_conv_gemm_s8 widens the packed weights
 * once per call into pairs of int16 (per pair of depths 16 outputs x 2 weights, one vpmaddwd
 * giving 8 outputs' sums of two products, nothing to add across lanes at the end) and im2cols
 * the pixels as int16, so a row's pair of activations is one 32-bit broadcast from memory. */
#define TL_GEMM_S16_TILE
#define TL_GEMM_S16_MR 6

/* n int8 values sign-extended to int16 */
static inline void tl_x86_widen_bytes(int16_t *d, const int8_t *s, int32_t n) {
  int32_t i = 0;
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(d + i), tl_x86_widen(s + i));
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(d + i), _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(s + i))));
  for (; i < n; ++i) d[i] = s[i];
}

/* six rows of a (int16, row stride lda) by one block of 16 outputs (w: pairs x 16 x 2 int16):
 * acc[r][j], 12 ymm accumulators spelled out in a function of its own (no spill in the loop) */
#define TL_X86_S16_ROW(i, r0, r1)                                                                      \
  do {                                                                                                 \
    int32_t word;                                                                                      \
    memcpy(&word, a + (i) * lda + 2 * q, 4);                                                           \
    {                                                                                                  \
      const __m256i x = _mm256_set1_epi32(word);                                                       \
      r0 = _mm256_add_epi32(r0, _mm256_madd_epi16(x, w0));                                             \
      r1 = _mm256_add_epi32(r1, _mm256_madd_epi16(x, w1));                                             \
    }                                                                                                  \
  } while (0)
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void tl_gemm_s16_six(const int16_t *a, int32_t lda, int32_t pairs, const int16_t *w, int32_t *acc) {
  __m256i s00 = _mm256_setzero_si256(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00;
  __m256i s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
  int32_t q;
  for (q = 0; q < pairs; ++q) {
    const __m256i w0 = _mm256_loadu_si256((const __m256i *)(w + 32 * q));
    const __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + 32 * q + 16));
    TL_X86_S16_ROW(0, s00, s01);
    TL_X86_S16_ROW(1, s10, s11);
    TL_X86_S16_ROW(2, s20, s21);
    TL_X86_S16_ROW(3, s30, s31);
    TL_X86_S16_ROW(4, s40, s41);
    TL_X86_S16_ROW(5, s50, s51);
  }
  _mm256_storeu_si256((__m256i *)acc, s00);
  _mm256_storeu_si256((__m256i *)(acc + 8), s01);
  _mm256_storeu_si256((__m256i *)(acc + 16), s10);
  _mm256_storeu_si256((__m256i *)(acc + 24), s11);
  _mm256_storeu_si256((__m256i *)(acc + 32), s20);
  _mm256_storeu_si256((__m256i *)(acc + 40), s21);
  _mm256_storeu_si256((__m256i *)(acc + 48), s30);
  _mm256_storeu_si256((__m256i *)(acc + 56), s31);
  _mm256_storeu_si256((__m256i *)(acc + 64), s40);
  _mm256_storeu_si256((__m256i *)(acc + 72), s41);
  _mm256_storeu_si256((__m256i *)(acc + 80), s50);
  _mm256_storeu_si256((__m256i *)(acc + 88), s51);
}
#undef TL_X86_S16_ROW
#endif

/* 16 requantized int8 outputs of acc + bias (TFLite's MultiplyByQuantizedMultiplier per lane, as
 * tl_mbqm_portable: the doubling high product of (x << left) * m, then RoundingDivideByPOT by
 * right in 32 bits, as gemmlowp's mask and threshold), the first `width` stored */
#define TL_GEMM_S8_STORE
static inline __m256i tl_x86_mbqm(__m256i x, __m256i m, __m256i left, __m256i right) {
  const __m256i nudge = _mm256_set1_epi64x((int64_t)1 << 30);
  const __m256i xl = _mm256_sllv_epi32(x, left);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(xl, m), nudge);
  const __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(xl, 32), _mm256_srli_epi64(m, 32)), nudge);
  const __m256i high = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1), right), _mm256_set1_epi32(1));
  const __m256i threshold = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_srai_epi32(high, 31));
  const __m256i round = _mm256_cmpgt_epi32(_mm256_and_si256(high, mask), threshold);
  return _mm256_sub_epi32(_mm256_srav_epi32(high, right), round);
}
static inline void tl_gemm_s8_store(const int32_t *acc, const int32_t *bias, const int32_t *multiplier,
                                    const int32_t *left, const int32_t *right, int32_t zero, int32_t low,
                                    int32_t high, int8_t *y, int32_t width) {
  const __m256i z = _mm256_set1_epi32(zero), lo = _mm256_set1_epi32(low), hi = _mm256_set1_epi32(high);
  __m256i v[2];
  __m128i bytes;
  int i;
  for (i = 0; i < 2; ++i) {
    const __m256i sum = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(acc + 8 * i)),
                                         _mm256_loadu_si256((const __m256i *)(bias + 8 * i)));
    const __m256i q = tl_x86_mbqm(sum, _mm256_loadu_si256((const __m256i *)(multiplier + 8 * i)),
                                  _mm256_loadu_si256((const __m256i *)(left + 8 * i)),
                                  _mm256_loadu_si256((const __m256i *)(right + 8 * i)));
    v[i] = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, z), lo), hi);
  }
  {
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(v[0], v[1]), 0xD8);
    bytes = _mm_packs_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1));
  }
  if (width == TL_GEMM_NR) {
    _mm_storeu_si128((__m128i *)y, bytes);
  } else {
    int8_t all[TL_GEMM_NR];
    _mm_storeu_si128((__m128i *)all, bytes);
    memcpy(y, all, (size_t)width);
  }
}

/* 16 int8 outputs of TFLite's reference rescale in double precision, tl_gemm_s8_rows's scalar loop
 * four lanes at a time: clamp(tl_round_half_away((double)(acc + bias) * scale) + zero, low, high),
 * the scale one per output (per_channel) or one for all; the clamp on the rounded doubles (integers)
 * before they are converted, so every lane converts exactly */
#define TL_GEMM_S8_STORE_SCALED
static inline void tl_gemm_s8_store_scaled(const int32_t *acc, const int32_t *bias, const double *scale,
                                           int32_t per_channel, int32_t zero, int32_t low, int32_t high, int8_t *y) {
  const __m256d half = _mm256_set1_pd(0.49999999999999994), nothing = _mm256_setzero_pd();
  const __m256d lo = _mm256_set1_pd((double)low - zero), hi = _mm256_set1_pd((double)high - zero);
  const __m128i z = _mm_set1_epi32(zero);
  __m128i q[4];
  int i;
  for (i = 0; i < 4; ++i) {
    const __m128i sum = _mm_add_epi32(_mm_loadu_si128((const __m128i *)(const void *)(acc + 4 * i)),
                                      _mm_loadu_si128((const __m128i *)(const void *)(bias + 4 * i)));
    const __m256d s = per_channel ? _mm256_loadu_pd(scale + 4 * i) : _mm256_broadcast_sd(scale);
    const __m256d x = _mm256_mul_pd(_mm256_cvtepi32_pd(sum), s);
    /* +half where x >= 0, else -half (the sign bit of -half set by xor) */
    const __m256d sign = _mm256_andnot_pd(_mm256_cmp_pd(x, nothing, _CMP_GE_OQ), _mm256_set1_pd(-0.0));
    const __m256d t = _mm256_round_pd(_mm256_add_pd(x, _mm256_xor_pd(half, sign)), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    q[i] = _mm_add_epi32(_mm256_cvttpd_epi32(_mm256_min_pd(_mm256_max_pd(t, lo), hi)), z);
  }
  _mm_storeu_si128((__m128i *)(void *)y, _mm_packs_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3])));
}

/* the first `width` of 8 requantized outputs of sum + bias (tl_gemm_s8_store on one ymm) */
static inline void tl_x86_store8(__m256i sum, __m256i bias, __m256i m, __m256i left, __m256i right, __m256i z,
                                 __m256i lo, __m256i hi, int8_t *y, int32_t width) {
  const __m256i q = tl_x86_mbqm(_mm256_add_epi32(sum, bias), m, left, right);
  const __m256i v = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, z), lo), hi);
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i bytes = _mm_packs_epi16(words, words);
  if (width == 8) {
    _mm_storel_epi64((__m128i *)(void *)y, bytes);
  } else {
    int8_t all[16];
    _mm_storeu_si128((__m128i *)(void *)all, bytes);
    memcpy(y, all, (size_t)width);
  }
}

/* depthwise int8: the sums of the first channels of a pixel, 16 at a time in registers over the
 * valid taps ((x + x_offset) * w fits int16: |x + x_offset| <= 255, |w| <= 128); the count done */
#define TL_GEMM_DW_S8
static inline int32_t tl_dw_s8_channels(const int8_t *x, const int8_t *w, int32_t *acc, int32_t origin, int32_t in_c,
                                        int32_t row_step, int32_t col_step, int32_t k_w, int32_t ky0, int32_t ky1,
                                        int32_t kx0, int32_t kx1, int32_t x_offset) {
  const __m256i offset = _mm256_set1_epi16((int16_t)x_offset);
  int32_t c, ky, kx;
  for (c = 0; c + 16 <= in_c; c += 16) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    for (ky = ky0; ky < ky1; ++ky)
      for (kx = kx0; kx < kx1; ++kx) {
        const __m256i xv = _mm256_add_epi16(
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(x + origin + ky * row_step + kx * col_step + c))),
            offset);
        const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + (ky * k_w + kx) * in_c + c)));
        const __m256i p = _mm256_mullo_epi16(xv, wv);
        s0 = _mm256_add_epi32(s0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(p)));
        s1 = _mm256_add_epi32(s1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(p, 1)));
      }
    _mm256_storeu_si256((__m256i *)(acc + c), s0);
    _mm256_storeu_si256((__m256i *)(acc + c + 8), s1);
  }
  if (c + 8 <= in_c) {
    const __m128i offset8 = _mm_set1_epi16((int16_t)x_offset);
    __m256i s0 = _mm256_setzero_si256();
    for (ky = ky0; ky < ky1; ++ky)
      for (kx = kx0; kx < kx1; ++kx) {
        const __m128i xv = _mm_add_epi16(
            _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(x + origin + ky * row_step + kx * col_step + c))),
            offset8);
        const __m128i wv = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(w + (ky * k_w + kx) * in_c + c)));
        s0 = _mm256_add_epi32(s0, _mm256_cvtepi16_epi32(_mm_mullo_epi16(xv, wv)));
      }
    _mm256_storeu_si256((__m256i *)(acc + c), s0);
    c += 8;
  }
  return c;
}

#if defined(__AVX512F__)
#define TL_GEMM_F32_TILE
/* float: eight rows at a time, one zmm per row */
static inline void tl_gemm_f32_tile(const float *a, int32_t lda, int32_t rows, int32_t kp, const float *block,
                                    float *acc) {
  int32_t r, k, i;
  for (r = 0; r + 8 <= rows; r += 8) {
    const float *ar = a + r * lda;
    __m512 s[8];
    for (i = 0; i < 8; ++i) s[i] = _mm512_setzero_ps();
    for (k = 0; k < kp; ++k) {
      const __m512 wv = _mm512_loadu_ps(block + k * TL_GEMM_NR);
      for (i = 0; i < 8; ++i) s[i] = _mm512_fmadd_ps(_mm512_set1_ps(ar[i * lda + k]), wv, s[i]);
    }
    for (i = 0; i < 8; ++i) _mm512_storeu_ps(acc + (r + i) * TL_GEMM_NR, s[i]);
  }
  for (; r < rows; ++r) {
    const float *ar = a + r * lda;
    __m512 s0 = _mm512_setzero_ps();
    for (k = 0; k < kp; ++k) s0 = _mm512_fmadd_ps(_mm512_set1_ps(ar[k]), _mm512_loadu_ps(block + k * TL_GEMM_NR), s0);
    _mm512_storeu_ps(acc + r * TL_GEMM_NR, s0);
  }
}
#else
/* float, AVX2: the whole of tl_gemm.h's tl_gemm_f32_kernel, six rows by 16 outputs in 12 ymm
 * accumulators (two FMA pipes of 4 cycles' latency need 8 chains at least); the bias (or y's
 * partial sums) added at the end, clamped and stored in place (masked for a block's last outputs) */
#define TL_GEMM_F32_TILE
#define TL_GEMM_F32_KERNEL
#define TL_GEMM_F32_MR 6

/* the end of a tile's row: sums + the bias (init) and the residual's row (res, NULL: none) or y's
 * partial sums, clamped on the last pass, stored (the first `width` of 16) */
static inline void tl_x86_f32_finish(__m256 s0, __m256 s1, const float *init, const float *res, float *y,
                                     int32_t width, int32_t last, float low, float high) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(width), lane);
  const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(width - 8), lane);
  s0 = _mm256_add_ps(s0, init ? _mm256_loadu_ps(init) : _mm256_maskload_ps(y, m0));
  s1 = _mm256_add_ps(s1, init ? _mm256_loadu_ps(init + 8) : _mm256_maskload_ps(y + 8, m1));
  if (init && res) {
    s0 = _mm256_add_ps(s0, width == TL_GEMM_NR ? _mm256_loadu_ps(res) : _mm256_maskload_ps(res, m0));
    s1 = _mm256_add_ps(s1, width == TL_GEMM_NR ? _mm256_loadu_ps(res + 8) : _mm256_maskload_ps(res + 8, m1));
  }
  if (last) {
    const __m256 lo = _mm256_set1_ps(low), hi = _mm256_set1_ps(high);
    s0 = _mm256_min_ps(hi, _mm256_max_ps(lo, s0)); /* NaN-keeping: the second operand wins on a NaN */
    s1 = _mm256_min_ps(hi, _mm256_max_ps(lo, s1));
  }
  if (width == TL_GEMM_NR) {
    _mm256_storeu_ps(y, s0);
    _mm256_storeu_ps(y + 8, s1);
  } else {
    _mm256_maskstore_ps(y, m0, s0);
    _mm256_maskstore_ps(y + 8, m1, s1);
  }
}

#if defined(__GNUC__)
#define TL_X86_NOINLINE __attribute__((noinline))
#define TL_X86_INLINE __attribute__((always_inline)) static inline
#else
#define TL_X86_NOINLINE
#define TL_X86_INLINE static inline
#endif
/* R rows, R at most 5 (a constant once inlined: the accumulators stay in registers) */
TL_X86_INLINE void tl_x86_f32_rows(const float *a, int32_t lda, const int32_t R, int32_t kc, const float *w,
                                   const float *init, const float *res, float *y, int32_t ldy, int32_t width,
                                   int32_t last, float low, float high) {
  __m256 s[5][2];
  int32_t i, k;
  for (i = 0; i < R; ++i) s[i][0] = s[i][1] = _mm256_setzero_ps();
  for (k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_loadu_ps(w + k * TL_GEMM_NR), w1 = _mm256_loadu_ps(w + k * TL_GEMM_NR + 8);
    for (i = 0; i < R; ++i) {
      const __m256 x = _mm256_broadcast_ss(a + i * lda + k);
      s[i][0] = _mm256_fmadd_ps(x, w0, s[i][0]);
      s[i][1] = _mm256_fmadd_ps(x, w1, s[i][1]);
    }
  }
  for (i = 0; i < R; ++i)
    tl_x86_f32_finish(s[i][0], s[i][1], init, res ? res + i * ldy : NULL, y + i * ldy, width, last, low, high);
}

/* six rows, written out and not inlined into the loops calling it: 12 accumulators, 2 rows of
 * weights and a broadcast take the 16 ymm registers, with nothing else live across the loop.
 * The bodies are inlined into two functions each, without and with a residual (res NULL folds
 * away: a GEMM without one runs the same code as before residuals were added) */
#define TL_X86_F32_ROW(i, r0, r1)                                                                      \
  do {                                                                                                 \
    const __m256 x = _mm256_broadcast_ss(a + (i) * lda + k);                                           \
    r0 = _mm256_fmadd_ps(x, w0, r0);                                                                   \
    r1 = _mm256_fmadd_ps(x, w1, r1);                                                                   \
  } while (0)
TL_X86_INLINE void tl_x86_f32_six_body(const float *a, int32_t lda, int32_t kc, const float *w, const float *init,
                                       const float *res, float *y, int32_t ldy, int32_t width, int32_t last,
                                       float low, float high) {
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  __m256 s40 = s00, s41 = s00, s50 = s00, s51 = s00;
  int32_t k;
  for (k = 0; k < kc; ++k) {
    const __m256 w0 = _mm256_loadu_ps(w + k * TL_GEMM_NR), w1 = _mm256_loadu_ps(w + k * TL_GEMM_NR + 8);
    TL_X86_F32_ROW(0, s00, s01);
    TL_X86_F32_ROW(1, s10, s11);
    TL_X86_F32_ROW(2, s20, s21);
    TL_X86_F32_ROW(3, s30, s31);
    TL_X86_F32_ROW(4, s40, s41);
    TL_X86_F32_ROW(5, s50, s51);
  }
  tl_x86_f32_finish(s00, s01, init, res, y, width, last, low, high);
  tl_x86_f32_finish(s10, s11, init, res ? res + ldy : NULL, y + ldy, width, last, low, high);
  tl_x86_f32_finish(s20, s21, init, res ? res + 2 * ldy : NULL, y + 2 * ldy, width, last, low, high);
  tl_x86_f32_finish(s30, s31, init, res ? res + 3 * ldy : NULL, y + 3 * ldy, width, last, low, high);
  tl_x86_f32_finish(s40, s41, init, res ? res + 4 * ldy : NULL, y + 4 * ldy, width, last, low, high);
  tl_x86_f32_finish(s50, s51, init, res ? res + 5 * ldy : NULL, y + 5 * ldy, width, last, low, high);
}
TL_X86_NOINLINE static void tl_x86_f32_six(const float *a, int32_t lda, int32_t kc, const float *w, const float *init,
                                           float *y, int32_t ldy, int32_t width, int32_t last, float low,
                                           float high) {
  tl_x86_f32_six_body(a, lda, kc, w, init, NULL, y, ldy, width, last, low, high);
}
TL_X86_NOINLINE static void tl_x86_f32_six_res(const float *a, int32_t lda, int32_t kc, const float *w,
                                               const float *init, const float *res, float *y, int32_t ldy,
                                               int32_t width, int32_t last, float low, float high) {
  tl_x86_f32_six_body(a, lda, kc, w, init, res, y, ldy, width, last, low, high);
}

/* tl_x86_f32_six over `segs` segments of kc depths, segment t reading a + t * a_step (the rows of
 * a convolution's window in the input, read in place) and w + t * w_step; the bias added and
 * the outputs clamped and stored at the end (tl_gemm.h's tl_conv_direct_f32_range) */
#define TL_GEMM_F32_SEGMENTS
TL_X86_INLINE void tl_x86_f32_six_segments_body(const float *a, int32_t lda, int32_t kc, int32_t segs,
                                                int32_t a_step, const float *w, int32_t w_step, const float *init,
                                                const float *res, float *y, int32_t ldy, int32_t width, float low,
                                                float high) {
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  __m256 s40 = s00, s41 = s00, s50 = s00, s51 = s00;
  int32_t k, t;
  for (t = 0; t < segs; ++t, a += a_step, w += w_step)
    for (k = 0; k < kc; ++k) {
      const __m256 w0 = _mm256_loadu_ps(w + k * TL_GEMM_NR), w1 = _mm256_loadu_ps(w + k * TL_GEMM_NR + 8);
      TL_X86_F32_ROW(0, s00, s01);
      TL_X86_F32_ROW(1, s10, s11);
      TL_X86_F32_ROW(2, s20, s21);
      TL_X86_F32_ROW(3, s30, s31);
      TL_X86_F32_ROW(4, s40, s41);
      TL_X86_F32_ROW(5, s50, s51);
    }
  tl_x86_f32_finish(s00, s01, init, res, y, width, 1, low, high);
  tl_x86_f32_finish(s10, s11, init, res ? res + ldy : NULL, y + ldy, width, 1, low, high);
  tl_x86_f32_finish(s20, s21, init, res ? res + 2 * ldy : NULL, y + 2 * ldy, width, 1, low, high);
  tl_x86_f32_finish(s30, s31, init, res ? res + 3 * ldy : NULL, y + 3 * ldy, width, 1, low, high);
  tl_x86_f32_finish(s40, s41, init, res ? res + 4 * ldy : NULL, y + 4 * ldy, width, 1, low, high);
  tl_x86_f32_finish(s50, s51, init, res ? res + 5 * ldy : NULL, y + 5 * ldy, width, 1, low, high);
}
TL_X86_NOINLINE static void tl_x86_f32_six_segments(const float *a, int32_t lda, int32_t kc, int32_t segs,
                                                    int32_t a_step, const float *w, int32_t w_step,
                                                    const float *init, float *y, int32_t ldy, int32_t width,
                                                    float low, float high) {
  tl_x86_f32_six_segments_body(a, lda, kc, segs, a_step, w, w_step, init, NULL, y, ldy, width, low, high);
}
/* tl_x86_f32_six_segments + res (a residual laid out as y) before the clamp */
TL_X86_NOINLINE static void tl_x86_f32_six_segments_res(const float *a, int32_t lda, int32_t kc, int32_t segs,
                                                        int32_t a_step, const float *w, int32_t w_step,
                                                        const float *init, const float *res, float *y, int32_t ldy,
                                                        int32_t width, float low, float high) {
  tl_x86_f32_six_segments_body(a, lda, kc, segs, a_step, w, w_step, init, res, y, ldy, width, low, high);
}
#undef TL_X86_F32_ROW

/* one row: two chains of sums per half, joined at the end */
static inline void tl_x86_f32_row(const float *a, int32_t kc, const float *w, const float *init, const float *res,
                                  float *y, int32_t width, int32_t last, float low, float high) {
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00;
  int32_t k;
  for (k = 0; k + 2 <= kc; k += 2) {
    const __m256 x0 = _mm256_broadcast_ss(a + k), x1 = _mm256_broadcast_ss(a + k + 1);
    s00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + k * TL_GEMM_NR), s00);
    s01 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + k * TL_GEMM_NR + 8), s01);
    s10 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w + (k + 1) * TL_GEMM_NR), s10);
    s11 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w + (k + 1) * TL_GEMM_NR + 8), s11);
  }
  if (k < kc) {
    const __m256 x0 = _mm256_broadcast_ss(a + k);
    s00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + k * TL_GEMM_NR), s00);
    s01 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + k * TL_GEMM_NR + 8), s01);
  }
  tl_x86_f32_finish(_mm256_add_ps(s00, s10), _mm256_add_ps(s01, s11), init, res, y, width, last, low, high);
}

TL_X86_INLINE void tl_x86_f32_tile(const float *a, int32_t lda, int32_t rows, int32_t kc, const float *w,
                                   const float *init, const float *res, float *y, int32_t ldy, int32_t width,
                                   int32_t last, float low, float high) {
  /* a case per row count: each inlines tl_x86_f32_rows with a constant R */
  switch (rows) {
    case 6:
      if (res)
        tl_x86_f32_six_res(a, lda, kc, w, init, res, y, ldy, width, last, low, high);
      else
        tl_x86_f32_six(a, lda, kc, w, init, y, ldy, width, last, low, high);
      break;
    case 5:
      tl_x86_f32_rows(a, lda, 5, kc, w, init, res, y, ldy, width, last, low, high);
      break;
    case 4:
      tl_x86_f32_rows(a, lda, 4, kc, w, init, res, y, ldy, width, last, low, high);
      break;
    case 3:
      tl_x86_f32_rows(a, lda, 3, kc, w, init, res, y, ldy, width, last, low, high);
      break;
    case 2:
      tl_x86_f32_rows(a, lda, 2, kc, w, init, res, y, ldy, width, last, low, high);
      break;
    default:
      tl_x86_f32_rows(a, lda, 1, kc, w, init, res, y, ldy, width, last, low, high);
  }
}

static inline void tl_gemm_f32_kernel(const float *a, int32_t lda, int32_t rows, int32_t kc, const float *w,
                                      const float *init, const float *res, float *y, int32_t ldy, int32_t width,
                                      int32_t last, float low, float high) {
  /* without a residual, tiles of fewer rows inlined with res NULL: the code of a plain GEMM */
  if (res)
    tl_x86_f32_tile(a, lda, rows, kc, w, init, res, y, ldy, width, last, low, high);
  else
    tl_x86_f32_tile(a, lda, rows, kc, w, init, NULL, y, ldy, width, last, low, high);
}

/* a GEMM of a single row (a dense layer's): tl_x86_f32_row, two chains of sums per half (a tile
 * of one row among others sums in the order of the others, so that the split of rows across
 * threads does not change a result) */
#define TL_GEMM_F32_SINGLE
static inline void tl_gemm_f32_single(const float *a, int32_t kc, const float *w, const float *init,
                                      const float *res, float *y, int32_t width, int32_t last, float low,
                                      float high) {
  tl_x86_f32_row(a, kc, w, init, res, y, width, last, low, high);
}
#endif

#endif
#endif
