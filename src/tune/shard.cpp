// The static, cost-balanced assignment of a distributed tune's problems to ranks, and the cost it balances.
#include "tune/shard.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tileforge::tune {

Assignment assign_by_cost(const std::vector<double>& costs, int ranks) {
  const std::size_t r = std::size_t(std::max(ranks, 1));
  Assignment a;
  a.problems.resize(r);
  a.load_s.assign(r, 0.0);
  // NaN or a negative cost would make the sort's order undefined: they count as the smallest positive cost.
  auto cost = [&](std::size_t i) {
    const double c = costs[i];
    return std::isfinite(c) && c > 0 ? c : std::numeric_limits<double>::min();
  };
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  // stable_sort over indices in order: equal costs keep index order, so every rank sorts alike.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return cost(x) > cost(y); });
  for (std::size_t i : order) {
    // min_element returns the first least load: ties go to the lowest rank.
    const auto least = std::size_t(std::min_element(a.load_s.begin(), a.load_s.end()) - a.load_s.begin());
    a.problems[least].push_back(i);
    a.load_s[least] += cost(i);
  }
  return a;
}

double predicted_tune_cost_s(const Problem& problem, const Device& device, const TuneOptions& options) {
  const int candidates = std::max(options.ranks.empty() ? options.top : int(options.ranks.size()), 1);
  const int confirmed = std::min(candidates, options.leaders + (options.confirm_planner_pick ? 1 : 0));
  const double fixed_s = candidates * options.screen_time_s +
                         confirmed * (options.contract.min_time_s + options.contract.warmup_time_s);
  // Runs of the whole GEMM: per candidate its verification run and screening reps, per confirmed one the contract's
  // reps. At the profile's peak: real kernels run slower, but by a similar factor for every shape of one suite, and
  // only the ratios between problems matter here.
  const double runs = double(candidates) * (1 + options.screen_warmup_reps + options.screen_reps) +
                      double(confirmed) * options.contract.min_reps;
  const double peak_tflops = device.profile.peak_tflops(problem.precision.input, problem.precision.accum).value_or(1.0);
  const double work_s = runs * problem.flops() / (std::max(peak_tflops, 1e-3) * 1e12);
  return fixed_s + work_s;
}

}  // namespace tileforge::tune
