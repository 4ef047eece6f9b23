/* tl_gemm.h: the host's int8 and float convolutions and dense layers as GEMMs over weights packed
 * on the host in the micro-kernels' order (compile/ops/host_gemm.py packs them).
 *
 * int8: rows of the left operand (pixels of a convolution, im2col'ed; rows of a dense layer) are
 * copied TL_GEMM_BLOCK at a time into `col` (arena scratch), zero-padded to `kp` values, then
 * multiplied by one block of 16 output channels after another. float: the rows of a dense layer or
 * 1x1 convolution are read in place, a convolution's are im2col'ed; per panel of up to
 * TL_GEMM_F32_ROWS rows and pass over TL_GEMM_F32_KC depths (the panel's slice of the windows
 * im2col'ed, when deeper than one pass), every block of 16 outputs runs over the panel, the
 * micro-kernel tl_gemm_f32_kernel taking TL_GEMM_F32_MR rows at a time (tl_gemm_f32_pass); a
 * convolution whose output overlaps its input im2cols `chunk` whole windows at a time
 * (tl_gemm_f32_rows: per block of outputs, per pass). The blocks:
 *   int8:  a block is 16 int32 (128 * the sum of each output's weights, for the unsigned
 *          dot products of VNNI), then kp / 4 groups of 64 bytes: per output j, its weights
 *          k .. k + 3 (the vpdpbusd / sdot order);
 *   float: a block is kp rows of 16 floats.
 * The micro-kernel of a block (tl_gemm_s8_tile / tl_gemm_f32_tile) is chosen at build time from
 * the compiler's target macros: tl_gemm_x86.h (AVX2, AVX-512, VNNI), tl_gemm_neon.h (AArch64
 * NEON, dot product); the portable loops below are the fallback. On AVX2 without VNNI, int8
 * convolutions run over int16 pairs (tl_gemm_s16.h, `wide` non-NULL) and float k x k ones read
 * their windows in place where they can (tl_gemm_direct.h); the `_pitched` float kernels write a
 * pixel every `ldy` floats (their channels of a Concat's output, in place). The input zero point is
 * folded into the bias on the host and padding taps hold the zero point, so they add nothing.
 * int32 sums wrap modulo 2^32 as TFLite's do; the requantization is tl_mbqm per output.
 *
 * A block's inputs are all copied before its outputs are written, and output pixel p is written
 * after pixel p's inputs are read: the memory planner's overlaps of outputs with dying inputs
 * (row_lag, pixel_lag) hold (the float panels, which write partial sums before reading later
 * depths, run only on outputs apart from their inputs). */
#ifndef TL_GEMM_H
#define TL_GEMM_H

#include <string.h>

#include "tl_common.h"
#include "tl_conv.h"
#include "tl_threads.h"

#define TL_GEMM_BLOCK 8
#define TL_GEMM_NR 16
#define TL_GEMM_LOCAL 64
#define TL_GEMM_F32_KC 256
#define TL_GEMM_F32_ROWS 192
/* bytes of weights above which a deep float convolution runs in panels (below, reading them again
 * for each chunk of windows measured no slower) */
#define TL_GEMM_F32_PANEL_WEIGHTS (1024L * 1024)
/* bytes of weights from which a float GEMM prefetches each block of weights ahead of its use */
#define TL_GEMM_F32_PREFETCH (256L * 1024)
/* a pass over few depths (at most 32; 64 adding a residual) takes up to TL_GEMM_F32_GROUP blocks
 * of outputs per tile of rows, their weights within TL_GEMM_F32_L1 bytes (the tile's rows stay in
 * L1 across the blocks, its outputs and residual go row after row; deeper passes without a
 * residual measured no faster so) */
#define TL_GEMM_F32_L1 16384
#define TL_GEMM_F32_GROUP 8

/* each defines TL_GEMM_S8_TILE and TL_GEMM_F32_TILE when its instructions are there */
#include "tl_gemm_x86.h"
#include "tl_gemm_neon.h"

#ifndef TL_GEMM_S8_TILE
/* acc[r][j] = sum_k col[r][k] * w[j][k] over `rows` rows of a block and its 16 outputs */
static inline void tl_gemm_s8_tile(const int8_t *col, int32_t rows, int32_t kp, const int8_t *block, int32_t *acc) {
  const int8_t *w = block + 4 * TL_GEMM_NR;
  int32_t r, g, j, i;
  for (r = 0; r < rows; ++r) {
    uint32_t sums[TL_GEMM_NR] = {0};
    const int8_t *a = col + r * kp;
    for (g = 0; g < kp / 4; ++g)
      for (j = 0; j < TL_GEMM_NR; ++j)
        for (i = 0; i < 4; ++i) sums[j] += (uint32_t)((int32_t)a[4 * g + i] * w[(g * TL_GEMM_NR + j) * 4 + i]);
    for (j = 0; j < TL_GEMM_NR; ++j) acc[r * TL_GEMM_NR + j] = (int32_t)sums[j];
  }
}
#endif

#ifndef TL_GEMM_F32_TILE
/* acc[r][j] = sum_k a[r][k] * block[k][j] over `rows` rows of a (row stride lda) and a block's 16 outputs */
static inline void tl_gemm_f32_tile(const float *a, int32_t lda, int32_t rows, int32_t kp, const float *block,
                                    float *acc) {
  int32_t r, k, j;
  for (r = 0; r < rows; ++r) {
    float sums[TL_GEMM_NR] = {0};
    const float *ar = a + r * lda;
    for (k = 0; k < kp; ++k)
      for (j = 0; j < TL_GEMM_NR; ++j) sums[j] += ar[k] * block[k * TL_GEMM_NR + j];
    for (j = 0; j < TL_GEMM_NR; ++j) acc[r * TL_GEMM_NR + j] = sums[j];
  }
}
#endif

