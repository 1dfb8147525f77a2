// Random and poisoned operands, and reading one element of any dtype as double.
#include <cstring>

#include "core/half.hpp"
#include "verify/verify.hpp"

namespace tileforge::verify {
namespace {

// splitmix64's finalizer: a bijective mix, so element i's value depends only on (seed, i) and any range of a
// buffer can be regenerated without the elements before it.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// Uniform on the grid j * 2^-23, j in [-2^23, 2^23): every value is exact in f32 and lies in [-1, 1).
inline float uniform(uint64_t base, int64_t i) {
  const uint64_t z = mix64(base + uint64_t(i) * kGolden);
  const int32_t j = int32_t(z >> 40) - (1 << 23);
  return float(j) * (1.0f / 8388608.0f);
}

}  // namespace

void fill_random(void* data, DType t, int64_t count, uint64_t seed) {
  // Mixing the seed first keeps the streams of seeds s and s+1 unrelated (not shifted copies of each other).
  const uint64_t base = mix64(seed + kGolden);
  switch (t) {
    case DType::f32: {
      auto* p = static_cast<float*>(data);
      for (int64_t i = 0; i < count; ++i) p[i] = uniform(base, i);
      break;
    }
    case DType::f16: {
      // NOTE: rounding to nearest can carry a value just below 1 up to 1.0; step back to the largest f16 below 1
      // so that the documented range [-1, 1) holds in every dtype.
      auto* p = static_cast<uint16_t*>(data);
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t h = float_to_f16(uniform(base, i));
        p[i] = h == 0x3c00 ? uint16_t(0x3bff) : h;
      }
      break;
    }
    case DType::bf16: {
      auto* p = static_cast<uint16_t*>(data);
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t h = float_to_bf16(uniform(base, i));
        p[i] = h == 0x3f80 ? uint16_t(0x3f7f) : h;
      }
      break;
    }
  }
}

void fill_poison(void* data, DType t, int64_t count) {
  // All-ones bytes are a NaN in f32, f16 and bf16 alike (exponent all ones, mantissa non-zero), so a buffer
  // poisoned as one dtype still reads as NaN if a kernel wrongly treats it as another.
  if (count > 0) std::memset(data, 0xff, std::size_t(count) * size_of(t));
}

double load(const void* data, DType t, int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(data)[i];
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
  }
  return 0;
}

}  // namespace tileforge::verify
