/* tl_exp.h: a branch-free float exp the compiler vectorises (64-bit hosts): n = round(x log2 e),
 * a degree-6 polynomial of the remainder, 2^n through the exponent bits; within 2 ulp of expf
 * over [-87, 88], x clamped to it. Quiet comparisons (isless, isgreater) keep it vectorisable. */
#ifndef TL_EXP_H
#define TL_EXP_H

#include <math.h>
#include <string.h>

#include "tl_common.h"

/* loops over arrays use tl_exp_poly on 64-bit hosts, expf elsewhere (microcontrollers) */
#ifndef TL_VECTOR_EXP
#if defined(__x86_64__) || defined(__aarch64__)
#define TL_VECTOR_EXP 1
#else
#define TL_VECTOR_EXP 0
#endif
#endif

static inline float tl_exp_poly(float x) {
  float n, r, p, scale;
  int32_t bits;
  x = isless(x, -87.0f) ? -87.0f : (isgreater(x, 88.0f) ? 88.0f : x);
  n = floorf(x * 1.44269504088896341f + 0.5f);
  r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  bits = ((int32_t)n + 127) * (1 << 23);
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/* 1 / (1 + exp(-x)), by tl_exp_poly where TL_VECTOR_EXP */
static inline float tl_exp_sigmoid_f32(float x) {
#if TL_VECTOR_EXP
  return 1.0f / (1.0f + tl_exp_poly(-x));
#else
  return 1.0f / (1.0f + expf(-x));
#endif
}

#endif /* TL_EXP_H */