#ifndef TL_GEMM_F32_KERNEL
#define TL_GEMM_F32_MR 8
/* y[r][j] (row stride ldy) = init[j] (the bias, on the first pass over the depth) + res[r][j] (a
 * residual added there, rows ldy apart as y's; NULL: none) or y[r][j] (init NULL: the later
 * passes) + the sums over kc depths of `rows` (at most TL_GEMM_F32_MR) rows of a (row stride lda)
 * by a block's 16 outputs (w [kc][16]), clamped to [low, high] on the `last` pass; the first
 * `width` outputs. res[r][j] is read before y[r][j] is written: res may be y */
static inline void tl_gemm_f32_kernel(const float *a, int32_t lda, int32_t rows, int32_t kc, const float *w,
                                      const float *init, const float *res, float *y, int32_t ldy, int32_t width,
                                      int32_t last, float low, float high) {
  float acc[TL_GEMM_F32_MR * TL_GEMM_NR];
  int32_t r, j;
  tl_gemm_f32_tile(a, lda, rows, kc, w, acc);
  for (r = 0; r < rows; ++r)
    for (j = 0; j < width; ++j) {
      float *out = y + r * ldy + j;
      float v = acc[r * TL_GEMM_NR + j] + (init ? init[j] : *out);
      if (init && res) v += res[r * ldy + j];
      *out = last ? tl_clamp_f32(v, low, high) : v;
    }
}
#endif

/* memcpy for the short runs of im2col: fixed-size pieces the compiler inlines, not a call */
static inline void tl_copy_bytes(void *to, const void *from, int32_t bytes) {
  unsigned char *d = (unsigned char *)to;
  const unsigned char *s = (const unsigned char *)from;
  int32_t i = 0;
  for (; i + 16 <= bytes; i += 16) memcpy(d + i, s + i, 16);
  for (; i + 4 <= bytes; i += 4) memcpy(d + i, s + i, 4);
  for (; i < bytes; ++i) d[i] = s[i];
}

/* the pixels first .. first + count - 1 (over batches, rows, columns) as rows of kp values of
 * their windows, [ky][kx][c], taps outside the input set to `pad` */
#define TL_IM2COL(name, type)                                                                                    \
  static inline void name(type *col, const type *x, int32_t first, int32_t count, int32_t in_h, int32_t in_w,   \
                          int32_t in_c, int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w, int32_t stride_h, \
                          int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top, int32_t pad_left,      \
                          type pad, int32_t kp) {                                                                \
    int32_t i, ky, kx, c, ox = first % out_w, oy = (first / out_w) % out_h, b = first / (out_w * out_h);         \
    for (i = 0; i < count; ++i) {                                                                                \
      const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;                              \
      type *row = col + i * kp;                                                                                  \
      for (ky = 0; ky < k_h; ++ky) {                                                                             \
        const int32_t iy = top + ky * dil_h;                                                                     \
        if (iy >= 0 && iy < in_h && dil_w == 1 && left >= 0 && left + k_w <= in_w) {                            \
          tl_copy_bytes(row + ky * k_w * in_c, x + ((b * in_h + iy) * in_w + left) * in_c,                       \
                        k_w * in_c * (int32_t)sizeof(type));                                                     \
          continue;                                                                                              \
        }                                                                                                        \
        for (kx = 0; kx < k_w; ++kx) {                                                                           \
          const int32_t ix = left + kx * dil_w;                                                                  \
          type *dst = row + (ky * k_w + kx) * in_c;                                                              \
          if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w)                                                      \
            tl_copy_bytes(dst, x + ((b * in_h + iy) * in_w + ix) * in_c, in_c * (int32_t)sizeof(type));       \
          else                                                                                                   \
            for (c = 0; c < in_c; ++c) dst[c] = pad;                                                             \
        }                                                                                                        \
      }                                                                                                          \
      for (c = k_h * k_w * in_c; c < kp; ++c) row[c] = 0;                                                        \
      if (++ox == out_w) {                                                                                       \
        ox = 0;                                                                                                  \
        if (++oy == out_h) {                                                                                     \
          oy = 0;                                                                                                \
          ++b;                                                                                                   \
        }                                                                                                        \
      }                                                                                                          \
    }                                                                                                            \
  }
TL_IM2COL(tl_im2col_s8, int8_t)
TL_IM2COL(tl_im2col_f32, float)

/* depths k .. k + kc - 1 of the windows of the pixels first .. first + count - 1 (as
 * tl_im2col_f32's rows, padding 0) as rows of kc floats */
static inline void tl_im2col_f32_slice(float *col, const float *x, int32_t first, int32_t count, int32_t in_h,
                                       int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w, int32_t k_w,
                                       int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
                                       int32_t pad_top, int32_t pad_left, int32_t k, int32_t kc) {
  int32_t i, ox = first % out_w, oy = (first / out_w) % out_h, b = first / (out_w * out_h);
  for (i = 0; i < count; ++i) {
    const int32_t top = oy * stride_h - pad_top, left = ox * stride_w - pad_left;
    float *row = col + i * kc;
    int32_t d = 0, tap = k / in_c, c = k % in_c;
    while (d < kc) {
      const int32_t run = in_c - c < kc - d ? in_c - c : kc - d;
      const int32_t iy = top + tap / k_w * dil_h, ix = left + tap % k_w * dil_w;
      if (iy >= 0 && iy < in_h && ix >= 0 && ix < in_w)
        tl_copy_bytes(row + d, x + ((b * in_h + iy) * in_w + ix) * in_c + c, run * (int32_t)sizeof(float));
      else
        memset(row + d, 0, (size_t)run * sizeof(float));
      d += run;
      ++tap;
      c = 0;
    }
    if (++ox == out_w) {
      ox = 0;
      if (++oy == out_h) {
        oy = 0;
        ++b;
      }
    }
  }
}

