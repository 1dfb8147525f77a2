// Portable micro-kernels on 4-float vectors of the compiler's vector extension (SSE2 on any x86-64).
#include "backends/cpu/microkernel_impl.hpp"

namespace tileforge::cpu {
namespace {

struct Generic {
  typedef float V __attribute__((vector_size(16)));
  static constexpr int L = 4;
  static V zero() { return V{0, 0, 0, 0}; }
  static V set1(float x) { return V{x, x, x, x}; }
  static V load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  static V broadcast(const float* p) { return set1(*p); }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V mul(V a, V b) { return a * b; }
  static void store(float* p, V v) { std::memcpy(p, &v, sizeof(V)); }
  static void prefetch_read(const float* p) { __builtin_prefetch(p, 0, 3); }
  static void prefetch_write(float* p) { __builtin_prefetch(p, 1, 3); }
};

// 16 SSE registers: 4x8 keeps 8 accumulators + 2 B vectors + 1 broadcast.
constexpr MicroKernel kGenericKernels[] = {
    make_microkernel<Generic, 4, 8>("generic"),
    make_microkernel<Generic, 4, 4>("generic"),
};

}  // namespace

std::span<const MicroKernel> generic_microkernels() { return kGenericKernels; }

}  // namespace tileforge::cpu
