// The sm90 family's entries in a served plan's decision log.
#pragma once

#include "plan/planner.hpp"

namespace tileforge::cuda {

void sm90_explain(plan::Plan& plan);

}  // namespace tileforge::cuda