/* requantized int8 outputs of one block of rows: y[r][u] for the units of the blocks */
/* (TFLite's reference flavour: multiplier and shift NULL, the rescale in double precision by scale) */
static inline void tl_gemm_s8_rows(const int8_t *col, int32_t rows, int32_t kp, const int8_t *packed,
                                   const int32_t *bias, int8_t *y, int32_t units, const int32_t *multiplier,
                                   const int32_t *shift, const double *scale, int32_t per_channel, int32_t zero,
                                   int32_t low, int32_t high) {
  int32_t acc[TL_GEMM_BLOCK * TL_GEMM_NR];
  const int32_t block_bytes = 4 * TL_GEMM_NR + kp * TL_GEMM_NR;
  int32_t n, r, j;
#ifdef TL_GEMM_S8_STORE
  if (!scale) {
    int32_t b16[TL_GEMM_NR], m16[TL_GEMM_NR], left[TL_GEMM_NR], right[TL_GEMM_NR];
    for (n = 0; n < units; n += TL_GEMM_NR) {
      const int32_t width = units - n < TL_GEMM_NR ? units - n : TL_GEMM_NR;
      for (j = 0; j < TL_GEMM_NR; ++j) {
        const int32_t u = n + (j < width ? j : 0), s = shift[u * per_channel];
        b16[j] = bias[u];
        m16[j] = multiplier[u * per_channel];
        left[j] = s > 0 ? s : 0;
        right[j] = s > 0 ? 0 : -s;
      }
      tl_gemm_s8_tile(col, rows, kp, packed + (n / TL_GEMM_NR) * block_bytes, acc);
      for (r = 0; r < rows; ++r)
        tl_gemm_s8_store(acc + r * TL_GEMM_NR, b16, m16, left, right, zero, low, high, y + r * units + n, width);
    }
    return;
  }
#endif
  for (n = 0; n < units; n += TL_GEMM_NR) {
    const int32_t width = units - n < TL_GEMM_NR ? units - n : TL_GEMM_NR;
    tl_gemm_s8_tile(col, rows, kp, packed + (n / TL_GEMM_NR) * block_bytes, acc);
    for (r = 0; r < rows; ++r) {
#ifdef TL_GEMM_S8_STORE_SCALED
      if (scale && width == TL_GEMM_NR) {
        tl_gemm_s8_store_scaled(acc + r * TL_GEMM_NR, bias + n, scale + n * per_channel, per_channel, zero, low, high,
                                y + r * units + n);
        continue;
      }
#endif
      for (j = 0; j < width; ++j) {
        const int32_t u = n + j;
        const int32_t sum = (int32_t)((uint32_t)acc[r * TL_GEMM_NR + j] + (uint32_t)bias[u]);
        if (scale) {
          const int64_t v = tl_round_half_away((double)sum * scale[u * per_channel]) + zero;
          y[r * units + u] = (int8_t)(v < low ? low : (v > high ? high : v));
        } else {
          const int32_t v = tl_mbqm(sum, multiplier[u * per_channel], (int)shift[u * per_channel]);
          y[r * units + u] = (int8_t)tl_clamp_i32(v + zero, low, high);
        }
      }
    }
  }
}

/* the rows the micro-kernel takes next of `left`: as many tiles as TL_GEMM_F32_MR rows need, of
 * near-equal sizes (49 = 4 * 6 + 5 * 5, not 8 * 6 + 1: a tile of one to three rows leaves FMA
 * pipes idle) */
static inline int32_t tl_gemm_f32_take(int32_t left) {
  const int32_t tiles = (left + TL_GEMM_F32_MR - 1) / TL_GEMM_F32_MR;
  return (left + tiles - 1) / tiles;
}

#if defined(__GNUC__)
/* lines first .. first + count - 1 (at most kc) of 64 bytes of the next block's kc depths of
 * weights, prefetched while this block runs (each tile a share): a block's first tiles do not wait
 * for its weights to come from memory */
static inline void tl_gemm_f32_prefetch(const float *next, int32_t first, int32_t count, int32_t kc) {
  int32_t line;
  for (line = first; line < first + count && line < kc; ++line) __builtin_prefetch((const char *)next + 64 * line);
}
#endif

/* tl_gemm_f32_pass over few depths: per tile of rows, `group` blocks of outputs one after the
 * other (their kc depths of weights within TL_GEMM_F32_L1 bytes stay in L1, the tile's rows are read
 * from L1, its outputs written row after row) */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void tl_gemm_f32_groups(const float *a, int32_t lda, int32_t rows, int32_t k, int32_t kc, int32_t depth,
                               const float *packed, const float *bias, const float *res, float *y, int32_t ldy,
                               int32_t units, float low, float high, int32_t group) {
  float init[TL_GEMM_F32_GROUP * TL_GEMM_NR];
  int32_t n0, n, r, j, take;
  for (n0 = 0; n0 < units; n0 += group * TL_GEMM_NR) {
    const int32_t n1 = units - n0 < group * TL_GEMM_NR ? units : n0 + group * TL_GEMM_NR;
    if (!k)
      for (j = 0; j < (n1 - n0 + TL_GEMM_NR - 1) / TL_GEMM_NR * TL_GEMM_NR; ++j)
        init[j] = bias && n0 + j < n1 ? bias[n0 + j] : 0.0f;
    for (r = 0; r < rows; r += take) {
      take = tl_gemm_f32_take(rows - r);
#if defined(__GNUC__)
      if (res && !k) /* the residual's rows come from memory while the tile's sums run */
        for (j = 0; j < take; ++j)
          for (n = n0; n < n1; n += TL_GEMM_NR) __builtin_prefetch(res + (r + j) * ldy + n);
#endif
      for (n = n0; n < n1; n += TL_GEMM_NR)
        tl_gemm_f32_kernel(a + r * lda, lda, take, kc, packed + (size_t)n * (size_t)depth + (size_t)k * TL_GEMM_NR,
                           k ? NULL : init + (n - n0), k || !res ? NULL : res + r * ldy + n, y + r * ldy + n, ldy,
                           n1 - n < TL_GEMM_NR ? n1 - n : TL_GEMM_NR, k + kc >= depth, low, high);
    }
  }
}

