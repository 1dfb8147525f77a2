// The CPU driver's team split: units that cover C exactly, and a team's result equal bit for bit to one thread's
// (every element sees every K block once, in order, whichever thread claims it), in every output type, with B
// packed and read in place, across column chunks whose packed-B buffers are reused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/gemm_driver.hpp"
#include "backends/cpu/microkernel.hpp"
#include "support/test_support.hpp"

namespace tileforge::cpu {
namespace {

using testing::make_operands;
using testing::make_problem;
using testing::reference_for;

TEST(GemmDriver, TeamSplitCoversEveryRowAndColumnOnce) {
  struct Case {
    int64_t m, n, k;
    int mr, nr;
    int64_t mc, nc;
    bool pack_b;
    int threads;
  };
  for (const Case& c : {Case{1024, 1024, 1024, 6, 64, 1050, 16384, true, 2},
                        Case{512, 384, 128, 14, 32, 2114, 8480, true, 2},
                        Case{4096, 4096, 4096, 6, 64, 2112, 8512, true, 56},
                        Case{20, 5000, 300, 6, 16, 582, 16384, false, 2},
                        Case{97, 131, 77, 8, 8, 24, 16, true, 3},
                        Case{100000, 64, 100000, 14, 32, 2114, 8480, true, 16}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " threads " +
                 std::to_string(c.threads));
    const TeamSplit s = team_split(c.m, c.n, c.k, c.mr, c.nr, c.mc, c.nc, c.pack_b, c.threads);
    // Row blocks of whole MR-panels, at most MC, covering M with no empty block.
    EXPECT_EQ(s.rows % c.mr, 0);
    EXPECT_LE(s.rows, std::max<int64_t>(c.mr, c.mc / c.mr * c.mr));
    EXPECT_GE(s.row_units * s.rows, c.m);
    EXPECT_LT((s.row_units - 1) * s.rows, c.m);
    // Column chunks of at most NC covering N; each cut into parts of whole NR-panels, none empty.
    EXPECT_LE(s.chunk_cols, c.nc);
    EXPECT_GE(s.chunks * s.chunk_cols, c.n);
    EXPECT_LT((s.chunks - 1) * s.chunk_cols, c.n);
    EXPECT_GE(s.col_parts, 1);
    EXPECT_LE(s.col_parts, (s.chunk_cols + c.nr - 1) / c.nr);
    // A packed chunk of B stays within the driver's bound unless one NR-panel alone exceeds it.
    if (c.pack_b) {
      EXPECT_TRUE(c.k * s.chunk_cols <= (int64_t(16) << 20) || s.chunk_cols == c.nr);
    }
    // At least two units per thread wherever C has that many micro-tiles.
    const int64_t tiles = (c.m + c.mr - 1) / c.mr * ((std::min(c.n, c.nc) + c.nr - 1) / c.nr);
    if (tiles >= 2 * c.threads) {
      EXPECT_GE(s.units(), 2 * c.threads);
    }
  }
}

// Runs `p` with `plan` on `threads` threads and returns C's bytes.
std::vector<unsigned char> run_with(const testing::Operands& ops, CpuPlan plan, int threads) {
  std::vector<unsigned char> c = ops.c;
  plan.threads = threads;
  run_gemm(ops.problem, ops.a.data(), ops.b.data(), c.data(), plan);
  return c;
}

TEST(GemmDriver, TeamMatchesOneThreadBitForBit) {
  uint64_t seed = 900;
  for (const std::string& family : all_families()) {
    if (Support s = family_runs_here(family); !s) {
      std::cout << "SKIPPED: " << family << ": " << s.reason << "\n";
      continue;
    }
    const MicroKernel& uk = microkernels_for(family).front();
    for (bool pack_b : {false, true}) {
      for (Layout layout : {Layout::RR, Layout::CC}) {
        for (DType out : {DType::f32, DType::f16, DType::bf16}) {
          // Enough rows for a team (row blocks and column parts), over 2 MFLOP so the driver uses it; small KC,
          // MC and NC force several K blocks, several A blocks per unit and four column chunks, so the two
          // packed-B buffers are each reused.
          Problem p = make_problem(9 * uk.mr + 5, 7 * uk.nr + 3, 601, layout, out, out);
          p.alpha = 0.75;
          p.beta = -0.5;
          const auto ops = make_operands(p, ++seed);
          SCOPED_TRACE(family + " " + ops.problem.describe() + (pack_b ? " PACK_B=1" : " PACK_B=0"));
          ASSERT_GE(ops.problem.flops(), 2.0e6);
          CpuPlan plan;
          plan.kernel = &uk;
          plan.kc = 40;
          plan.mc = 2 * uk.mr;
          plan.nc = 2 * uk.nr;
          plan.pack_b = pack_b;
          const auto alone = run_with(ops, plan, 1);
          const auto team = run_with(ops, plan, 2);
          ASSERT_EQ(alone.size(), team.size());
          EXPECT_EQ(std::memcmp(alone.data(), team.data(), alone.size()), 0)
              << "the team's C differs from one thread's";
          // And both are right.
          const auto report = verify::compare(ops.problem, team.data(), reference_for(ops));
          EXPECT_EQ(report.checked, ops.problem.m * ops.problem.n);
          EXPECT_TRUE(verify::check(ops.problem, report).ok());
        }
      }
    }
  }
}

}  // namespace
}  // namespace tileforge::cpu
