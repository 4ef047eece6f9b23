/* tl_gemm_s16.h: tl_gemm.h's int8 convolutions (k x k, and 1 x 1 over many pixels) where the
 * micro-kernel multiplies int16 pairs (TL_GEMM_S16_TILE: AVX2 without VNNI, tl_gemm_x86.h).
 *
 * The weights come a second time, as int16 (`wide`, host_gemm.pack_s16): per block of 16
 * outputs, per pair of depths q, output j's weights 2q and 2q + 1 at wide[(q * 16 + j) * 2 ...],
 * so that one vpmaddwd gives 8 outputs' sums of two products (nothing to add across lanes after
 * the depth loop, and no widening inside it). The pixels are copied six at a time into `col` as
 * int16 (im2col'ed, padding taps holding the input zero point; kp - depth zeros), then every
 * block of 16 outputs runs over them (tl_gemm_s16_six) and is requantized (tl_gemm_s8_store). The sums are those of tl_gemm.h's portable loops: products of
 * int8 values, added modulo 2^32. A chunk's inputs are all copied before its outputs are
 * written, as tl_gemm.h's blocks. Included by tl_gemm.h after its argument structs. */
#ifndef TL_GEMM_S16_H
#define TL_GEMM_S16_H
#ifdef TL_GEMM_S16_TILE

#define TL_GEMM_S16_ROWS TL_GEMM_S16_MR /* pixels copied at a time: one tile */

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
  if (count < rows) memset(col + count * kp, 0, (size_t)(rows - count) * (size_t)kp * sizeof(int16_t));
}

/* one block's requantization (tl_gemm_s8_store's operands; lanes past the last output repeat the
 * block's first); a call fills them once for its first TL_GEMM_S16_BLOCKS blocks */
#define TL_GEMM_S16_BLOCKS 8
typedef struct {
  int32_t bias[TL_GEMM_NR], multiplier[TL_GEMM_NR], left[TL_GEMM_NR], right[TL_GEMM_NR];
} tl_s16_requant;

typedef struct {
  const int32_t *bias, *multiplier, *shift;
  int32_t per_channel, zero, low, high, units, cached;
  tl_s16_requant blocks[TL_GEMM_S16_BLOCKS];
} tl_s16_outputs;

static inline void tl_s16_requant_of(tl_s16_requant *q, const tl_s16_outputs *o, int32_t n) {
  const int32_t width = o->units - n < TL_GEMM_NR ? o->units - n : TL_GEMM_NR;
  int32_t j;
  for (j = 0; j < TL_GEMM_NR; ++j) {
    const int32_t u = n + (j < width ? j : 0), s = o->shift[u * o->per_channel];
    q->bias[j] = o->bias[u];
    q->multiplier[j] = o->multiplier[u * o->per_channel];
    q->left[j] = s > 0 ? s : 0;
    q->right[j] = s > 0 ? 0 : -s;
  }
}

static inline void tl_s16_outputs_init(tl_s16_outputs *o, const int32_t *bias, const int32_t *multiplier,
                                       const int32_t *shift, int32_t per_channel, int32_t zero, int32_t low,
                                       int32_t high, int32_t units) {
  int32_t b;
  o->bias = bias;
  o->multiplier = multiplier;
  o->shift = shift;
  o->per_channel = per_channel;
  o->zero = zero;
  o->low = low;
  o->high = high;
  o->units = units;
  o->cached = (units + TL_GEMM_NR - 1) / TL_GEMM_NR;
  if (o->cached > TL_GEMM_S16_BLOCKS) o->cached = TL_GEMM_S16_BLOCKS;
  for (b = 0; b < o->cached; ++b) tl_s16_requant_of(&o->blocks[b], o, b * TL_GEMM_NR);
}

/* y[r][u] (row stride units) for the `count` (at most six) rows of col, six rows long */
static inline void tl_gemm_s16_rows(const int16_t *col, int32_t count, int32_t kp, const int16_t *wide,
                                    const tl_s16_outputs *o, int8_t *y) {
  int32_t acc[TL_GEMM_S16_MR * TL_GEMM_NR];
  tl_s16_requant one;
  int32_t n, i;
  for (n = 0; n < o->units; n += TL_GEMM_NR) {
    const int32_t width = o->units - n < TL_GEMM_NR ? o->units - n : TL_GEMM_NR;
    const tl_s16_requant *q = &one;
    if (n / TL_GEMM_NR < o->cached)
      q = &o->blocks[n / TL_GEMM_NR];
    else
      tl_s16_requant_of(&one, o, n);
    tl_gemm_s16_six(col, kp, kp / 2, wide + n * kp, acc);
    for (i = 0; i < count; ++i)
      tl_gemm_s8_store(acc + i * TL_GEMM_NR, q->bias, q->multiplier, q->left, q->right, o->zero, o->low, o->high,
                       y + i * o->units + n, width);
  }
}

static inline void tl_conv_gemm_s16_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_conv_s8_args *a = (const tl_conv_s8_args *)args;
  int16_t *col = (int16_t *)scratch;
  tl_s16_outputs o;
  int32_t p;
  tl_s16_outputs_init(&o, a->bias, a->multiplier, a->shift, a->per_channel, a->zero, a->low, a->high, a->g.filters);
  for (p = begin; p < end; p += TL_GEMM_S16_MR) {
    const int32_t count = end - p < TL_GEMM_S16_MR ? end - p : TL_GEMM_S16_MR;
    tl_im2col_s16(col, a->x, p, count, TL_GEMM_S16_MR, &a->g, (int8_t)a->x_zero, a->kp);
    tl_gemm_s16_rows(col, count, a->kp, a->wide, &o, a->y + p * a->g.filters);
  }
}

static inline void tl_dense_gemm_s16_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_dense_s8_args *a = (const tl_dense_s8_args *)args;
  int16_t *col = (int16_t *)scratch;
  tl_s16_outputs o;
  int32_t m, i, c;
  tl_s16_outputs_init(&o, a->bias, a->multiplier, a->shift, a->per_channel, a->zero, a->low, a->high, a->units);
  for (m = begin; m < end; m += TL_GEMM_S16_MR) {
    const int32_t count = end - m < TL_GEMM_S16_MR ? end - m : TL_GEMM_S16_MR;
    for (i = 0; i < count; ++i) {
      tl_x86_widen_bytes(col + i * a->kp, a->x + (m + i) * a->depth, a->depth);
      for (c = a->depth; c < a->kp; ++c) col[i * a->kp + c] = 0;
    }
    if (count < TL_GEMM_S16_MR)
      memset(col + count * a->kp, 0, (size_t)(TL_GEMM_S16_MR - count) * (size_t)a->kp * sizeof(int16_t));
    tl_gemm_s16_rows(col, count, a->kp, a->wide, &o, a->y + m * a->units);
  }
}

#endif
#endif