/* one pass of tl_gemm_f32_rows turned inside out: depths k .. k + kc - 1 (of `depth`) of `rows`
 * rows of a (row stride lda; a points at depth k) by every block of 16 outputs, the sums added to
 * y's (the bias on the first pass, clamped on the last). A GEMM runs its passes one after the
 * other over a panel of rows (the Goto / BLIS order): the panel's slice of kc depths stays in L2
 * while every block of weights goes by once per panel, not once per few rows (shallow passes take
 * groups of blocks whose weights stay in L1 per tile of rows: TL_GEMM_F32_GROUP); each sum runs in
 * the same order as in tl_gemm_f32_rows. `single`: the GEMM has this one row (a dense layer's),
 * taken by tl_gemm_f32_single where there is one. res (NULL: none): a residual laid out as y,
 * added with the bias on the first pass (tl_gemm_f32_kernel; it may be y itself) */
static inline void tl_gemm_f32_pass(const float *a, int32_t lda, int32_t rows, int32_t k, int32_t kc, int32_t depth,
                                    const float *packed, const float *bias, const float *res, float *y, int32_t ldy,
                                    int32_t units, float low, float high, int32_t single) {
  float init[TL_GEMM_NR];
  /* weights that stay in cache from one use to the next need no prefetch (nor its cost per tile) */
  const int32_t share =
      (int64_t)units * depth * 4 > TL_GEMM_F32_PREFETCH ? (kc * TL_GEMM_F32_MR + rows - 1) / rows : 0;
  int32_t n, r, j, take;
#ifndef TL_GEMM_F32_SINGLE
  (void)single;
#endif
#if !defined(__GNUC__)
  (void)share;
#endif
  if (units > TL_GEMM_NR && !single &&
      (res && !k ? 4 : TL_GEMM_F32_GROUP) * kc * TL_GEMM_NR * 4 <= TL_GEMM_F32_L1) {
    const int32_t fit = TL_GEMM_F32_L1 / (kc * TL_GEMM_NR * 4);
    tl_gemm_f32_groups(a, lda, rows, k, kc, depth, packed, bias, res, y, ldy, units, low, high,
                       fit < TL_GEMM_F32_GROUP ? fit : TL_GEMM_F32_GROUP);
    return;
  }
  for (n = 0; n < units; n += TL_GEMM_NR) {
    const int32_t width = units - n < TL_GEMM_NR ? units - n : TL_GEMM_NR;
    const float *block = packed + (size_t)n * (size_t)depth + (size_t)k * TL_GEMM_NR;
    if (!k)
      for (j = 0; j < TL_GEMM_NR; ++j) init[j] = bias && j < width ? bias[n + j] : 0.0f;
    for (r = 0; r < rows; r += take) {
      take = tl_gemm_f32_take(rows - r);
#if defined(__GNUC__)
      if (share && n + TL_GEMM_NR < units)
        tl_gemm_f32_prefetch(block + (size_t)TL_GEMM_NR * (size_t)depth, r / TL_GEMM_F32_MR * share, share, kc);
      if (res && !k) /* the residual's rows come from memory while the tile's sums run */
        for (j = 0; j < take; ++j) __builtin_prefetch(res + (r + j) * ldy + n);
#endif
#ifdef TL_GEMM_F32_SINGLE
      if (single) {
        tl_gemm_f32_single(a, kc, block, k ? NULL : init, k || !res ? NULL : res + n, y + n, width,
                           k + kc >= depth, low, high);
        continue;
      }
#endif
      tl_gemm_f32_kernel(a + r * lda, lda, take, kc, block, k ? NULL : init, k || !res ? NULL : res + r * ldy + n,
                         y + r * ldy + n, ldy, width, k + kc >= depth, low, high);
    }
  }
}

/* y[m][u] (row stride ldy) = clamp(bias[u] + sum_d a[m][d] * w[u][d] + res[m][u]) over `rows` rows
 * of a (row stride lda; res laid out as y, may be y; NULL: no residual): per block of 16 outputs,
 * its passes over TL_GEMM_F32_KC depths (16 KB of weights, kept in L1) one after the other (tl_gemm_f32_pass over that block alone: outputs of one block
 * written before the next block's inputs are read, as the planner's overlaps of chunked
 * convolutions need); bias may be NULL. A lone row (a border column of tl_gemm_direct.h, a chunk
 * of one window) takes tl_gemm_f32_single where there is one: the callers' row ranges start at
 * whole chunks or output rows, so it is lone on any thread count */
static inline void tl_gemm_f32_rows(const float *a, int32_t lda, int32_t rows, int32_t depth, const float *packed,
                                    const float *bias, const float *res, float *y, int32_t ldy, int32_t units,
                                    float low, float high) {
  int32_t n, k;
  for (n = 0; n < units; n += TL_GEMM_NR)
    for (k = 0; k < depth; k += TL_GEMM_F32_KC)
      tl_gemm_f32_pass(a + k, lda, rows, k, depth - k < TL_GEMM_F32_KC ? depth - k : TL_GEMM_F32_KC, depth,
                       packed + (size_t)n * (size_t)depth, bias ? bias + n : NULL, res ? res + n : NULL, y + n, ldy,
                       units - n < TL_GEMM_NR ? units - n : TL_GEMM_NR, low, high, rows == 1);
}

/* the first row of part i of the rows [begin, end) cut in `parts` near-equal panels */
static inline int32_t tl_gemm_f32_part(int32_t begin, int32_t end, int32_t parts, int32_t i) {
  return begin + (int32_t)((int64_t)(end - begin) * i / parts);
}

