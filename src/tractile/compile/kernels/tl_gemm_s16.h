/* tl_gemm_s16.h: tl_gemm.h's int8 convolutions (k x k, and 1 x 1 over many pixels) where the
 * micro-kernel multiplies int16 pairs (TL_GEMM_S16_TILE: AVX2 without VNNI, tl_gemm_x86.h).
 *
 * Once per call the packed int8 weights are widened into `wide` (arena scratch): per block of 16
 * outputs, per pair of depths q, output j's weights 2q and 2q + 1 at wide[(q * 16 + j) * 2 ...],
 * so that one vpmaddwd gives 8 outputs' sums of two products (nothing to add across lanes after
 * the depth loop, and no widening inside it). The pixels are copied TL_GEMM_S16_ROWS at a time
 * into `col` as int16 (im2col'ed, padding taps holding the input zero point; kp - depth zeros),
 * then every block of 16 outputs runs over them six rows at a time (tl_gemm_s16_six) and is
 * requantized (tl_gemm_s8_store). The sums are those of tl_gemm.h's portable loops: products of
 * int8 values, added modulo 2^32. A chunk's inputs are all copied before its outputs are
 * written, as tl_gemm.h's blocks. Included by tl_gemm.h after its argument structs. */
#ifndef TL_GEMM_S16_H
#define TL_GEMM_S16_H
#ifdef TL_GEMM_S16_TILE

#define TL_GEMM_S16_ROWS (4 * TL_GEMM_S16_MR)

static inline void tl_gemm_s8_widen(const int8_t *packed, int32_t blocks, int32_t kp, int16_t *wide) {
  const int32_t block_bytes = 4 * TL_GEMM_NR + kp * TL_GEMM_NR;
  int32_t b, g, j, i;
  for (b = 0; b < blocks; ++b) {
    const int8_t *w = packed + b * block_bytes + 4 * TL_GEMM_NR;
    int16_t *d = wide + b * kp * TL_GEMM_NR;
    for (g = 0; g < kp / 4; ++g)
      for (j = 0; j < TL_GEMM_NR; ++j)
        for (i = 0; i < 4; ++i) d[((2 * g + i / 2) * TL_GEMM_NR + j) * 2 + i % 2] = w[(g * TL_GEMM_NR + j) * 4 + i];
  }
}

/* tl_im2col_s8's rows as int16 (a window's row inside the input copied at once), and rows
 * count .. `rows` (a whole number of tiles) zero */
static inline void tl_im2col_s16(int16_t *col, const int8_t *x, int32_t first, int32_t count, int32_t rows,
                                 const tl_conv_geometry *g, int8_t pad, int32_t kp) {
  const int32_t in_c = g->in_c;
  int32_t i, ky, kx, c, ox = first % g->out_w, oy = (first / g->out_w) % g->out_h, b = first / (g->out_w * g->out_h);
  for (i = 0; i < count; ++i) {
    const int32_t top = oy * g->stride_h - g->pad_top, left = ox * g->stride_w - g->pad_left;
    int16_t *row = col + i * kp;
    for (ky = 0; ky < g->k_h; ++ky) {
      const int32_t iy = top + ky * g->dil_h;
      if (iy >= 0 && iy < g->in_h && g->dil_w == 1 && left >= 0 && left + g->k_w <= g->in_w) {
        tl_x86_widen_bytes(row + ky * g->k_w * in_c, x + ((b * g->in_h + iy) * g->in_w + left) * in_c, g->k_w * in_c);
        continue;
      }
      for (kx = 0; kx < g->k_w; ++kx) {
        const int32_t ix = left + kx * g->dil_w;
        int16_t *dst = row + (ky * g->k_w + kx) * in_c;
        if (iy >= 0 && iy < g->in_h && ix >= 0 && ix < g->in_w)
          tl_x86_widen_bytes(dst, x + ((b * g->in_h + iy) * g->in_w + ix) * in_c, in_c);
        else
          for (c = 0; c < in_c; ++c) dst[c] = pad;
      }
    }
    for (c = g->k_h * g->k_w * in_c; c < kp; ++c) row[c] = 0;
    if (++ox == g->out_w) {
      ox = 0;
      if (++oy == g->out_h) {
        oy = 0;
        ++b;
      }
    }
  }
  memset(col + count * kp, 0, (size_t)(rows - count) * (size_t)kp * sizeof(int16_t));
}

