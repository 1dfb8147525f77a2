// The walk of a family's product space: its legal configs in order, and each rejected combination counted under
// the first constraint it violates, without visiting the subtrees a failing value settles (plan/candidates.cpp's
// enumeration runs it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plan/candidates.hpp"

namespace tileforge::plan {

// Sets `c` to the first combination of `grid` and returns where each declared parameter's value lives in it (in
// declaration order), for walks of the product that update one config in place.
std::vector<int64_t*> first_combination(Config& c, const std::vector<ParamDecl>& decls,
                                        const std::vector<std::vector<int64_t>>& grid);

// Every combination of `grid` (one list of values per declared parameter of `space`, in declaration order; the first
// parameter varies fastest) checked against the space's constraints: the legal configs appended to `legal` in that
// order, every combination counted into `combinations`, and each rejected one counted in `rejected` under the first
// constraint in declaration order it violates, the first `rejected.keep` of each reason stored in walk order: exactly
// what a check of every combination records, without visiting the subtrees a failing value settles. (A walk that
// needs no rejections is ParamSpace::enumerate's.)
void walk_product_space(const ParamSpace& space, const std::vector<std::vector<int64_t>>& grid,
                        std::vector<Config>& legal, std::size_t& combinations, RejectedSet& rejected);

}  // namespace tileforge::plan