/* The kernels below take the thread count of the context last: in the host build (TL_HOST_THREADS)
 * a layer of enough work whose output does not overlap its input is split by rows across that
 * many threads (tl_threads.h); each row range runs the same code as one thread would. */

typedef struct {
  const int8_t *x, *packed;
  const int32_t *bias, *multiplier, *shift;
  const double *scale;
  int8_t *y;
  const int16_t *wide;
  int32_t depth, kp, units, per_channel, zero, low, high, copy;
} tl_dense_s8_args;

/* the geometry of an NHWC convolution (one group) */
typedef struct {
  int32_t in_h, in_w, in_c, out_h, out_w, filters, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
} tl_conv_geometry;

typedef struct {
  const int8_t *x, *packed;
  const int32_t *bias, *multiplier, *shift;
  int8_t *y;
  const int16_t *wide;
  tl_conv_geometry g;
  int32_t x_zero, kp, per_channel, zero, low, high;
} tl_conv_s8_args;

#include "tl_gemm_s16.h"

static inline void tl_dense_gemm_s8_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_dense_s8_args *a = (const tl_dense_s8_args *)args;
  int8_t *col = (int8_t *)scratch;
  int32_t m, i;
  for (m = begin; m < end; m += TL_GEMM_BLOCK) {
    const int32_t count = end - m < TL_GEMM_BLOCK ? end - m : TL_GEMM_BLOCK;
    const int8_t *block = a->x + m * a->depth;
    if (a->copy) {
      for (i = 0; i < count; ++i) {
        memcpy(col + i * a->kp, a->x + (m + i) * a->depth, (size_t)a->depth);
        memset(col + i * a->kp + a->depth, 0, (size_t)(a->kp - a->depth));
      }
      block = col;
    }
    tl_gemm_s8_rows(block, count, a->kp, a->packed, a->bias, a->y + m * a->units, a->units, a->multiplier, a->shift,
                    a->scale, a->per_channel, a->zero, a->low, a->high);
  }
}

/* y[m][u] = requant(bias[u] + sum_d x[m][d] * w[u][d]) over `rows` rows: dense layers and 1x1
 * convolutions. The rows are copied into col (TL_GEMM_BLOCK * kp bytes of scratch), or read in
 * place when col is NULL (no output overlapping the input), through a buffer on the stack when
 * depth is not a multiple of 4 (kp at most TL_GEMM_LOCAL then) */
static inline void tl_dense_gemm_s8(const int8_t *x, const int8_t *packed, const int32_t *bias, int8_t *y,
                                    int8_t *col, int32_t rows, int32_t depth, int32_t kp, int32_t units,
                                    const int32_t *multiplier, const int32_t *shift, const double *scale,
                                    int32_t per_channel, int32_t zero, int32_t low, int32_t high,
                                    const int16_t *wide, tl_threads *threads) {
  int8_t local[TL_GEMM_BLOCK * TL_GEMM_LOCAL];
  tl_dense_s8_args a;
  a.x = x;
  a.packed = packed;
  a.bias = bias;
  a.multiplier = multiplier;
  a.shift = shift;
  a.scale = scale;
  a.y = y;
  a.depth = depth;
  a.kp = kp;
  a.units = units;
  a.per_channel = per_channel;
  a.zero = zero;
  a.low = low;
  a.high = high;
  a.copy = col != NULL || kp != depth;
  if (!col) col = local;
  if (!tl_disjoint(x, (size_t)rows * (size_t)depth, y, (size_t)rows * (size_t)units)) threads = NULL;
#ifdef TL_GEMM_S16_TILE
  if (wide && col != local && !scale) {
    a.wide = wide;
    tl_parallel_rows(tl_dense_gemm_s16_range, &a, rows, TL_GEMM_S16_ROWS, threads, col,
                     (size_t)TL_GEMM_S16_ROWS * (size_t)kp * 2u, (int64_t)rows * kp * units);
    return;
  }
#endif
  (void)wide;
  tl_parallel_rows(tl_dense_gemm_s8_range, &a, rows, TL_GEMM_BLOCK, threads, col, (size_t)(TL_GEMM_BLOCK * kp),
                   (int64_t)rows * kp * units);
}

typedef struct {
  const float *x, *packed, *bias, *res;
  float *y;
  int32_t depth, units, ldy;
  float low, high;
} tl_dense_f32_args;

static inline void tl_dense_gemm_f32_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_dense_f32_args *a = (const tl_dense_f32_args *)args;
  const int32_t parts = (end - begin + TL_GEMM_F32_ROWS - 1) / TL_GEMM_F32_ROWS;
  int32_t i, k;
  (void)scratch;
  /* a range of one row from 0 is the whole GEMM (the threads' ranges before the last are whole blocks) */
  for (i = 0; i < parts; ++i) {
    const int32_t m = tl_gemm_f32_part(begin, end, parts, i), count = tl_gemm_f32_part(begin, end, parts, i + 1) - m;
    for (k = 0; k < a->depth; k += TL_GEMM_F32_KC)
      tl_gemm_f32_pass(a->x + (size_t)m * (size_t)a->depth + k, a->depth, count, k,
                       a->depth - k < TL_GEMM_F32_KC ? a->depth - k : TL_GEMM_F32_KC, a->depth, a->packed, a->bias,
                       a->res ? a->res + (size_t)m * (size_t)a->ldy : NULL, a->y + (size_t)m * (size_t)a->ldy, a->ldy,
                       a->units, a->low, a->high, begin == 0 && end == 1);
  }
}

/* the bytes of `rows` rows of `units` floats `ldy` floats apart */
static inline size_t tl_f32_span(int32_t rows, int32_t units, int32_t ldy) {
  return rows ? ((size_t)(rows - 1) * (size_t)ldy + (size_t)units) * 4u : 0u;
}

