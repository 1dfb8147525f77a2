// The sm80 family's entries in a served plan's decision log.
#pragma once

#include "plan/planner.hpp"

namespace tileforge::cuda {

void sm80_explain(plan::Plan& plan);

}  // namespace tileforge::cuda
