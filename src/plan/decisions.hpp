// Writes a served plan's decision log: one entry per choice, under its layer, with numbers from the analysis and
// the cost model (internal to the planner).
#pragma once

#include "plan/planner.hpp"

namespace tileforge::plan {

void record_sm80_decisions(Plan& plan);
void record_cpu_decisions(Plan& plan);

// "a 4th stage" for STAGES = 4; "STAGES=4" otherwise.
std::string ordinal(int64_t n);

}  // namespace tileforge::plan