/* tl_dense_gemm_f32 with y's rows ldy floats apart and res (NULL: none) added, laid out as y */
static inline void tl_dense_gemm_f32_any(const float *x, const float *packed, const float *bias, const float *res,
                                         float *y, int32_t rows, int32_t depth, int32_t units, int32_t ldy, float low,
                                         float high, tl_threads *threads) {
  tl_dense_f32_args a;
  a.x = x;
  a.packed = packed;
  a.bias = bias;
  a.res = res;
  a.y = y;
  a.depth = depth;
  a.units = units;
  a.ldy = ldy;
  a.low = low;
  a.high = high;
  if (!tl_disjoint(x, (size_t)rows * (size_t)depth * 4u, y, tl_f32_span(rows, units, ldy))) threads = NULL;
  tl_parallel_rows(tl_dense_gemm_f32_range, &a, rows, TL_GEMM_F32_MR, threads, NULL, 0,
                   (int64_t)rows * depth * units);
}

/* tl_dense_gemm_f32 with y's rows ldy floats apart (a slice of the channels of a Concat's output) */
static inline void tl_dense_gemm_f32_pitched(const float *x, const float *packed, const float *bias, float *y,
                                             int32_t rows, int32_t depth, int32_t units, int32_t ldy, float low,
                                             float high, tl_threads *threads) {
  tl_dense_gemm_f32_any(x, packed, bias, NULL, y, rows, depth, units, ldy, low, high, threads);
}

/* tl_dense_gemm_f32 + res[m][u] before the clamp (a residual Add fused into a 1x1 convolution;
 * res may be y: each element is read before it is written, by the same thread) */
static inline void tl_dense_gemm_f32_residual(const float *x, const float *packed, const float *bias, float *y,
                                              const float *res, int32_t rows, int32_t depth, int32_t units, float low,
                                              float high, tl_threads *threads) {
  tl_dense_gemm_f32_any(x, packed, bias, res, y, rows, depth, units, units, low, high, threads);
}

/* y[m][u] = clamp(bias[u] + sum_d x[m][d] * w[u][d]) (dense layers and 1x1 convolutions, x read in
 * place: y must not overlap x); bias may be NULL */
static inline void tl_dense_gemm_f32(const float *x, const float *packed, const float *bias, float *y, int32_t rows,
                                     int32_t depth, int32_t units, float low, float high, tl_threads *threads) {
  tl_dense_gemm_f32_any(x, packed, bias, NULL, y, rows, depth, units, units, low, high, threads);
}

static inline void tl_conv_gemm_s8_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_conv_s8_args *a = (const tl_conv_s8_args *)args;
  const tl_conv_geometry *g = &a->g;
  int8_t *col = (int8_t *)scratch;
  int32_t p;
  for (p = begin; p < end; p += TL_GEMM_BLOCK) {
    const int32_t count = end - p < TL_GEMM_BLOCK ? end - p : TL_GEMM_BLOCK;
    tl_im2col_s8(col, a->x, p, count, g->in_h, g->in_w, g->in_c, g->out_h, g->out_w, g->k_h, g->k_w, g->stride_h,
                 g->stride_w, g->dil_h, g->dil_w, g->pad_top, g->pad_left, (int8_t)a->x_zero, a->kp);
    tl_gemm_s8_rows(col, count, a->kp, a->packed, a->bias, a->y + p * g->filters, g->filters, a->multiplier, a->shift,
                    NULL, a->per_channel, a->zero, a->low, a->high);
  }
}

#define TL_CONV_GEOMETRY(g)                                                                                      \
  do {                                                                                                         \
    (g).in_h = in_h;                                                                                           \
    (g).in_w = in_w;                                                                                           \
    (g).in_c = in_c;                                                                                           \
    (g).out_h = out_h;                                                                                         \
    (g).out_w = out_w;                                                                                         \
    (g).filters = filters;                                                                                     \
    (g).k_h = k_h;                                                                                             \
    (g).k_w = k_w;                                                                                             \
    (g).stride_h = stride_h;                                                                                   \
    (g).stride_w = stride_w;                                                                                   \
    (g).dil_h = dil_h;                                                                                         \
    (g).dil_w = dil_w;                                                                                         \
    (g).pad_top = pad_top;                                                                                     \
    (g).pad_left = pad_left;                                                                                   \
  } while (0)

/* an NHWC convolution (one group) over the pixels of every batch, TL_GEMM_BLOCK at a time */
static inline void tl_conv_gemm_s8(const int8_t *x, const int8_t *packed, const int32_t *bias, int8_t *y,
                                   int8_t *col, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c,
                                   int32_t out_h, int32_t out_w, int32_t filters, int32_t k_h, int32_t k_w,
                                   int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top,
                                   int32_t pad_left, int32_t x_zero, int32_t kp, const int32_t *multiplier,
                                   const int32_t *shift, int32_t per_channel, int32_t zero, int32_t low,
                                   int32_t high, const int16_t *wide, tl_threads *threads) {
  const int32_t pixels = batches * out_h * out_w;
  tl_conv_s8_args a;
  a.x = x;
  a.packed = packed;
  a.bias = bias;
  a.multiplier = multiplier;
  a.shift = shift;
  a.y = y;
  TL_CONV_GEOMETRY(a.g);
  a.x_zero = x_zero;
  a.kp = kp;
  a.per_channel = per_channel;
  a.zero = zero;
  a.low = low;
  a.high = high;
  if (!tl_disjoint(x, (size_t)batches * in_h * in_w * in_c, y, (size_t)pixels * filters)) threads = NULL;
#ifdef TL_GEMM_S16_TILE
  if (wide) {
    a.wide = wide;
    tl_parallel_rows(tl_conv_gemm_s16_range, &a, pixels, TL_GEMM_S16_ROWS, threads, col,
                     (size_t)TL_GEMM_S16_ROWS * (size_t)kp * 2u, (int64_t)pixels * kp * filters);
    return;
  }
#endif
  (void)wide;
  tl_parallel_rows(tl_conv_gemm_s8_range, &a, pixels, TL_GEMM_BLOCK, threads, col, (size_t)(TL_GEMM_BLOCK * kp),
                   (int64_t)pixels * kp * filters);
}

