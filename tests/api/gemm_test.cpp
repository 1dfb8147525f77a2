// tileforge::gemm(): results against float64 in every layout and dtype, null pointers, empty and beta-only calls.
#include <gtest/gtest.h>

#include <cmath>

#include "support/test_support.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge {
namespace {

using testing::make_operands;
using testing::make_problem;
using testing::reference_for;

struct Case {
  int64_t m, n, k;
  Layout layout;
  DType in, out;
};

class GemmApi : public ::testing::TestWithParam<Case> {};

TEST_P(GemmApi, MatchesTheReference) {
  const Case c = GetParam();
  Problem p = make_problem(c.m, c.n, c.k, c.layout, c.in, c.out);
  p.alpha = 0.75;
  p.beta = 0.5;
  auto ops = make_operands(p, 11);
  const auto ref = reference_for(ops);
  Status s = gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data());
  ASSERT_TRUE(s) << s.to_string();
  const auto report = verify::compare(ops.problem, ops.c.data(), ref);
  Status ok = verify::check(ops.problem, report);
  EXPECT_TRUE(ok) << ok.to_string() << " on " << ops.problem.describe();
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
    v.push_back({31, 17, 23, l, DType::f32, DType::f32});
    v.push_back({64, 48, 80, l, DType::f32, DType::f32});
    v.push_back({29, 33, 19, l, DType::bf16, DType::f32});
    v.push_back({16, 24, 40, l, DType::bf16, DType::bf16});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Layouts, GemmApi, ::testing::ValuesIn(cases()));

TEST(GemmApiArgs, NullPointersAreNamed) {
  Problem p = make_problem(4, 5, 6);
  auto ops = make_operands(p, 1);
  struct Null {
    const void* a;
    const void* b;
    void* c;
    const char* name;
  } nulls[] = {{nullptr, ops.b.data(), ops.c.data(), "a is null"},
               {ops.a.data(), nullptr, ops.c.data(), "b is null"},
               {ops.a.data(), ops.b.data(), nullptr, "c is null"}};
  for (const auto& n : nulls) {
    Status s = gemm(p, n.a, n.b, n.c);
    EXPECT_EQ(s.code(), Code::invalid_argument);
    EXPECT_NE(s.message().find(n.name), std::string::npos) << s.message();
  }
}

TEST(GemmApiArgs, BadProblemsAreRefused) {
  Problem p = make_problem(4, 5, 6);
  auto ops = make_operands(p, 1);
  Problem bad = p;
  bad.m = -1;
  EXPECT_EQ(gemm(bad, ops.a.data(), ops.b.data(), ops.c.data()).code(), Code::invalid_argument);
  bad = p;
  bad.ldb = 2;
  Status s = gemm(bad, ops.a.data(), ops.b.data(), ops.c.data());
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("ldb"), std::string::npos);
  Options o;
  o.device = "tpu";
  s = gemm(p, ops.a.data(), ops.b.data(), ops.c.data(), o);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("tpu"), std::string::npos) << s.message();
  o = {};
  o.set = {{"NO_SUCH_PARAMETER", 3}};
  s = gemm(p, ops.a.data(), ops.b.data(), ops.c.data(), o);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("NO_SUCH_PARAMETER"), std::string::npos) << s.message();
  o = {};
  o.threads = -2;
  EXPECT_EQ(gemm(p, ops.a.data(), ops.b.data(), ops.c.data(), o).code(), Code::invalid_argument);
}

TEST(GemmApiArgs, KZeroScalesCByBeta) {
  Problem p = make_problem(3, 4, 0);
  p.beta = 0.5;
  std::vector<float> c(12);
  for (int i = 0; i < 12; ++i) c[i] = float(i);
  ASSERT_TRUE(gemm(p, nullptr, nullptr, c.data()));
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(c[i], 0.5f * float(i));
  p.beta = 0.0;
  for (auto& x : c) x = std::nanf("");
  ASSERT_TRUE(gemm(p, nullptr, nullptr, c.data()));  // beta = 0 does not read C, so NaN does not survive
  for (float x : c) EXPECT_EQ(x, 0.0f);
}

TEST(GemmApiArgs, EmptyOutputsAreValid) {
  EXPECT_TRUE(gemm(make_problem(0, 4, 5), nullptr, nullptr, nullptr));
  EXPECT_TRUE(gemm(make_problem(4, 0, 5), nullptr, nullptr, nullptr));
  EXPECT_TRUE(gemm(make_problem(0, 0, 0), nullptr, nullptr, nullptr));
}

// An empty C with a vast batch count (a fuzzer's input: 0 x 0 x 40, batch 1.8e17) has nothing to write and returns at
// once; walking its entries one by one would not end.
TEST(GemmApiArgs, EmptyOutputsWithAVastBatchReturn) {
  for (Problem p : {make_problem(0, 4, 5), make_problem(4, 0, 5), make_problem(0, 0, 40)}) {
    p.batch = int64_t(1) << 50;
    Options o;
    o.device = "cpu";
    o.threads = 1;
    const Status st = gemm(p, nullptr, nullptr, nullptr, o);
    EXPECT_TRUE(st) << st.to_string();
  }
}

TEST(GemmApiArgs, PinnedConfigRuns) {
  Problem p = make_problem(20, 20, 20);
  auto ops = make_operands(p, 3);
  const auto ref = reference_for(ops);
  Options o;
  o.device = "cpu";
  o.threads = 1;
  ASSERT_TRUE(gemm(ops.problem, ops.a.data(), ops.b.data(), ops.c.data(), o));
  EXPECT_TRUE(verify::check(ops.problem, verify::compare(ops.problem, ops.c.data(), ref)));
}

TEST(GemmApiArgs, VersionIsTheProjects) { EXPECT_EQ(version(), "0.1.0"); }

}  // namespace
}  // namespace tileforge
