// The contract's summary of timed reps: median, quartiles, and the spread rule on the interquartile range, which one
// outlying rep does not trip and a disturbed run does.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "measure/protocol.hpp"

namespace tileforge::measure {
namespace {

TEST(MeasureProtocol, SummaryHasTheMedianAndQuartilesOfTheReps) {
  std::vector<double> reps;
  for (int i = 1; i <= 100; ++i) reps.push_back(double(i));
  std::shuffle(reps.begin(), reps.end(), std::mt19937(7));  // the order they were timed in does not matter
  const Timing t = summarize(reps);
  EXPECT_EQ(t.reps, 100);
  EXPECT_DOUBLE_EQ(t.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(t.max_ms, 100.0);
  EXPECT_DOUBLE_EQ(t.median_ms, 50.5);
  // Linear interpolation between order statistics: positions 0.25 x 99 and 0.75 x 99.
  EXPECT_DOUBLE_EQ(t.q1_ms, 25.75);
  EXPECT_DOUBLE_EQ(t.q3_ms, 75.25);
  EXPECT_DOUBLE_EQ(t.iqr_share(), 49.5 / 50.5);
  const Timing one = summarize({3.0});
  EXPECT_DOUBLE_EQ(one.q1_ms, 3.0);
  EXPECT_DOUBLE_EQ(one.q3_ms, 3.0);
  EXPECT_FALSE(one.spread());
  EXPECT_FALSE(summarize({}).spread());
}

TEST(MeasureProtocol, OneOutlyingRepIsNotASpreadButADisturbedRunIs) {
  // 99 reps within 2% and one rep descheduled for 10x: max/min is 10, the quartiles do not move.
  std::vector<double> quiet;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> jitter(1.0, 1.02);
  for (int i = 0; i < 99; ++i) quiet.push_back(jitter(rng));
  quiet.push_back(10.0);
  const Timing q = summarize(quiet);
  EXPECT_GT(q.max_ms / q.min_ms, 9.0);
  EXPECT_FALSE(q.spread()) << q.iqr_share();
  // A third of the reps slowed by half (a neighbour taking a core part of the time): flagged.
  std::vector<double> loaded;
  for (int i = 0; i < 100; ++i) loaded.push_back(i % 3 == 0 ? 1.5 * jitter(rng) : jitter(rng));
  const Timing l = summarize(loaded);
  EXPECT_TRUE(l.spread()) << l.iqr_share();
}

}  // namespace
}  // namespace tileforge::measure