typedef struct {
  const float *x, *packed, *bias, *res;
  float *y;
  tl_conv_geometry g;
  float low, high;
  int32_t chunk, ldy;
} tl_conv_f32_args;

static inline void tl_conv_gemm_f32_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_conv_f32_args *a = (const tl_conv_f32_args *)args;
  const tl_conv_geometry *g = &a->g;
  const int32_t kp = g->k_h * g->k_w * g->in_c;
  float *col = (float *)scratch;
  int32_t p;
  for (p = begin; p < end; p += a->chunk) {
    const int32_t count = end - p < a->chunk ? end - p : a->chunk;
    tl_im2col_f32(col, a->x, p, count, g->in_h, g->in_w, g->in_c, g->out_h, g->out_w, g->k_h, g->k_w, g->stride_h,
                  g->stride_w, g->dil_h, g->dil_w, g->pad_top, g->pad_left, 0.0f, kp);
    tl_gemm_f32_rows(col, kp, count, kp, a->packed, a->bias, a->res ? a->res + p * a->ldy : NULL, a->y + p * a->ldy,
                     a->ldy, g->filters, a->low, a->high);
  }
}

/* the rows of a panel of a convolution whose windows are deeper than TL_GEMM_F32_KC: as many as
 * the scratch for `chunk` whole windows holds slices of TL_GEMM_F32_KC depths, at most TL_GEMM_F32_ROWS */
static inline int32_t tl_conv_f32_panel_rows(int32_t chunk, int32_t kp) {
  const int64_t rows = (int64_t)chunk * kp / TL_GEMM_F32_KC;
  return rows > TL_GEMM_F32_ROWS ? TL_GEMM_F32_ROWS : (int32_t)rows;
}

/* tl_conv_gemm_f32_range for windows deeper than TL_GEMM_F32_KC, more than
 * TL_GEMM_F32_PANEL_WEIGHTS bytes of weights and an output apart from the input: per panel of
 * pixels, per pass over TL_GEMM_F32_KC depths, the panel's slice of the windows im2col'ed
 * (tl_im2col_f32_slice) and multiplied by every block of weights (tl_gemm_f32_pass): the weights
 * are read once per panel, not once per chunk of windows. A panel's outputs are written before its
 * later depths are read: not for outputs overlapping inputs */
static inline void tl_conv_gemm_f32_panels(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_conv_f32_args *a = (const tl_conv_f32_args *)args;
  const tl_conv_geometry *g = &a->g;
  const int32_t kp = g->k_h * g->k_w * g->in_c, most = tl_conv_f32_panel_rows(a->chunk, kp);
  const int32_t parts = (end - begin + most - 1) / most;
  float *col = (float *)scratch;
  int32_t i, k;
  for (i = 0; i < parts; ++i) {
    const int32_t p = tl_gemm_f32_part(begin, end, parts, i), count = tl_gemm_f32_part(begin, end, parts, i + 1) - p;
    for (k = 0; k < kp; k += TL_GEMM_F32_KC) {
      const int32_t kc = kp - k < TL_GEMM_F32_KC ? kp - k : TL_GEMM_F32_KC;
      tl_im2col_f32_slice(col, a->x, p, count, g->in_h, g->in_w, g->in_c, g->out_h, g->out_w, g->k_w, g->stride_h,
                          g->stride_w, g->dil_h, g->dil_w, g->pad_top, g->pad_left, k, kc);
      tl_gemm_f32_pass(col, kc, count, k, kc, kp, a->packed, a->bias, a->res ? a->res + p * a->ldy : NULL,
                       a->y + p * a->ldy, a->ldy, g->filters, a->low, a->high, 0);
    }
  }
}

#include "tl_gemm_direct.h"

/* tl_conv_gemm_f32 with y's pixels ldy floats apart and res (NULL: none) added, laid out as y */
static inline void tl_conv_gemm_f32_any(const float *x, const float *packed, const float *bias, const float *res,
                                        float *y, float *col, int32_t batches, int32_t in_h, int32_t in_w,
                                        int32_t in_c, int32_t out_h, int32_t out_w, int32_t filters, int32_t k_h,
                                        int32_t k_w, int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
                                        int32_t pad_top, int32_t pad_left, float low, float high, int32_t chunk,
                                        int32_t ldy, tl_threads *threads) {
  const int32_t pixels = batches * out_h * out_w, kp = k_h * k_w * in_c;
  tl_conv_f32_args a;
  a.x = x;
  a.packed = packed;
  a.bias = bias;
  a.res = res;
  a.y = y;
  TL_CONV_GEOMETRY(a.g);
  a.low = low;
  a.high = high;
  a.chunk = chunk;
  a.ldy = ldy;
  const int apart = tl_disjoint(x, (size_t)batches * in_h * in_w * in_c * 4u, y, tl_f32_span(pixels, filters, ldy));
  if (!apart) threads = NULL;
#ifdef TL_GEMM_F32_SEGMENTS
  if (dil_w == 1 && kp <= TL_GEMM_F32_KC && tl_conv_inside_end(&a.g) - tl_conv_inside_first(&a.g) >= 6) {
    tl_parallel_rows(tl_conv_direct_f32_range, &a, batches * out_h, 1, threads, col, (size_t)chunk * (size_t)kp * 4u,
                     (int64_t)pixels * kp * filters);
    return;
  }
#endif
  if (kp > TL_GEMM_F32_KC && apart && (int64_t)kp * filters * 4 > TL_GEMM_F32_PANEL_WEIGHTS) {
    tl_parallel_rows(tl_conv_gemm_f32_panels, &a, pixels, TL_GEMM_F32_MR, threads, col,
                     (size_t)chunk * (size_t)kp * 4u, (int64_t)pixels * kp * filters);
    return;
  }
  tl_parallel_rows(tl_conv_gemm_f32_range, &a, pixels, chunk, threads, col, (size_t)chunk * (size_t)kp * 4u,
                   (int64_t)pixels * kp * filters);
}