/* y[r][u] (row stride units) for `count` rows of col (padded to a whole number of tiles) */
static inline void tl_gemm_s16_rows(const int16_t *col, int32_t count, int32_t kp, const int16_t *wide,
                                    const int32_t *bias, const int32_t *multiplier, const int32_t *shift,
                                    int32_t per_channel, int32_t zero, int32_t low, int32_t high, int8_t *y,
                                    int32_t units) {
  int32_t acc[TL_GEMM_S16_MR * TL_GEMM_NR], b16[TL_GEMM_NR], m16[TL_GEMM_NR], left[TL_GEMM_NR], right[TL_GEMM_NR];
  int32_t n, r, i, j;
  for (n = 0; n < units; n += TL_GEMM_NR) {
    const int32_t width = units - n < TL_GEMM_NR ? units - n : TL_GEMM_NR;
    for (j = 0; j < TL_GEMM_NR; ++j) {
      const int32_t u = n + (j < width ? j : 0), s = shift[u * per_channel];
      b16[j] = bias[u];
      m16[j] = multiplier[u * per_channel];
      left[j] = s > 0 ? s : 0;
      right[j] = s > 0 ? 0 : -s;
    }
    for (r = 0; r < count; r += TL_GEMM_S16_MR) {
      tl_gemm_s16_six(col + r * kp, kp, kp / 2, wide + n * kp, acc);
      for (i = 0; i < TL_GEMM_S16_MR && r + i < count; ++i)
        tl_gemm_s8_store(acc + i * TL_GEMM_NR, b16, m16, left, right, zero, low, high, y + (r + i) * units + n, width);
    }
  }
}

static inline void tl_conv_gemm_s16_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_conv_s8_args *a = (const tl_conv_s8_args *)args;
  int16_t *col = (int16_t *)scratch;
  int32_t p;
  for (p = begin; p < end; p += TL_GEMM_S16_ROWS) {
    const int32_t count = end - p < TL_GEMM_S16_ROWS ? end - p : TL_GEMM_S16_ROWS;
    tl_im2col_s16(col, a->x, p, count, (count + TL_GEMM_S16_MR - 1) / TL_GEMM_S16_MR * TL_GEMM_S16_MR, &a->g,
                  (int8_t)a->x_zero, a->kp);
    tl_gemm_s16_rows(col, count, a->kp, a->wide, a->bias, a->multiplier, a->shift, a->per_channel, a->zero, a->low,
                     a->high, a->y + p * a->g.filters, a->g.filters);
  }
}

static inline void tl_dense_gemm_s16_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_dense_s8_args *a = (const tl_dense_s8_args *)args;
  int16_t *col = (int16_t *)scratch;
  int32_t m, i, c;
  for (m = begin; m < end; m += TL_GEMM_S16_ROWS) {
    const int32_t count = end - m < TL_GEMM_S16_ROWS ? end - m : TL_GEMM_S16_ROWS;
    const int32_t rows = (count + TL_GEMM_S16_MR - 1) / TL_GEMM_S16_MR * TL_GEMM_S16_MR;
    for (i = 0; i < count; ++i) {
      tl_x86_widen_bytes(col + i * a->kp, a->x + (m + i) * a->depth, a->depth);
      for (c = a->depth; c < a->kp; ++c) col[i * a->kp + c] = 0;
    }
    memset(col + count * a->kp, 0, (size_t)(rows - count) * (size_t)a->kp * sizeof(int16_t));
    tl_gemm_s16_rows(col, count, a->kp, a->wide, a->bias, a->multiplier, a->shift, a->per_channel, a->zero, a->low,
                     a->high, a->y + m * a->units, a->units);
  }
}

#endif
#endif
