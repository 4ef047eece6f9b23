/* tl_gemm_direct.h: tl_gemm.h's float k x k convolutions without im2col where the micro-kernel
 * takes a window's rows in place (TL_GEMM_F32_SEGMENTS: AVX2, tl_gemm_x86.h's
 * tl_x86_f32_six_segments). Per output row, the columns whose windows lie inside the input run
 * six at a time over one segment of k_w * in_c contiguous inputs per window row inside the
 * input (rows above or below add nothing); the border columns and the last (fewer than six)
 * are im2col'ed and go through tl_gemm_f32_rows. Taken for windows of at most TL_GEMM_F32_KC
 * taps (a block's weights stay in L1; every sum runs in the order of the im2col path's single
 * pass). Output pixels are written after their own inputs are read, in increasing order, and
 * each six before the next six are read: the memory planner's overlaps hold. Included by
 * tl_gemm.h after tl_conv_f32_args. */
#ifndef TL_GEMM_DIRECT_H
#define TL_GEMM_DIRECT_H
#ifdef TL_GEMM_F32_SEGMENTS
/* the output columns first .. end - 1 whose windows lie inside the input's columns (dilation 1) */
static inline int32_t tl_conv_inside_first(const tl_conv_geometry *g) {
  return (g->pad_left + g->stride_w - 1) / g->stride_w;
}
static inline int32_t tl_conv_inside_end(const tl_conv_geometry *g) {
  const int32_t end = g->in_w + g->pad_left < g->k_w ? 0 : (g->in_w - g->k_w + g->pad_left) / g->stride_w + 1;
  return end < g->out_w ? end : g->out_w;
}

/* the pixels first .. first + count - 1 im2col'ed (chunk rows at a time) and multiplied */
static inline void tl_conv_gemm_f32_pixels(const tl_conv_f32_args *a, float *col, int32_t first, int32_t count) {
  const tl_conv_geometry *g = &a->g;
  const int32_t kp = g->k_h * g->k_w * g->in_c;
  int32_t p;
  for (p = first; p < first + count; p += a->chunk) {
    const int32_t n = first + count - p < a->chunk ? first + count - p : a->chunk;
    tl_im2col_f32(col, a->x, p, n, g->in_h, g->in_w, g->in_c, g->out_h, g->out_w, g->k_h, g->k_w, g->stride_h,
                  g->stride_w, g->dil_h, g->dil_w, g->pad_top, g->pad_left, 0.0f, kp);
    tl_gemm_f32_rows(col, kp, n, kp, a->packed, a->bias, a->res ? a->res + p * a->ldy : NULL, a->y + p * a->ldy, a->ldy,
                     g->filters, a->low, a->high);
  }
}

/* output rows [begin, end) (over batches), as above */
static inline void tl_conv_direct_f32_range(const void *args, int32_t begin, int32_t end, void *scratch) {
  const tl_conv_f32_args *a = (const tl_conv_f32_args *)args;
  const tl_conv_geometry *g = &a->g;
  const int32_t kc = g->k_w * g->in_c, kp = g->k_h * kc, filters = g->filters;
  const int32_t lo = tl_conv_inside_first(g), hi = lo + (tl_conv_inside_end(g) - lo) / 6 * 6;
  float init[TL_GEMM_NR];
  int32_t row, ox, n, j;
  for (row = begin; row < end; ++row) {
    const int32_t b = row / g->out_h, top = row % g->out_h * g->stride_h - g->pad_top;
    int32_t ky0, ky1;
    tl_valid_taps(top, g->dil_h, g->k_h, g->in_h, &ky0, &ky1);
    tl_conv_gemm_f32_pixels(a, (float *)scratch, row * g->out_w, lo);
    for (ox = lo; ox < hi; ox += 6)
      for (n = 0; n < filters; n += TL_GEMM_NR) {
        const int32_t width = filters - n < TL_GEMM_NR ? filters - n : TL_GEMM_NR;
        for (j = 0; j < TL_GEMM_NR; ++j) init[j] = a->bias && j < width ? a->bias[n + j] : 0.0f;
        const float *in = a->x + ((b * g->in_h + top + ky0 * g->dil_h) * g->in_w + ox * g->stride_w - g->pad_left) *
                                     g->in_c;
        const float *block = a->packed + (size_t)n * (size_t)kp + ky0 * kc * TL_GEMM_NR;
        float *out = a->y + (row * g->out_w + ox) * a->ldy + n;
        if (!a->res) {
          tl_x86_f32_six_segments(in, g->stride_w * g->in_c, kc, ky1 - ky0, g->dil_h * g->in_w * g->in_c, block,
                                  kc * TL_GEMM_NR, init, out, a->ldy, width, a->low, a->high);
          continue;
        }
#if defined(__GNUC__)
        /* the residual's pixels come from memory while the tile's sums run */
        for (j = 0; j < 6; ++j) __builtin_prefetch(a->res + (row * g->out_w + ox + j) * a->ldy + n);
#endif
        tl_x86_f32_six_segments_res(in, g->stride_w * g->in_c, kc, ky1 - ky0, g->dil_h * g->in_w * g->in_c, block,
                                    kc * TL_GEMM_NR, init, a->res + (row * g->out_w + ox) * a->ldy + n, out, a->ldy,
                                    width, a->low, a->high);
      }
    tl_conv_gemm_f32_pixels(a, (float *)scratch, row * g->out_w + hi, g->out_w - hi);
  }
}
#endif

#endif