/* tl_conv_gemm_f32 with y's pixels ldy floats apart (a slice of the channels of a Concat's output) */
static inline void tl_conv_gemm_f32_pitched(const float *x, const float *packed, const float *bias, float *y,
                                            float *col, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c,
                                            int32_t out_h, int32_t out_w, int32_t filters, int32_t k_h, int32_t k_w,
                                            int32_t stride_h, int32_t stride_w, int32_t dil_h, int32_t dil_w,
                                            int32_t pad_top, int32_t pad_left, float low, float high, int32_t chunk,
                                            int32_t ldy, tl_threads *threads) {
  tl_conv_gemm_f32_any(x, packed, bias, NULL, y, col, batches, in_h, in_w, in_c, out_h, out_w, filters, k_h, k_w,
                       stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, low, high, chunk, ldy, threads);
}

/* tl_conv_gemm_f32 + res[p][u] before the clamp (a residual Add fused into the convolution; res
 * may be y: each element is read before it is written, by the same thread) */
static inline void tl_conv_gemm_f32_residual(const float *x, const float *packed, const float *bias, float *y,
                                             const float *res, float *col, int32_t batches, int32_t in_h,
                                             int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                                             int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h,
                                             int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top,
                                             int32_t pad_left, float low, float high, int32_t chunk,
                                             tl_threads *threads) {
  tl_conv_gemm_f32_any(x, packed, bias, res, y, col, batches, in_h, in_w, in_c, out_h, out_w, filters, k_h, k_w,
                       stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, low, high, chunk, filters, threads);
}

static inline void tl_conv_gemm_f32(const float *x, const float *packed, const float *bias, float *y, float *col,
                                    int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                    int32_t out_w, int32_t filters, int32_t k_h, int32_t k_w, int32_t stride_h,
                                    int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top,
                                    int32_t pad_left, float low, float high, int32_t chunk, tl_threads *threads) {
  tl_conv_gemm_f32_any(x, packed, bias, NULL, y, col, batches, in_h, in_w, in_c, out_h, out_w, filters, k_h, k_w,
                       stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, low, high, chunk, filters, threads);
}

/* an int8 depthwise convolution with one filter per channel, on the host: per output pixel the
 * valid taps (as tl_dwconv_nhwc_s8) accumulate over contiguous channels into acc, then 16
 * channels at a time are requantized (TL_GEMM_S8_STORE's vector form where there is one). bias,
 * multiplier, left and right shifts, and acc (scratch) hold `padded` values (in_c rounded up to 16) */
static inline void tl_dwconv_host_s8(const int8_t *x, const int8_t *w, const int32_t *bias, int8_t *y,
                                     int32_t *acc, int32_t batches, int32_t in_h, int32_t in_w, int32_t in_c,
                                     int32_t out_h, int32_t out_w, int32_t k_h, int32_t k_w, int32_t stride_h,
                                     int32_t stride_w, int32_t dil_h, int32_t dil_w, int32_t pad_top,
                                     int32_t pad_left, int32_t x_offset, const int32_t *multiplier,
                                     const int32_t *left, const int32_t *right, int32_t zero, int32_t low,
                                     int32_t high) {
  int32_t b, oy, ox, c, ky, kx;
  for (b = 0; b < batches; ++b)
    for (oy = 0; oy < out_h; ++oy) {
      const int32_t top = oy * stride_h - pad_top;
      int32_t ky0, ky1;
      tl_valid_taps(top, dil_h, k_h, in_h, &ky0, &ky1);
      for (ox = 0; ox < out_w; ++ox) {
        const int32_t start = ox * stride_w - pad_left;
        int32_t kx0, kx1;
        int8_t *out = y + ((b * out_h + oy) * out_w + ox) * in_c;
        tl_valid_taps(start, dil_w, k_w, in_w, &kx0, &kx1);
        const int32_t origin = ((b * in_h + top) * in_w + start) * in_c;
        c = 0;
#ifdef TL_GEMM_DW_S8
        c = tl_dw_s8_channels(x, w, acc, origin, in_c, in_w * in_c * dil_h, in_c * dil_w, k_w, ky0, ky1, kx0, kx1,
                              x_offset);
#endif
        {
          const int32_t done = c;
          for (c = done; c < in_c; ++c) acc[c] = 0;
          for (ky = ky0; ky < ky1; ++ky)
            for (kx = kx0; kx < kx1; ++kx) {
              const int8_t *px = x + origin + ky * in_w * in_c * dil_h + kx * in_c * dil_w;
              const int8_t *pw = w + (ky * k_w + kx) * in_c;
              for (c = done; c < in_c; ++c) acc[c] += ((int32_t)px[c] + x_offset) * (int32_t)pw[c];
            }
        }
#ifdef TL_GEMM_S8_STORE
        for (c = 0; c < in_c; c += TL_GEMM_NR)
          tl_gemm_s8_store(acc + c, bias + c, multiplier + c, left + c, right + c, zero, low, high, out + c,
                           in_c - c < TL_GEMM_NR ? in_c - c : TL_GEMM_NR);
#else
        for (c = 0; c < in_c; ++c) {
          const int32_t sum = (int32_t)((uint32_t)acc[c] + (uint32_t)bias[c]);
          const int32_t v = tl_mbqm(sum, multiplier[c], (int)(left[c] - right[c]));
          out[c] = (int8_t)tl_clamp_i32(v + zero, low, high);
        }
#endif
      }
    }
}

#endif
