/* tl_host_move.h: the host's copy of an NCHW tensor of 4-byte elements into NHWC (a model's image
 * input entering the compiler's channels-last layout), which tl_copy_blocks runs an element at a
 * time: three channels interleaved in one loop the compiler vectorises, other channel counts in
 * blocks of 64 pixels (the rows being read stay in cache). The bits are copied, NaNs included. */
#ifndef TL_HOST_MOVE_H
#define TL_HOST_MOVE_H

#include <stddef.h>

#include "tl_common.h"

/* y[b][p][c] = x[b][c][p]: per batch, the channels x pixels matrix transposed; y must not overlap x */
static inline void tl_nchw_to_nhwc_u32(uint32_t *y, const uint32_t *x, int32_t batches, int32_t channels,
                                       int32_t pixels) {
  int32_t b, first, p, c;
  for (b = 0; b < batches; ++b) {
    const uint32_t *const xb = x + (ptrdiff_t)b * channels * pixels;
    uint32_t *const yb = y + (ptrdiff_t)b * channels * pixels;
    if (channels == 3) {
      const uint32_t *restrict x0 = xb, *restrict x1 = xb + pixels, *restrict x2 = xb + 2 * (ptrdiff_t)pixels;
      uint32_t *restrict out = yb;
      for (p = 0; p < pixels; ++p) {
        out[3 * p] = x0[p];
        out[3 * p + 1] = x1[p];
        out[3 * p + 2] = x2[p];
      }
      continue;
    }
    for (first = 0; first < pixels; first += 64) {
      const int32_t end = pixels - first < 64 ? pixels : first + 64;
      for (c = 0; c < channels; ++c) {
        const uint32_t *restrict row = xb + (ptrdiff_t)c * pixels;
        uint32_t *restrict out = yb + c;
        for (p = first; p < end; ++p) out[(ptrdiff_t)p * channels] = row[p];
      }
    }
  }
}

#endif /* TL_HOST_MOVE_H */
