// AVX2 + FMA micro-kernels (8 floats per register, 16 registers): 6x16, 4x24 and 8x8, with their packing.
#include <immintrin.h>

#include "backends/cpu/microkernel_impl.hpp"

namespace tileforge::cpu {
namespace {

struct Avx2 {
  using V = __m256;
  static constexpr int L = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void prefetch_read(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
  static void prefetch_write(float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
};

// 6x16 is the analytic model's choice (12 accumulators cover 2 FMA pipes x 4-5 cycles of latency, and leave
// registers for 2 B vectors and 1 broadcast); 4x24 and 8x8 are alternatives for the tuner.
constexpr MicroKernel kAvx2Kernels[] = {
    make_microkernel<Avx2, 6, 16>("avx2"),
    make_microkernel<Avx2, 4, 24>("avx2"),
    make_microkernel<Avx2, 8, 8>("avx2"),
};

}  // namespace

std::span<const MicroKernel> avx2_microkernels() { return kAvx2Kernels; }

}  // namespace tileforge::cpu
