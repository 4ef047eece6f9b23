/* tl_signal.h: TFLite Micro's signal library (the audio front end of micro_speech): window,
 * block scaling, energy, mel filterbank, square root, spectral subtraction, PCAN gain control,
 * log; framing with state (the real FFT is in tl_fft.h).
 *
 * The arithmetic is the interpreter's (tractile/ops/audio), wrapping where TFLite Micro's C
 * stores into narrower integers. */
#ifndef TL_SIGNAL_H
#define TL_SIGNAL_H

#include <string.h>

#include "tl_common.h"

/* --------------------------------------------------------------------------------------------
 * integer helpers */

/* position of the highest set bit, 1-based; 32 for 0 (as TFLite Micro's GCC builds) */
static inline int32_t tl_msb32(uint32_t x) {
  int32_t bits = 0;
  if (x == 0) return 32;
  while (x) {
    x >>= 1;
    ++bits;
  }
  return bits;
}

/* the square root rounded to nearest, at most 0xFFFF below 2^32 and 0xFFFFFFFF above */
static inline uint32_t tl_sqrt_rounded(uint64_t num) {
  uint64_t res = 0, bit = (uint64_t)1 << 62;
  const uint64_t cap = (num >> 32) == 0 ? 0xFFFFu : 0xFFFFFFFFu;
  while (bit > num) bit >>= 2;
  while (bit) {
    if (num >= res + bit) {
      num -= res + bit;
      res = (res >> 1) + bit;
    } else {
      res >>= 1;
    }
    bit >>= 2;
  }
  if (num > res && res != cap) ++res;
  return (uint32_t)res;
}

/* --------------------------------------------------------------------------------------------
 * window and block scaling */

static inline void tl_window_i16(const int16_t *x, const int16_t *w, int16_t *y, int32_t rows, int32_t n,
                                 int32_t shift) {
  int32_t r, i;
  for (r = 0; r < rows; ++r)
    for (i = 0; i < n; ++i) {
      const int32_t raw = ((int32_t)x[r * n + i] * TL_READ_S16(&w[i])) >> shift;
      y[r * n + i] = (int16_t)(raw < -32768 ? -32768 : (raw > 32767 ? 32767 : raw));
    }
}

/* MaxAbs16 step by step (-(-32768) wraps to -32768), then the shift that fills 16 bits */
static inline void tl_fft_auto_scale_i16(const int16_t *x, int16_t *y, int32_t *scale, int32_t n) {
  int16_t largest = 0;
  int32_t i, bits;
  for (i = 0; i < n; ++i) {
    if (x[i] > largest)
      largest = x[i];
    else if (-x[i] > largest)
      largest = (int16_t)-x[i];
  }
  bits = 15 - tl_msb32((uint32_t)(int32_t)largest);
  if (bits < 0) bits = 0;
  for (i = 0; i < n; ++i) y[i] = (int16_t)(uint16_t)((uint32_t)(int32_t)x[i] << bits);
  *scale = bits;
}

/* --------------------------------------------------------------------------------------------
 * from the spectrum to log filterbank features */

/* re^2 + im^2 of the bins start..end-1 (uint32 wrapping as TFLite Micro's int32 sum); 0 elsewhere */
static inline void tl_energy_i16(const int16_t *x, uint32_t *y, int32_t bins, int32_t start, int32_t end) {
  int32_t k;
  for (k = 0; k < bins; ++k) {
    const int32_t re = x[2 * k], im = x[2 * k + 1];
    y[k] = k < start || k >= end ? 0u : (uint32_t)(re * re) + (uint32_t)(im * im);
  }
}

/* channel i sums weights[ws[i] + j] * x[fs[i] + j] and passes its unweights' sum to channel i + 1;
 * channels + 1 channels, the first dropped */
static inline void tl_filter_bank(const uint32_t *x, uint64_t *y, int32_t channels, const int16_t *weights,
                                  const int16_t *unweights, const int16_t *starts, const int16_t *weight_starts,
                                  const int16_t *widths) {
  uint64_t weighted = 0, unweighted = 0;
  int32_t i, j;
  for (i = 0; i <= channels; ++i) {
    const int32_t start = TL_READ_S16(&starts[i]), weight_start = TL_READ_S16(&weight_starts[i]);
    const int32_t width = TL_READ_S16(&widths[i]);
    for (j = 0; j < width; ++j) {
      const uint64_t value = x[start + j];
      weighted += (uint64_t)(int64_t)TL_READ_S16(&weights[weight_start + j]) * value;
      unweighted += (uint64_t)(int64_t)TL_READ_S16(&unweights[weight_start + j]) * value;
    }
    if (i > 0) y[i - 1] = weighted;
    weighted = unweighted;
    unweighted = 0;
  }
}

