// The steps of the cpu families' cost model (cpu_cost.cpp), which CpuFamily::cost combines into a config's price.
#pragma once

#include <cstdint>

#include "backends/cpu/blocking.hpp"
#include "backends/cpu/gemm_driver.hpp"
#include "hw/hw_profile.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::cpu {

// A config's blocks on one (normalized) problem, as every term of the cost model reads them.
struct CostBlocks {
  int64_t mr = 1, nr = 1;
  int64_t kc_eff = 1, mc_eff = 1, nc_eff = 1;  // KC and NC clipped to the problem, MC to a work unit's rows
  int64_t n_panels = 1;                        // NR-panels in one NC panel
  bool pack_b = true;
  int t = 1;                                   // threads
  WorkSplit split;                             // the driver's split of the work over the team
  double mp = 0, np = 0;                       // M and N padded to whole micro-panels (and NC panels)
  double k = 0, batch = 1;
  double in = 4;                               // bytes of an input element
};
// The blocks of config (MR, NR, KC, MC, NC, PACK_B) on `q`, each at least 1; the problem has no empty dimension.
CostBlocks cost_blocks(const Problem& q, int64_t mr, int64_t nr, int64_t kc, int64_t mc, int64_t nc, bool pack_b,
                       int threads);

// FLOPs one core's micro-kernel completes per cycle: FMA issue, load ports (broadcasts of A and vectors of B) and
// the FMA latency chain, whichever binds.
double micro_kernel_flops_per_cycle(const hw::HwProfile& profile, int64_t mr, int64_t nr, int lanes);

// Which cache level holds each block (a level holds it when its ways, the other operand's ways and one way for C
// fit), and the share of the L3 the team can count on.
struct CacheFit {
  bool b_in_l1 = false, a_in_l2 = false, b_in_l3 = false, has_l3 = false;
  int sharing = 1;        // the team's threads on one L3
  double l3_share = 1.0;  // the share of that L3 the team's cores own
};
// `l3_shared_by`: the L3 record's shared_by, 0 when there is none or it does not say.
CacheFit cache_fit(const CostBlocks& b, const CacheGeometry& g1, const CacheGeometry& g2, const CacheGeometry& g3,
                   int l3_shared_by);

// B read in place (not packed): the level whose sets hold its KC rows at stride ldb (1 for L1 ... 4 for DRAM; 1 when
// B is packed), and that stride in bytes.
struct InPlaceRows {
  int level = 1;
  double stride_bytes = 0;
};
InPlaceRows in_place_rows(const Problem& q, const CostBlocks& b, const CacheGeometry& g1, const CacheGeometry& g2,
                          const CacheGeometry& g3);

// The bytes the loop nest moves through L2, L3 and DRAM, and those of B's rows read in place from DRAM (charged at
// their own, latency-bound rate).
struct Traffic {
  double l2_bytes = 0, l3_bytes = 0, dram_bytes = 0, in_place_dram_bytes = 0;
};
Traffic memory_traffic(const Problem& q, const CostBlocks& b, const CacheFit& fit, int in_place_level,
                       const CacheGeometry& g1, const CacheGeometry& g2, const CacheGeometry& g3);

// The packing phase: its seconds, and the bytes of A and of B it reads from DRAM (0 when they come from the L3s).
struct Packing {
  double fill_s = 0, a_dram_bytes = 0, b_dram_bytes = 0;
};
// The rates it reads: the cores' clock, the vector's bytes, the team's DRAM and L3 bandwidths (bytes per second).
struct PackRates {
  double clock = 0, vec_bytes = 0, dram_bw = 0, l3_bw = 0;
};
Packing packing_cost(const Problem& q, const CostBlocks& b, bool has_l3, const CacheGeometry& g3, int l3_shared_by,
                     int cores, const PackRates& rates);

}  // namespace tileforge::cpu
