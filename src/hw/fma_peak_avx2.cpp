// The FP32 FMA throughput loop for AVX2+FMA (8 lanes); called only when CPUID and XCR0 say AVX2 and FMA are usable.
// Hand-written: it measures the FMA rate; no packaged library measures one, they report only the ISA.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <cstdint>

#include "hw/fma_peak_kernels.hpp"

// NOTE: this file is compiled with -mavx2 -mfma. It defines nothing with external linkage except the entry point
// (no templates, no inline functions, no standard-library calls), so the linker can never pick an AVX2 copy of a
// function that baseline code also uses.
namespace tileforge::hw {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// Twelve independent accumulators: an FMA has 4-5 cycles latency on current x86 cores and two FMA pipes, so at
// least 8-10 chains must be in flight to keep both pipes busy; 12 leaves margin within the 16 ymm registers.
constexpr int kChains = 12;

float fma_chains_avx2(int64_t iterations, float seed) {
  // acc = acc * a + b converges to b / (1 - a) = 1: values stay normal (no denormal assists, no overflow).
  const __m256 a = _mm256_set1_ps(0.999f * (seed > 0.0f ? 1.0f : -1.0f));
  const __m256 b = _mm256_set1_ps(0.001f);
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(seed + 0.01f * float(c));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  float total = 0.0f;
  for (float x : lanes) total += x;
  return total;
}
#endif

}  // namespace

// Runs `iterations` rounds of 12 8-lane FMAs (2 FLOPs x 8 lanes x 12 chains = 192 FLOPs per iteration); returns
// a value derived from the accumulators so that the compiler cannot drop the work.
float fma_peak_loop_avx2(int64_t iterations, float seed, int* flops_per_iteration) {
#if defined(__x86_64__) || defined(__i386__)
  *flops_per_iteration = 2 * 8 * kChains;
  return fma_chains_avx2(iterations, seed);
#else
  *flops_per_iteration = 0;
  return seed;
#endif
}

}  // namespace tileforge::hw