/* returns nonzero when the shift is outside 0..31 */
static inline int tl_filter_bank_sqrt(const uint64_t *x, const int32_t *shift, uint32_t *y, int32_t n) {
  int32_t i;
  if (*shift < 0 || *shift > 31) return 1;
  for (i = 0; i < n; ++i) y[i] = tl_sqrt_rounded(x[i]) >> *shift;
  return 0;
}

/* smoothing[2]: (even, odd) channels' smoothing, one_minus[2] likewise; noise: the state */
static inline void tl_spectral_subtraction(const uint32_t *x, uint32_t *y, uint32_t *noise_out, uint32_t *noise,
                                           int32_t n, const uint32_t *smoothing, const uint32_t *one_minus,
                                           int32_t smoothing_bits, uint32_t min_signal_remaining,
                                           int32_t subtraction_bits, int32_t clamping) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    const uint32_t scaled = x[i] << smoothing_bits;
    uint32_t estimate, minimum, subtracted;
    noise[i] = (uint32_t)(((uint64_t)scaled * smoothing[i & 1] + (uint64_t)noise[i] * one_minus[i & 1]) >>
                          subtraction_bits);
    estimate = noise[i];
    if (estimate > scaled) {
      estimate = scaled;
      if (clamping) noise[i] = scaled;
    }
    minimum = (uint32_t)(((uint64_t)x[i] * min_signal_remaining) >> subtraction_bits);
    subtracted = (scaled - estimate) >> smoothing_bits;
    y[i] = subtracted > minimum ? subtracted : minimum;
  }
  memcpy(noise_out, noise, (size_t)n * sizeof *noise);
}

static inline int16_t tl_pcan_gain(uint32_t x, const int16_t *lut) {
  int32_t interval, frac, result;
  if (x <= 2) return TL_READ_S16(&lut[x]);
  interval = tl_msb32(x);
  lut += 4 * interval - 6;
  frac = (int32_t)((interval < 11 ? x << (11 - interval) : x >> (interval - 11)) & 0x3FF);
  result = ((int32_t)TL_READ_S16(&lut[2]) * frac) >> 5;
  result = (int32_t)((uint32_t)result + ((uint32_t)(int32_t)TL_READ_S16(&lut[1]) << 5));
  result = (int32_t)((uint32_t)result * (uint32_t)frac);
  result = (int32_t)((uint32_t)result + (1u << 14)) >> 15;
  result = (int32_t)((uint32_t)result + (uint32_t)(int32_t)TL_READ_S16(&lut[0]));
  return (int16_t)result;
}

static inline void tl_pcan(const uint32_t *x, const uint32_t *noise, const int16_t *lut, uint32_t *y, int32_t n,
                           int32_t snr_shift) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    const uint32_t gain = (uint32_t)(int32_t)tl_pcan_gain(noise[i], lut);
    const uint32_t snr = (uint32_t)(((uint64_t)x[i] * gain) >> snr_shift);
    y[i] = snr < (2u << 12) ? (snr * snr) >> 20 : (snr >> 6) - (1u << 6);
  }
}

/* out_scale * ln(x << correction) in int16, with a 129-entry log2 correction table */
static inline void tl_filter_bank_log(const uint32_t *x, int16_t *y, int32_t n, uint32_t out_scale,
                                      int32_t correction_bits, const int16_t *lut) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    const uint32_t scaled = x[i] << correction_bits;
    uint32_t integer, fraction, log_2, log_e, value;
    int32_t frac, segment, c0, c1;
    if (scaled <= 1) {
      y[i] = 0;
      continue;
    }
    integer = (uint32_t)tl_msb32(scaled) - 1;
    frac = (int32_t)(scaled - ((uint32_t)1 << integer));
    frac = integer < 16 ? frac << (16 - integer) : frac >> (integer - 16);
    segment = frac >> 9;
    c0 = TL_READ_S16(&lut[segment]);
    c1 = TL_READ_S16(&lut[segment + 1]);
    fraction = (uint32_t)(frac + c0 + (((c1 - c0) * (frac - segment * 512)) >> 16));
    log_2 = (integer << 16) + fraction;
    log_e = (uint32_t)(((uint64_t)45426 * log_2 + 32768) >> 16);
    value = (out_scale * log_e + 32768u) >> 16;
    y[i] = (int16_t)(value < 32767u ? value : 32767u);
  }
}

/* --------------------------------------------------------------------------------------------
 * framing with state */

