// What every family's cost model shares: how terms combine into one prediction, and a cost that cannot be given.
#include <gtest/gtest.h>

#include <cmath>

#include "plan/cost_constants.hpp"
#include "plan/cost_model.hpp"

namespace tileforge::plan {
namespace {

TEST(PlanCostModel, TheLargestTermBindsAndTheOtherStreamsLeak) {
  Cost c;
  combine_terms(c, {{"compute", 3.0, true}, {"HBM", 2.0, true}, {"L2", 1.0, true}, {"latency", 2.5, false}});
  EXPECT_EQ(c.bound, "compute");
  EXPECT_DOUBLE_EQ(c.body_s, 3.0 + constants::kOverlapLeak * (2.0 + 1.0));
  // A bound (latency) that binds adds no leak of its own, but the streams under it still leak.
  Cost d;
  combine_terms(d, {{"compute", 1.0, true}, {"latency", 4.0, false}, {"HBM", 2.0, true}});
  EXPECT_EQ(d.bound, "latency");
  EXPECT_DOUBLE_EQ(d.body_s, 4.0 + constants::kOverlapLeak * 1.0);
}

TEST(PlanCostModel, AnInvalidCostIsInfiniteAndSaysWhy) {
  const Cost c = invalid_cost("the profile records no memory bandwidth");
  EXPECT_FALSE(c.valid);
  EXPECT_TRUE(std::isinf(c.seconds));
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0], "the profile records no memory bandwidth");
}

}  // namespace
}  // namespace tileforge::plan
