// The CPU micro-kernel table: one entry per (ISA, MR, NR), each with its compute and packing routines.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tileforge/tileforge.hpp"

namespace tileforge::cpu {

// C[0:MR, 0:NR] (row-major, row stride ldc) = alpha * sum_k Ap[k][0:MR] (x) Bp[k][0:NR] + beta * C.
// Ap is a packed micro-panel (MR floats per k). Bp advances by b_stride floats per k: NR for a packed
// micro-panel, or the leading dimension when B is read in place. beta == 0 never reads C.
using ComputeFn = void (*)(int64_t kc, const float* ap, const float* bp, int64_t b_stride, float* c, int64_t ldc,
                           float alpha, float beta);

// Packs an (mn x kc) slice of an operand into panels of `width` (MR for A, NR for B): dst[p][k][0:width],
// zero-padded past mn, converting to f32. Element (i, k) is at src[i * s_mn + k * s_k].
using PackFn = void (*)(int64_t mn, int64_t kc, const void* src, int64_t s_mn, int64_t s_k, DType type,
                        float* dst);

struct MicroKernel {
  std::string_view isa;   // "avx512", "avx2", "generic"
  int mr = 0, nr = 0;
  ComputeFn compute;        // B from a packed micro-panel (in L1)
  ComputeFn compute_stream; // B read in place from memory, with software prefetch of the rows ahead
  PackFn pack_a;            // panels of MR
  PackFn pack_b;            // panels of NR
};

// Each table lives in a translation unit compiled for its ISA; call only when the host supports that ISA.
std::span<const MicroKernel> avx512_microkernels();
std::span<const MicroKernel> avx2_microkernels();
std::span<const MicroKernel> generic_microkernels();

// The table for a family ("cpu-avx512", "cpu-avx2", "cpu-generic"), and the entry for (MR, NR) or nullptr.
std::span<const MicroKernel> microkernels_for(std::string_view family);
const MicroKernel* find_microkernel(std::string_view family, int mr, int nr);

// Vector registers each ISA has, for the register-budget constraint of the analytic model.
int vector_registers(std::string_view family);
int vector_floats(std::string_view family);  // floats per vector register: 16, 8, 4

}  // namespace tileforge::cpu