/* per row a buffer of `capacity` samples holding `*count` not yet framed; frames not complete
 * are zero and clear *valid */
static inline void tl_framer_i16(const int16_t *x, int16_t *y, uint8_t *valid, int16_t *buffer, int32_t *count,
                                 int32_t rows, int32_t frames, int32_t size, int32_t step, int32_t capacity) {
  int32_t r, f, held = *count;
  *valid = 1;
  for (r = 0; r < rows; ++r) {
    int16_t *line = buffer + r * capacity;
    held = *count;
    for (f = 0; f < frames; ++f) {
      int16_t *out = y + ((size_t)r * frames + f) * size;
      memcpy(line + held, x + ((size_t)r * frames + f) * step, (size_t)step * sizeof *x);
      held += step;
      if (held >= size) {
        memcpy(out, line, (size_t)size * sizeof *out);
        memmove(line, line + step, (size_t)(held - step) * sizeof *line);
        held -= step;
      } else {
        memset(out, 0, (size_t)size * sizeof *out);
        *valid = 0;
      }
    }
  }
  *count = held;
}

static inline void tl_stacker_i16(const int16_t *x, int16_t *y, uint8_t *valid, int16_t *buffer, int32_t *count,
                                  int32_t *started, int32_t channels, int32_t size, int32_t left, int32_t step) {
  int32_t i;
  memcpy(buffer + *count, x, (size_t)channels * sizeof *x);
  *count += channels;
  if (!*started) {
    for (i = 0; i < left; ++i) {
      memcpy(buffer + *count, x, (size_t)channels * sizeof *x);
      *count += channels;
    }
    *started = 1;
  }
  if (*count < size) {
    memset(y, 0, (size_t)size * sizeof *y);
    *valid = 0;
    return;
  }
  memcpy(y, buffer, (size_t)size * sizeof *y);
  memmove(buffer, buffer + step * channels, (size_t)(size - step * channels) * sizeof *buffer);
  *count -= step * channels;
  *valid = 1;
}

static inline void tl_overlap_add_i16(const int16_t *x, int16_t *y, int16_t *buffer, int32_t rows, int32_t frames,
                                      int32_t size, int32_t step) {
  int32_t r, f, i;
  for (r = 0; r < rows; ++r) {
    int16_t *line = buffer + r * size;
    for (f = 0; f < frames; ++f) {
      const int16_t *in = x + ((size_t)r * frames + f) * size;
      for (i = 0; i < size; ++i) {
        const int32_t sum = (int32_t)line[i] + in[i];
        line[i] = (int16_t)(sum < -32768 ? -32768 : (sum > 32767 ? 32767 : sum));
      }
      memcpy(y + ((size_t)r * frames + f) * step, line, (size_t)step * sizeof *y);
      memmove(line, line + step, (size_t)(size - step) * sizeof *line);
      memset(line + size - step, 0, (size_t)step * sizeof *line);
    }
  }
}

static inline void tl_overlap_add_f32(const float *x, float *y, float *buffer, int32_t rows, int32_t frames,
                                      int32_t size, int32_t step) {
  int32_t r, f, i;
  for (r = 0; r < rows; ++r) {
    float *line = buffer + r * size;
    for (f = 0; f < frames; ++f) {
      const float *in = x + ((size_t)r * frames + f) * size;
      for (i = 0; i < size; ++i) line[i] += in[i];
      memcpy(y + ((size_t)r * frames + f) * step, line, (size_t)step * sizeof *y);
      memmove(line, line + step, (size_t)(size - step) * sizeof *line);
      for (i = size - step; i < size; ++i) line[i] = 0.0f;
    }
  }
}

/* each row delayed by `delay` samples: history holds the last `delay` of each row */
static inline void tl_frame_delay_i16(const int16_t *x, int16_t *y, int16_t *history, int32_t rows, int32_t n,
                                      int32_t delay) {
  int32_t r;
  for (r = 0; r < rows; ++r) {
    int16_t *past = history + r * delay;
    const int16_t *in = x + r * n;
    int16_t *out = y + r * n;
    if (n >= delay) {
      memcpy(out, past, (size_t)delay * sizeof *out);
      memcpy(out + delay, in, (size_t)(n - delay) * sizeof *out);
      memcpy(past, in + n - delay, (size_t)delay * sizeof *past);
    } else {
      memcpy(out, past, (size_t)n * sizeof *out);
      memmove(past, past + n, (size_t)(delay - n) * sizeof *past);
      memcpy(past + delay - n, in, (size_t)n * sizeof *past);
    }
  }
}

#endif /* TL_SIGNAL_H */
