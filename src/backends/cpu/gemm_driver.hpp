// The BLIS-style loop nest around the micro-kernel: five loops, packing, threading, edges and output types.
#pragma once

#include <cstdint>

#include "backends/cpu/microkernel.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::cpu {

struct CpuPlan {
  const MicroKernel* kernel = nullptr;
  int64_t mc = 0, kc = 0, nc = 0;
  bool pack_b = true;   // false: B (f32, contiguous along N) is read in place by the streaming micro-kernel
  int threads = 1;
};

// Threads of a team of `threads` that split the rows of C (the other factor of the team splits its columns): the
// largest divisor of the team that still gives each of them two MR-panels of rows, 1 when none does. The cpu
// families' cost model prices this same split.
int rows_split(int64_t m, int mr, int threads);

// Runs the (validated, normalized) problem on host pointers. Never reads C when beta == 0.
void run_gemm(const Problem& problem, const void* a, const void* b, void* c, const CpuPlan& plan);

}  // namespace tileforge::cpu
