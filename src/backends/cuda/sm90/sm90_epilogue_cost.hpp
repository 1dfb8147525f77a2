// The sm90 cost model's price of the busiest CTA's epilogues (sm90_cost_model.cpp's part).
#pragma once

#include <cstdint>
#include <optional>

#include "backends/cuda/sm90/sm90_family.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::cuda::sm90_epilogue {

// The busiest CTA's epilogues, after each tile's main loop: the consumer warpgroups store C. beta != 0 takes the
// direct path in every config (the staging epilogues fall back to it at run time) and reads C too; the shared sum
// writes 1/SPLIT_K of a tile with direct stores (in its fix-up) and no tile's epilogue. sm90_cost passes every
// parameter; sm90_cost_bound leaves out those a partial config lacks, which then take their most favourable value.
double epilogue_seconds(const Problem& q, double out, double clock, int64_t bm, int64_t bn, const Sm90Schedule& sched,
                        int64_t finished, std::optional<int64_t> epilogue, std::optional<int64_t> stmatrix,
                        std::optional<int64_t> epi_split);

}  // namespace tileforge::cuda::sm90_epilogue
