// The sm90 family's cost model: predicted time of one config on a chip record, a pure function of problem, config
// and record (constants, their reasons and their calibration in sm90_cost_constants.hpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "backends/cuda/sm80/sm80_cost_model.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "hw/hw_profile.hpp"
#include "plan/cost_model.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::cuda {

// The first number the sm90 model needs that the profile does not record, or nothing when it has them all.
std::optional<std::string> sm90_missing_field(const hw::HwProfile& profile);

// The persistent grid of one config (on the kernel's problem: with SWAP_AB the transposed one): cluster tiles, the
// clusters launched, and the tiles the busiest CTA runs.
struct Sm90Grid {
  int64_t cluster_tiles = 0;  // ceil(M / (BLOCK_M * CLUSTER_M)) * ceil(N / (BLOCK_N * CLUSTER_N))
  int64_t clusters = 0;       // min(cluster_tiles, SMs / cluster size)
  int64_t ctas = 0;           // clusters * cluster size
  int64_t tiles_per_cta = 0;  // ceil(cluster_tiles / clusters)
};
Sm90Grid sm90_grid(const Problem& problem, const Config& config, const hw::HwProfile& profile);

// The busiest CTA's share of a schedule (sm90_schedule): main-loop k-steps, work units, tiles it finishes (runs
// the epilogue of), and split-K / stream-K partial tiles it stores and reads back (with the shared sum: its
// 1/SPLIT_K share of every slice's partial, one tile's worth, which it writes to C itself).
struct Sm90Share {
  int64_t k_steps = 0;
  int64_t units = 0;
  int64_t finished = 0;
  int64_t partials_written = 0;
  int64_t partials_read = 0;
};
Sm90Share sm90_share(const Sm90Schedule& schedule);

// Per (problem, profile): the DRAM bytes of the tile raster (the sm80 family's LRU simulation of the L2, the same
// grouped order), one memo per cluster size.
struct Sm90CostCache {
  std::map<int, DramCache> dram;
  // What sm90_cost_bound() reads of the (problem, profile) whatever the config, filled at its first call.
  bool ready = false;
  bool valid = false;  // the model can price this problem on this profile
  Problem q;           // normalized
  double peak_tflops = 0;
  bool a_off = false, b_off = false;  // sm90_rows_off_sectors of A and B
  void fill(const Problem& problem, const hw::HwProfile& profile);
  // The memo of the transposed problem, which SWAP_AB's configs are priced on (made at first use).
  Sm90CostCache& transposed();

 private:
  std::unique_ptr<Sm90CostCache> transposed_;
};

// Predicted time of an sm90 config: the busiest CTA's main loop (wgmma at a share of the dense peak, bounded by
// shared-memory reads; L2 and HBM bytes; the load latency the stages in flight cover), its epilogues, one pipeline
// fill, the launch. Any config can be priced, legal or not. `notes` false: the same price without the notes' text.
// A SWAP_AB config is priced as the kernel runs it: on the transposed problem.
plan::Cost sm90_cost(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                     Sm90CostCache* cache = nullptr, bool notes = true);

// A lower bound on sm90_cost() of every config that holds the values of `partial` (a missing parameter takes any
// value): dispatch's bound search drops a partial config whose bound exceeds the best price so far. Past `enough`
// it leaves out the operands' DRAM traffic, whose L2 simulation is its costliest term. 0 when the model cannot price.
// A partial config without SWAP_AB is bounded unswapped: the search sets SWAP_AB before the tile (search_order).
double sm90_cost_bound(const Problem& problem, const hw::HwProfile& profile, const Config& partial,
                       Sm90CostCache* cache = nullptr, double enough = 0);

}  // namespace tileforge::cuda
