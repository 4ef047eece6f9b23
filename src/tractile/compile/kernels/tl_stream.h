/* tl_stream.h: the state of streaming (pulsed) models: delay lines as ring buffers, masks.
 *
 * A stream is cut along one axis into frames: a tensor [outer][frames][inner] (inner in bytes).
 * A delay line keeps the last `history` frames in a ring of `capacity` = history + pulse frames
 * per outer index; a push writes the new frames, emits `pulse + overlap` frames starting
 * `history` frames back, and moves the ring's head: each push copies only its own frames. */
#ifndef TL_STREAM_H
#define TL_STREAM_H

#include <string.h>

#include "tl_common.h"

static inline void tl_ring_copy(uint8_t *dst, const uint8_t *ring, int32_t start, int32_t frames, int32_t capacity,
                                int32_t inner) {
  const int32_t first = frames < capacity - start ? frames : capacity - start;
  memcpy(dst, ring + (size_t)start * inner, (size_t)first * inner);
  if (frames > first) memcpy(dst + (size_t)first * inner, ring, (size_t)(frames - first) * inner);
}

static inline void tl_delay_push(uint8_t *ring, int32_t *head, const uint8_t *x, uint8_t *y, int32_t outer,
                                 int32_t history, int32_t pulse, int32_t overlap, int32_t inner) {
  const int32_t capacity = history + pulse;
  const int32_t write = (*head + history) % capacity;
  int32_t o;
  for (o = 0; o < outer; ++o) {
    uint8_t *lane = ring + (size_t)o * capacity * inner;
    const uint8_t *in = x + (size_t)o * pulse * inner;
    const int32_t first = pulse < capacity - write ? pulse : capacity - write;
    memcpy(lane + (size_t)write * inner, in, (size_t)first * inner);
    if (pulse > first) memcpy(lane, in + (size_t)first * inner, (size_t)(pulse - first) * inner);
    tl_ring_copy(y + (size_t)o * (pulse + overlap) * inner, lane, *head, pulse + overlap, capacity, inner);
  }
  *head = (*head + pulse) % capacity;
}

/* frames whose position in the stream is below `begin` take the value `fill` (element of `size` bytes) */
static inline void tl_pulse_mask(const uint8_t *x, uint8_t *y, int32_t *position, int32_t outer, int32_t pulse,
                                 int32_t inner_count, int size, int32_t begin, const uint8_t *fill) {
  const int32_t masked = *position >= begin ? 0 : (begin - *position < pulse ? begin - *position : pulse);
  const size_t frame = (size_t)inner_count * size;
  int32_t o, f, i;
  if (x != y) memcpy(y, x, (size_t)outer * pulse * frame);
  for (o = 0; o < outer && masked; ++o)
    for (f = 0; f < masked; ++f)
      for (i = 0; i < inner_count; ++i) memcpy(y + ((size_t)o * pulse + f) * frame + (size_t)i * size, fill, size);
  if (*position < begin) *position += pulse;
}

#endif /* TL_STREAM_H */
