// AVX-512 micro-kernels (16 floats per register, 32 registers): 14x32, 12x32 and 6x64, with their packing.
#include <immintrin.h>

#include "backends/cpu/microkernel_impl.hpp"

namespace tileforge::cpu {
namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int L = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void prefetch_read(const float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
  static void prefetch_write(float* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }
};

// 14x32 uses 28 accumulators + 2 B vectors + 1 broadcast of the 32 registers (the analytic model's choice);
// 12x32 and 6x64 leave more slack for the compiler.
constexpr MicroKernel kAvx512Kernels[] = {
    make_microkernel<Avx512, 14, 32>("avx512"),
    make_microkernel<Avx512, 12, 32>("avx512"),
    make_microkernel<Avx512, 6, 64>("avx512"),
};

}  // namespace

std::span<const MicroKernel> avx512_microkernels() { return kAvx512Kernels; }

}  // namespace tileforge::cpu
