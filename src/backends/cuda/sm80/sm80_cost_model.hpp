// The sm80 family's cost model: predicted time of one config on a chip record, a pure function of problem, config
// and record (constants and their reasons in sm80_cost_constants.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "hw/hw_profile.hpp"
#include "plan/cost_model.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::cuda {

// The first number the sm80 model needs that the profile does not record ("the profile records no
// max_blocks_per_core (resident blocks per SM)"), or nothing when it has them all. The model never assumes one.
std::optional<std::string> sm80_missing_field(const hw::HwProfile& profile);

// Blocks of one sm80 config resident per SM, and what limits them (the heuristic and the cost model share it).
struct Sm80Occupancy {
  int blocks = 0;
  std::string limit;
};
Sm80Occupancy sm80_occupancy(const Config& config, const hw::HwProfile& profile);

// Bytes of A and B the sm80 raster reads from DRAM: panels each wave touches, group-M order, an LRU over the usable
// L2. Memoized per (BLOCK_M, BLOCK_N, GROUP_M, occupancy, K, batch) in a cache the caller owns (one per problem and
// profile: K and the batch tell SPLIT_K's slices, priced as a problem of their own, from the whole).
using DramCache = std::map<std::tuple<int64_t, int64_t, int64_t, int, int64_t, int64_t>, double>;
double sm80_operand_dram_bytes(const Problem& problem, const hw::HwProfile& profile, int64_t block_m,
                               int64_t block_n, int64_t group_m, int occupancy, DramCache* cache = nullptr);
// The same walk with `slots` tiles in flight at once (the sm90 family's resident clusters) instead of the profile's
// cores times an occupancy; `cache_tag` stands for the occupancy in the cache's key.
double operand_dram_bytes_in_flight(const Problem& problem, const hw::HwProfile& profile, int64_t slots,
                                    int64_t block_m, int64_t block_n, int64_t group_m, int cache_tag,
                                    DramCache* cache);

// What sm80_operand_dram_bytes() never goes below, without its simulation: every panel of A and B once when the
// simulation covers every wave (each panel is read at its first touch), else 0 (extrapolated waves prove nothing).
// `slots`: the profile's cores times the occupancy.
double sm80_operand_dram_floor(const Problem& problem, int64_t slots, int64_t block_m, int64_t block_n);

// Predicted time of an sm80 config. Any config can be priced, legal or not, so that the log can say what a
// rejected neighbour would have gained.
plan::Cost sm80_cost(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                     DramCache* cache = nullptr);

// A lower bound on sm80_cost() of every config that holds the values of `partial` (a missing parameter takes any
// value), for dispatch's bound search; 0 when the model cannot price.
double sm80_cost_bound(const Problem& problem, const hw::HwProfile& profile, const Config& partial);

}  // namespace tileforge::cuda
