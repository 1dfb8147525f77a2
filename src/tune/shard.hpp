// Splitting a tune's problems among the ranks of a distributed (MPI) tune: a static assignment balanced by cost.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/backend.hpp"
#include "tune/tune.hpp"

namespace tileforge::tune {

// Which problems (indices into the caller's list) each rank tunes, and the predicted seconds that adds up to.
struct Assignment {
  std::vector<std::vector<std::size_t>> problems;  // per rank, in the order the rank tunes them (costliest first)
  std::vector<double> load_s;                      // per rank: the sum of its problems' costs
};

// Longest-predicted-first greedy: problems sorted by cost, descending (ties by index), each given to the rank with
// the least load so far (ties to the lowest rank). Whole problems, never split: a problem's candidates are compared
// with each other, so they must be measured on one device. A pure function of (costs, ranks), so that every rank
// computes the same assignment without talking to the others; its makespan is at most 4/3 of the optimum (Graham).
// ranks >= 1; a cost that is not finite and positive counts as the smallest positive one.
Assignment assign_by_cost(const std::vector<double>& costs, int ranks);

// The seconds tune() is predicted to spend on a problem, for balancing only (not shown as a promise): per candidate
// the screening's minimum time and per confirmed one the contract's, plus the GEMM's work at the profile's peak for
// every run those take (screening reps, confirmation reps, the verification). The fixed part dominates small shapes,
// the work part large ones, as in measured tunes.
double predicted_tune_cost_s(const Problem& problem, const Device& device, const TuneOptions& options);

}  // namespace tileforge::tune
