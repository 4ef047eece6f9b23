/* tl_gemm_neon.h: tl_gemm.h's micro-kernels for AArch64 NEON, chosen by the compiler's target
 * macros.
 *
 * int8, one block of 16 outputs, per group of 4 depths (output j's weights in bytes 4j .. 4j + 3):
 *   with the dot-product extension (__ARM_FEATURE_DOTPROD): SDOT of four outputs' weights by the
 *   row's 4 activations repeated, signed x signed, four rows at a time;
 *   without it: SMULL of two outputs' weights by the activations (int8 products fit int16) and
 *   SADALP into two partial sums per output, added pairwise at the end.
 * float: rows of 16 floats times an activation lane, FMLA, four rows at a time. */
#ifndef TL_GEMM_NEON_H
#define TL_GEMM_NEON_H
#if defined(__aarch64__) && defined(__ARM_NEON)

#include <arm_neon.h>

#define TL_GEMM_S8_TILE
#define TL_GEMM_F32_TILE

static inline int32_t tl_neon_word(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

#if defined(__ARM_FEATURE_DOTPROD)
static inline void tl_gemm_s8_tile(const int8_t *col, int32_t rows, int32_t kp, const int8_t *block, int32_t *acc) {
  const int8_t *w = block + 4 * TL_GEMM_NR;
  const int32_t groups = kp / 4;
  int32_t r, g, i, j;
  for (r = 0; r < rows; r += 4) {
    const int8_t *a[4];
    int32x4_t s[4][4];
    for (i = 0; i < 4; ++i) {
      a[i] = col + (r + i < rows ? r + i : r) * kp;
      for (j = 0; j < 4; ++j) s[i][j] = vdupq_n_s32(0);
    }
    for (g = 0; g < groups; ++g) {
      const int8x16_t w0 = vld1q_s8(w + 64 * g), w1 = vld1q_s8(w + 64 * g + 16);
      const int8x16_t w2 = vld1q_s8(w + 64 * g + 32), w3 = vld1q_s8(w + 64 * g + 48);
      for (i = 0; i < 4; ++i) {
        const int8x16_t x = vreinterpretq_s8_s32(vdupq_n_s32(tl_neon_word(a[i] + 4 * g)));
        s[i][0] = vdotq_s32(s[i][0], w0, x);
        s[i][1] = vdotq_s32(s[i][1], w1, x);
        s[i][2] = vdotq_s32(s[i][2], w2, x);
        s[i][3] = vdotq_s32(s[i][3], w3, x);
      }
    }
    for (i = 0; i < 4 && r + i < rows; ++i)
      for (j = 0; j < 4; ++j) vst1q_s32(acc + (r + i) * TL_GEMM_NR + 4 * j, s[i][j]);
  }
}
#else
static inline void tl_gemm_s8_tile(const int8_t *col, int32_t rows, int32_t kp, const int8_t *block, int32_t *acc) {
  const int8_t *w = block + 4 * TL_GEMM_NR;
  const int32_t groups = kp / 4;
  int32_t r, g, i, j;
  for (r = 0; r < rows; r += 2) {
    const int8_t *a[2];
    int32x4_t s[2][8];
    a[0] = col + r * kp;
    a[1] = col + (r + 1 < rows ? r + 1 : r) * kp;
    for (i = 0; i < 2; ++i)
      for (j = 0; j < 8; ++j) s[i][j] = vdupq_n_s32(0);
    for (g = 0; g < groups; ++g) {
      for (i = 0; i < 2; ++i) {
        const int8x8_t x = vreinterpret_s8_s32(vdup_n_s32(tl_neon_word(a[i] + 4 * g)));
        for (j = 0; j < 8; ++j) s[i][j] = vpadalq_s16(s[i][j], vmull_s8(vld1_s8(w + 64 * g + 8 * j), x));
      }
    }
    for (i = 0; i < 2 && r + i < rows; ++i)
      for (j = 0; j < 4; ++j) vst1q_s32(acc + (r + i) * TL_GEMM_NR + 4 * j, vpaddq_s32(s[i][2 * j], s[i][2 * j + 1]));
  }
}
#endif

static inline void tl_gemm_f32_tile(const float *col, int32_t lda, int32_t rows, int32_t kp, const float *block,
                                    float *acc) {
  int32_t r, k, i, j;
  for (r = 0; r < rows; r += 4) {
    const float *a[4];
    float32x4_t s[4][4];
    for (i = 0; i < 4; ++i) {
      a[i] = col + (r + i < rows ? r + i : r) * lda;
      for (j = 0; j < 4; ++j) s[i][j] = vdupq_n_f32(0.0f);
    }
    for (k = 0; k < kp; ++k) {
      const float *wk = block + k * TL_GEMM_NR;
      const float32x4_t w0 = vld1q_f32(wk), w1 = vld1q_f32(wk + 4), w2 = vld1q_f32(wk + 8), w3 = vld1q_f32(wk + 12);
      for (i = 0; i < 4; ++i) {
        const float x = a[i][k];
        s[i][0] = vfmaq_n_f32(s[i][0], w0, x);
        s[i][1] = vfmaq_n_f32(s[i][1], w1, x);
        s[i][2] = vfmaq_n_f32(s[i][2], w2, x);
        s[i][3] = vfmaq_n_f32(s[i][3], w3, x);
      }
    }
    for (i = 0; i < 4 && r + i < rows; ++i)
      for (j = 0; j < 4; ++j) vst1q_f32(acc + (r + i) * TL_GEMM_NR + 4 * j, s[i][j]);
  }
}

#endif
#endif
