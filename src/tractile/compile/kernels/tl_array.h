/* tl_array.h: data movement (Transpose, Slice, Concat, Split, Pad, Tile, Gather...).
 *
 * Ops that only move elements are described on the host by a table of copy blocks. A block
 * copies a box of `rank` dims from one source (or fills it with one value) into the
 * output, each side with its own strides (in elements):
 *   row = {dst_offset, source (-1: fill), src_offset, dims[rank], dst_strides[rank], src_strides[rank]}
 * The innermost dim is copied with memcpy when both sides are contiguous there. */
#ifndef TL_ARRAY_H
#define TL_ARRAY_H

#include <string.h>

#include "tl_common.h"

#define TL_COPY_MAX_RANK 8

static inline void tl_copy_element(uint8_t *dst, const uint8_t *src, int size) {
  switch (size) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, (size_t)size); break;
  }
}

static inline void tl_copy_blocks(uint8_t *dst, const uint8_t *const *sources, const uint8_t *fill, int size,
                                  const int32_t *table, int blocks, int rank) {
  int32_t index[TL_COPY_MAX_RANK];
  int b, k;
  const int row = 3 + 3 * rank;
  for (b = 0; b < blocks; ++b) {
    const int32_t *block = table + b * row;
    const int32_t dst_offset = TL_READ_S32(block);
    const int32_t source = TL_READ_S32(block + 1);
    const int32_t src_offset = TL_READ_S32(block + 2);
    const int32_t *dims = block + 3;
    const int32_t *dst_strides = dims + rank;
    const int32_t *src_strides = dst_strides + rank;
    const int32_t inner = TL_READ_S32(dims + rank - 1);
    const int32_t dst_inner = TL_READ_S32(dst_strides + rank - 1);
    const int32_t src_inner = TL_READ_S32(src_strides + rank - 1);
    const uint8_t *src = source >= 0 ? sources[source] : fill;
    int32_t outer = 1;
    int32_t o;
    for (k = 0; k < rank - 1; ++k) {
      outer *= TL_READ_S32(dims + k);
      index[k] = 0;
    }
    for (o = 0; o < outer; ++o) {
      int32_t d = dst_offset, s = src_offset, i;
      for (k = 0; k < rank - 1; ++k) {
        d += index[k] * TL_READ_S32(dst_strides + k);
        s += index[k] * TL_READ_S32(src_strides + k);
      }
      if (source < 0) {
        for (i = 0; i < inner; ++i) tl_copy_element(dst + (size_t)(d + i * dst_inner) * size, fill, size);
      } else if (dst_inner == 1 && src_inner == 1) {
        memcpy(dst + (size_t)d * size, src + (size_t)s * size, (size_t)inner * size);
      } else {
        for (i = 0; i < inner; ++i)
          tl_copy_element(dst + (size_t)(d + i * dst_inner) * size, src + (size_t)(s + i * src_inner) * size, size);
      }
      for (k = rank - 2; k >= 0; --k) {
        if (++index[k] < TL_READ_S32(dims + k)) break;
        index[k] = 0;
      }
    }
  }
}

/* dst[i] = source[table[i]] (table[i] < 0: the fill value), for moves no block table describes */
static inline void tl_copy_indexed(uint8_t *dst, const uint8_t *src, const uint8_t *fill, int size,
                                   const int32_t *table, int32_t count) {
  int32_t i;
  for (i = 0; i < count; ++i) {
    const int32_t at = TL_READ_S32(table + i);
    tl_copy_element(dst + (size_t)i * size, at >= 0 ? src + (size_t)at * size : fill, size);
  }
}

/* Gather along an axis at run-time indices: out[o][j][i] = data[o][index[j]][i] with `inner`
 * elements per row; negative indices count from the end when `negative` is 1. Returns 1 (and
 * stops) on an index out of range. */
static inline int tl_gather_rows(uint8_t *dst, const uint8_t *data, const void *indices, int index_bytes,
                                 int32_t outer, int32_t count, int32_t axis_size, int32_t inner, int size,
                                 int negative) {
  int32_t o, j;
  const size_t row = (size_t)inner * size;
  for (o = 0; o < outer; ++o) {
    for (j = 0; j < count; ++j) {
      int64_t at;
      if (index_bytes == 8) at = ((const int64_t *)indices)[j];
      else if (index_bytes == 4) at = ((const int32_t *)indices)[j];
      else at = ((const int16_t *)indices)[j];
      if (negative && at < 0) at += axis_size;
      if (at < 0 || at >= axis_size) return 1;
      memcpy(dst + ((size_t)o * count + j) * row, data + ((size_t)o * axis_size + (size_t)at) * row, row);
    }
  }
  return 0;
}

#endif /* TL_ARRAY_H */
