// The analytic cost model: predicted time of one config from FLOPs at the compute unit's rate (with the tile's
// efficiency), bytes per memory level at that level's bandwidth, core balance, pipeline fill and fixed overheads.
// Pure functions of (Problem, HwProfile, Config); the constants and their reasons are in cost_constants.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "hw/hw_profile.hpp"
#include "plan/analysis.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::plan {

// Bytes that cross one memory level and the time they take at its bandwidth.
struct LevelTime {
  std::string level;        // "HBM", "L2", "shared memory", "DRAM", "L3"
  double bytes = 0;
  double bandwidth = 0;     // bytes per second available to this problem
  double seconds = 0;
};

struct Cost {
  double seconds = 0;             // the prediction
  double compute_s = 0;           // FLOPs (with padding) at the tile's rate on the busiest core
  double compute_share = 0;       // rate of the compute term as a share of the chip's peak for this precision
  std::vector<LevelTime> levels;  // memory levels, outermost first
  double latency_s = 0;           // GPU: what the loads in flight allow (Little's law); 0 on CPUs
  double body_s = 0;              // max(compute, levels, latency) + the leak of the non-binding streams
  std::string bound;              // the term that set body_s: "compute", a level's name, or "latency"
  double fill_s = 0;              // pipeline prologues (GPU) or packing phases (CPU) that nothing overlaps
  double overhead_s = 0;          // launches, barriers, operand copies
  double dram_bytes = 0;          // bytes read and written at the outermost level
  int occupancy = 1;              // GPU: blocks per SM; CPU: 1
  std::string occupancy_limit;    // GPU: "shared memory", "registers", "threads", "blocks"
  WaveAnalysis waves;             // tiles over cores (CPU: MR x NR micro-tiles over threads)
  std::vector<std::string> notes; // facts the decision log quotes
  bool valid = true;              // false when the profile lacks a number the model needs (then seconds = inf)
};

// Blocks of one sm80 config resident per SM, and what limits them.
struct Sm80Occupancy {
  int blocks = 0;
  std::string limit;
};
Sm80Occupancy sm80_occupancy(const Config& config, const hw::HwProfile& profile);

// Bytes of A and B the sm80 raster reads from DRAM: panels each wave touches, group-M order, an LRU over the usable
// L2. Memoized per (BLOCK_M, BLOCK_N, GROUP_M, occupancy) in a cache the caller owns (one per problem and profile).
using DramCache = std::map<std::tuple<int64_t, int64_t, int64_t, int>, double>;
double sm80_operand_dram_bytes(const Problem& problem, const hw::HwProfile& profile, int64_t block_m,
                               int64_t block_n, int64_t group_m, int occupancy, DramCache* cache = nullptr);

// Predicted time of an sm80 config. Any config can be priced, legal or not, so that the log can say what a
// rejected neighbour would have gained.
Cost sm80_cost(const Problem& problem, const hw::HwProfile& profile, const Config& config,
               DramCache* cache = nullptr);

// Predicted time of a cpu-* config with `threads` threads (0: all cores of the profile).
Cost cpu_cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, int threads = 0);

// The family's model: sm80 or cpu-*.
Cost cost_of(const Problem& problem, const hw::HwProfile& profile, const Config& config, int threads = 0,
             DramCache* cache = nullptr);

// The CPU loop nest's thread grid (rows x columns of threads), as the cpu backend's driver splits C.
std::pair<int, int> cpu_thread_grid(int64_t m, int mr, int threads);

}  // namespace tileforge::plan
