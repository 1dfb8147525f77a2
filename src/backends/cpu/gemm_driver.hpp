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

// Whether a team of `threads` splits C by rows (more than 1) or, with too few rows, takes column chunks each with
// its own A and B (1): the largest divisor of the team that still gives each thread two MR-panels of rows, 1 when
// none does. The cpu families' cost model prices the same split (and team_split below).
int rows_split(int64_t m, int mr, int threads);

// How a team cuts C when rows_split() > 1: units of `rows` rows (whole MR-panels, at most MC) by one of `col_parts`
// parts of a chunk of `chunk_cols` columns, claimed by the threads as they run (no static share, no barrier).
struct TeamSplit {
  int64_t rows = 0, row_units = 0, col_parts = 0, chunk_cols = 0, chunks = 0;
  int64_t units() const { return row_units * col_parts * chunks; }
};
TeamSplit team_split(int64_t m, int64_t n, int64_t k, int mr, int nr, int64_t mc, int64_t nc, bool pack_b,
                     int threads);

// The split as the cpu families' cost model needs it, for a team of `threads` on a normalized problem.
struct WorkSplit {
  int row_blocks = 1;       // row blocks that read B at the same time (1: threads take column chunks)
  int64_t rows = 0;         // rows of C in one piece of work (its A blocks: min(MC, rows))
  int64_t row_units = 1;    // pieces of work down the rows of C
  int64_t col_parts = 1;    // parts one NC panel's micro-panels are cut into
  int64_t chunks = 1;       // column chunks of the team's packed B
  int64_t a_packs = 1;      // times each element of A is packed
  double balance_m = 1.0, balance_n = 1.0;  // share of the team's time spent on useful micro-tiles
};
WorkSplit work_split(const Problem& q, int64_t mr, int64_t nr, int64_t mc, int64_t nc, bool pack_b, int threads);

// Host memory run_gemm takes beside A, B and C for a normalized problem, at most: the f32 accumulator of a 16-bit C,
// the team's packed chunk of B (at most 64 MB), and each thread's packed A block and B panel. Saturates.
uint64_t run_workspace_bytes(const Problem& q, int64_t mr, int64_t nr, int64_t mc, int64_t kc, int64_t nc,
                             bool pack_b, int threads);

// Runs the (validated, normalized) problem on host pointers. Never reads C when beta == 0.
void run_gemm(const Problem& problem, const void* a, const void* b, void* c, const CpuPlan& plan);

}  // namespace tileforge::cpu
