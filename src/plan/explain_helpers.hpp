// Phrases every family's decision log uses (neighbours of the choice, the waves line, ordinals), for the families'
// explain() implementations.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "plan/planner.hpp"

namespace tileforge::plan {

// "one step away: BLOCK_K=64: rejected, needs ... (would be -3.1%); BLOCK_K=16: +8.2%", from plan.neighbours.
std::string neighbours_of(const Plan& plan, std::initializer_list<const char*> params);
// The waves of a tiling over the cores, in one line.
std::string waves_text(const WaveAnalysis& w, int64_t batch, const char* core_name);
// A memory level of a cost by name; nullptr when the cost has none.
const LevelTime* find_level(const Cost& c, std::string_view name);
// "a 4th stage" for STAGES = 4.
std::string ordinal(int64_t n);

}  // namespace tileforge::plan
