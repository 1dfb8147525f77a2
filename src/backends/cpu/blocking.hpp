// The analytic block-size model of the CPU backend: MR, NR from the register file and the record's FMA pipes and
// latency, KC, MC, NC from the cache geometry of the HwProfile. Pure functions, tested without running a GEMM.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hw/hw_profile.hpp"

namespace tileforge::cpu {

struct BlockSizes {
  int mr = 0, nr = 0;
  int64_t kc = 0, mc = 0, nc = 0;
  std::vector<std::string> reasons;  // one line per decision, for the decision log
};

// Set-associative geometry of one cache level as the model needs it.
struct CacheGeometry {
  int64_t size_bytes = 0;
  int ways = 8;
  int line_bytes = 64;
  int64_t sets() const { return size_bytes / (int64_t(ways) * line_bytes); }
};

// The geometry of cache `level` in the profile, with documented defaults where the record is silent
// (8 ways, 64-byte lines); a missing L3 returns size 0.
CacheGeometry cache_geometry(const hw::HwProfile& profile, int level);

// MR x NR: among the family's micro-kernels, those whose accumulators, B vectors and one broadcast fit the
// register file and that hold enough independent accumulators to cover FMA latency x pipes (the profile's
// fma_latency_cycles and fma_pipes); of those, the one with the most FLOPs per element loaded (MR*NR / (MR+NR)).
BlockSizes choose_register_block(std::string_view family, const hw::HwProfile& profile);

// KC, MC, NC by the analytic model of Low, Igual, Smith and Quintana-Orti, "Analytical Modeling Is Enough
// for High-Performance BLIS" (ACM TOMS 43(2), 2016): the KC x NR micro-panel of B stays in L1 while MR x KC
// micro-panels of A stream through it; the MC x KC block of A fills L2 but for the ways B and C need; the
// KC x NC panel of B fills the shared L3 but for the ways the threads' A blocks need.
BlockSizes analytic_block_sizes(const hw::HwProfile& profile, std::string_view family, int threads);

}  // namespace tileforge::cpu
