// The choice's neighbours (each parameter one declared step away, priced and checked) and the binding limit
// they show: the last step of make_plan, apart so that the planner's file stays short.
#pragma once

#include "plan/planner.hpp"

namespace tileforge::plan {

// Fills plan.neighbours, plan.binding and plan.limits around plan.ranked.front().
void find_neighbours(Plan& plan, const KernelFamily& family, const FamilySpace& fs, CostScratch* scratch);

}  // namespace tileforge::plan
