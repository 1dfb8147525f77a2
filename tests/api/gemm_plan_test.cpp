// GemmPlan: prepared once, run many times (other operands, column-major C, many threads at once) against float64.
#include <gtest/gtest.h>

#include <vector>

#include "support/test_support.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge {
namespace {

Options cpu_options() {
  Options o;
  o.device = "cpu";
  o.no_db = true;  // the planner's choice, whatever DB the machine running the tests holds
  return o;
}

TEST(GemmPlan, RunsAgainAndAgainOnFreshOperands) {
  Problem p = testing::make_problem(45, 38, 27, Layout::RC);
  p.alpha = 0.75;
  p.beta = 1.25;
  const GemmPlan plan = prepare(p, cpu_options());
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_EQ(plan.device(), "cpu");
  EXPECT_FALSE(plan.config().family.empty());
  EXPECT_FALSE(plan.source().empty());
  EXPECT_FALSE(plan.reason().empty());
  EXPECT_EQ(plan.workspace_bytes(), 0u);  // CPU kernels need no device scratch
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto ops = testing::make_operands(p, seed);
    const auto ref = testing::reference_for(ops);
    ASSERT_TRUE(plan.run(ops.a.data(), ops.b.data(), ops.c.data())) << seed;
    Status ok = verify::check(ops.problem, verify::compare(ops.problem, ops.c.data(), ref));
    EXPECT_TRUE(ok) << ok.to_string() << " seed " << seed;
  }
}

TEST(GemmPlan, ColumnMajorCRunsAsTheTransposedProblem) {
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
    Problem p = testing::make_problem(33, 52, 19, l, DType::bf16, DType::f32);
    p.c_order = Order::col_major;
    p.ldc = p.min_ldc() + 3;  // padded: ldc >= M for column-major C
    p.beta = 0.5;
    EXPECT_EQ(p.min_ldc(), 33);
    const GemmPlan plan = prepare(p, cpu_options());
    ASSERT_TRUE(plan) << plan.status().to_string();
    auto ops = testing::make_operands(p, 11);
    const auto ref = testing::reference_for(ops);
    ASSERT_TRUE(plan.run(ops.a.data(), ops.b.data(), ops.c.data()));
    Status ok = verify::check(ops.problem, verify::compare(ops.problem, ops.c.data(), ref));
    EXPECT_TRUE(ok) << ok.to_string() << " " << to_string(l);
    // The same call through gemm() gives the same bits (one kernel, one config).
    auto again = testing::make_operands(p, 11);
    ASSERT_TRUE(gemm(p, again.a.data(), again.b.data(), again.c.data(), cpu_options()));
    EXPECT_EQ(again.c, ops.c) << to_string(l);
  }
}

TEST(GemmPlan, ColumnMajorCRefusesARowMajorLeadingDimension) {
  Problem p = testing::make_problem(40, 8, 8);
  p.c_order = Order::col_major;
  p.ldc = 8;  // the row length N: too short for 40-element columns
  const GemmPlan plan = prepare(p, cpu_options());
  EXPECT_EQ(plan.status().code(), Code::invalid_argument);
  EXPECT_NE(plan.status().message().find("ldc = 8"), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find("column-major C"), std::string::npos) << plan.status().message();
}

TEST(GemmPlan, AnEmptyOrFailedPlanRefusesToRun) {
  float x = 1;
  const GemmPlan empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.run(&x, &x, &x).code(), Code::invalid_argument);
  Problem bad = testing::make_problem(4, 4, 4);
  bad.m = -1;
  const GemmPlan failed = prepare(bad, cpu_options());
  EXPECT_EQ(failed.status().code(), Code::invalid_argument);
  EXPECT_NE(failed.status().message().find("M = -1"), std::string::npos) << failed.status().message();
  EXPECT_EQ(failed.run(&x, &x, &x).code(), Code::invalid_argument);
  Options o = cpu_options();
  o.set = {{"NO_SUCH_PARAMETER", 1}};
  const GemmPlan pinned = prepare(testing::make_problem(8, 8, 8), o);
  EXPECT_FALSE(pinned);
  EXPECT_NE(pinned.status().message().find("NO_SUCH_PARAMETER"), std::string::npos) << pinned.status().message();
}

TEST(GemmPlan, RunChecksThePointersItIsGiven) {
  const Problem p = testing::make_problem(8, 8, 8);
  const GemmPlan plan = prepare(p, cpu_options());
  ASSERT_TRUE(plan);
  std::vector<float> a(64, 1), c(64);
  EXPECT_NE(plan.run(nullptr, a.data(), c.data()).message().find("a is null"), std::string::npos);
  EXPECT_NE(plan.run(a.data(), a.data(), a.data()).message().find("overlaps"), std::string::npos);
}

// One plan and gemm() itself, run from 8 threads at once, each on its own operands and shape: every result matches.
TEST(GemmPlan, EightThreadsShareOnePlanAndGemm) {
  const Problem shared = testing::make_problem(64, 48, 40, Layout::CR);
  const GemmPlan plan = prepare(shared, cpu_options());
  ASSERT_TRUE(plan);
  const auto failures = testing::run_in_threads(8, [&](int t) {
    std::string failure;
    for (int rep = 0; rep < 3; ++rep) {
      auto ops = testing::make_operands(shared, uint64_t(100 + t * 7 + rep));
      auto ref = testing::reference_for(ops);
      if (Status s = plan.run(ops.a.data(), ops.b.data(), ops.c.data()); !s) failure += s.to_string();
      if (Status ok = verify::check(ops.problem, verify::compare(ops.problem, ops.c.data(), ref)); !ok)
        failure += "plan: " + ok.to_string();
      // A shape of this thread's own through gemm(): plans are made and found concurrently.
      Problem own = testing::make_problem(17 + t, 9 + rep, 23, Layout::RR);
      own.c_order = t % 2 ? Order::col_major : Order::row_major;
      auto mine = testing::make_operands(own, uint64_t(500 + t));
      auto mine_ref = testing::reference_for(mine);
      if (Status s = gemm(own, mine.a.data(), mine.b.data(), mine.c.data(), cpu_options()); !s)
        failure += s.to_string();
      if (Status ok = verify::check(mine.problem, verify::compare(mine.problem, mine.c.data(), mine_ref)); !ok)
        failure += "gemm: " + ok.to_string();
    }
    return failure;
  });
  for (std::size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

}  // namespace
}  // namespace tileforge
