// The distributed tune's assignment of problems to ranks: deterministic, every problem exactly once, balanced.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "tune/shard.hpp"

namespace tileforge::tune {
namespace {

// Every index 0..n-1 appears in exactly one rank's list.
void expect_each_once(const Assignment& a, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& list : a.problems)
    for (std::size_t i : list) {
      ASSERT_LT(i, n);
      ++seen[i];
    }
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << "problem " << i;
}

TEST(Shard, EveryProblemExactlyOnceForAnyRankCount) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.01, 100);
  for (std::size_t n : {0u, 1u, 2u, 7u, 50u, 501u}) {
    std::vector<double> costs(n);
    for (double& c : costs) c = cost(rng);
    for (int ranks : {1, 2, 3, 8, 64}) {
      const Assignment a = assign_by_cost(costs, ranks);
      ASSERT_EQ(a.problems.size(), std::size_t(ranks));
      ASSERT_EQ(a.load_s.size(), std::size_t(ranks));
      expect_each_once(a, n);
    }
  }
}

TEST(Shard, DeterministicIncludingTies) {
  // Equal costs everywhere: the order of the sort and the choice among equal loads decide, and must not vary.
  const std::vector<double> costs(40, 1.5);
  const Assignment a = assign_by_cost(costs, 3), b = assign_by_cost(costs, 3);
  EXPECT_EQ(a.problems, b.problems);
  // Ties by index, to the lowest rank: round robin.
  EXPECT_EQ(a.problems[0].front(), 0u);
  EXPECT_EQ(a.problems[1].front(), 1u);
  EXPECT_EQ(a.problems[2].front(), 2u);
}

TEST(Shard, BalancedWithinTheLargestProblem) {
  // The greedy's bound: no rank's load exceeds the least one's by more than the largest single cost.
  std::mt19937 rng(11);
  std::lognormal_distribution<double> cost(0.0, 1.5);  // a few large shapes among many small ones, as suites are
  std::vector<double> costs(300);
  for (double& c : costs) c = cost(rng);
  const double largest = *std::max_element(costs.begin(), costs.end());
  for (int ranks : {2, 4, 16}) {
    const Assignment a = assign_by_cost(costs, ranks);
    const auto [lo, hi] = std::minmax_element(a.load_s.begin(), a.load_s.end());
    EXPECT_LE(*hi - *lo, largest + 1e-9) << ranks << " ranks";
    EXPECT_NEAR(std::accumulate(a.load_s.begin(), a.load_s.end(), 0.0),
                std::accumulate(costs.begin(), costs.end(), 0.0), 1e-6);
  }
}

TEST(Shard, CostliestFirstWithinARankAndOneBigProblemAlone) {
  // One problem as costly as all others together: it gets a rank to itself on two ranks.
  const std::vector<double> costs = {1, 1, 10, 1, 1, 1, 1, 1, 1, 1, 1};
  const Assignment a = assign_by_cost(costs, 2);
  EXPECT_EQ(a.problems[0], std::vector<std::size_t>{2});
  EXPECT_EQ(a.problems[1].size(), 10u);
  for (const auto& list : a.problems) {
    for (std::size_t i = 1; i < list.size(); ++i) EXPECT_GE(costs[list[i - 1]], costs[list[i]]);
  }
}

TEST(Shard, BadCostsStillAssignedOnce) {
  const std::vector<double> costs = {std::nan(""), -1, 0, 3, std::numeric_limits<double>::infinity()};
  const Assignment a = assign_by_cost(costs, 2);
  expect_each_once(a, costs.size());
  EXPECT_EQ(assign_by_cost(costs, 2).problems, a.problems);
}

TEST(Shard, PredictedCostGrowsWithTheWorkAndTheCandidates) {
  Device cpu;  // the default profile: no peaks, so the cost uses 1 TFLOP/s; only the ratios matter
  TuneOptions o;
  Problem small{64, 64, 64}, large{2048, 2048, 2048};
  const double s = predicted_tune_cost_s(small, cpu, o), l = predicted_tune_cost_s(large, cpu, o);
  EXPECT_GT(s, 0);
  EXPECT_GT(l, s);
  TuneOptions fewer = o;
  fewer.top = 2;
  EXPECT_LT(predicted_tune_cost_s(small, cpu, fewer), s);
}

}  // namespace
}  // namespace tileforge::tune
