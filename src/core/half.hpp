// Scalar FP16 and BF16 <-> FP32 conversion (round to nearest even), used by references, packing and tests.
// NOTE: internal linkage (static) on purpose: per-ISA translation units include this header, and an inline
// function with external linkage compiled there with -mavx512f could be the copy the linker keeps for all.
#pragma once

#include <cstdint>
#include <cstring>

namespace tileforge {

static inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

static inline float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }

static inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN, sign kept
  u += 0x7fffu + ((u >> 16) & 1u);                                            // round to nearest even
  return uint16_t(u >> 16);
}

static inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man ? 0x400000u | (man << 13) : 0u));  // Inf, quiet NaN
  if (exp != 0) return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0) return bits_to_float(sign);
  // Subnormal: value = man * 2^-24.
  float v = float(man) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

static inline uint16_t float_to_f16(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN stays NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);                         // rounds to Inf
  if (a < 0x38800000u) {
    // Result is subnormal or zero: scale into the subnormal grid and round to nearest even.
    if (a < 0x33000000u) return sign;  // below half the smallest subnormal
    const uint32_t exp = a >> 23;
    const uint32_t man = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24 (value = man * 2^(exp-150), target unit 2^-24)
    uint32_t q = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t r = a - 0x38000000u;                // rebias exponent 127 -> 15 (in place, mantissa kept)
  r += 0xfffu + ((r >> 13) & 1u);              // round to nearest even at bit 13
  return uint16_t(sign | (r >> 13));
}

}  // namespace tileforge
