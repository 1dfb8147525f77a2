// The FP32 FMA throughput loop for AVX-512F (16 lanes); called only when CPUID and XCR0 say AVX-512 is usable.
// Hand-written: it measures the FMA rate; no packaged library measures one, they report only the ISA.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <cstdint>

#include "hw/fma_peak_kernels.hpp"

// NOTE: this file is compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl. It defines nothing with external
// linkage except the entry point (no templates, no inline functions, no standard-library calls), so the linker can
// never pick an AVX-512 copy of a function that baseline code also uses.
namespace tileforge::hw {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// Sixteen independent accumulators: an FMA has 4 cycles latency and server cores have two 512-bit FMA pipes, so
// at least 8 chains must be in flight; 16 leaves margin (cores with longer latency) within the 32 zmm registers.
constexpr int kChains = 16;

float fma_chains_avx512(int64_t iterations, float seed) {
  // acc = acc * a + b converges to b / (1 - a) = 1: values stay normal (no denormal assists, no overflow).
  const __m512 a = _mm512_set1_ps(0.999f * (seed > 0.0f ? 1.0f : -1.0f));
  const __m512 b = _mm512_set1_ps(0.001f);
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(seed + 0.01f * float(c));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  float total = 0.0f;
  for (float x : lanes) total += x;
  return total;
}
#endif

}  // namespace

// Runs `iterations` rounds of 16 16-lane FMAs (2 FLOPs x 16 lanes x 16 chains = 512 FLOPs per iteration); returns
// a value derived from the accumulators so that the compiler cannot drop the work.
float fma_peak_loop_avx512(int64_t iterations, float seed, int* flops_per_iteration) {
#if defined(__x86_64__) || defined(__i386__)
  *flops_per_iteration = 2 * 16 * kChains;
  return fma_chains_avx512(iterations, seed);
#else
  *flops_per_iteration = 0;
  return seed;
#endif
}

}  // namespace tileforge::hw
