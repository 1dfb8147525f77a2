// Problem validation: every refused argument is named with what is allowed; valid edge cases pass.
#include <gtest/gtest.h>

#include "tileforge/tileforge.hpp"

namespace tileforge {
namespace {

Problem base(Layout l = Layout::RR) {
  Problem p;
  p.m = 4;
  p.n = 5;
  p.k = 6;
  p.layout = l;
  return p;
}

void expect_refused(const Problem& p, const std::string& needle) {
  Status s = p.validate();
  ASSERT_FALSE(s.ok()) << needle;
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("allowed"), std::string::npos) << s.message();
}

TEST(Problem, TightLeadingDimensionsPerLayout) {
  EXPECT_EQ(base(Layout::RR).normalized().lda, 6);
  EXPECT_EQ(base(Layout::RR).normalized().ldb, 5);
  EXPECT_EQ(base(Layout::CC).normalized().lda, 4);
  EXPECT_EQ(base(Layout::CC).normalized().ldb, 6);
  EXPECT_EQ(base().normalized().ldc, 5);
  EXPECT_EQ(base().normalized().stride_c, 20);
  EXPECT_TRUE(base().validate().ok());
}

TEST(Problem, ZeroSizesAreValid) {
  for (auto dims : {std::array<int64_t, 3>{0, 5, 6}, {4, 0, 6}, {4, 5, 0}, {0, 0, 0}}) {
    Problem p = base();
    p.m = dims[0];
    p.n = dims[1];
    p.k = dims[2];
    EXPECT_TRUE(p.validate().ok()) << p.describe();
  }
}

TEST(Problem, RefusesNegativeSizesAndBatch) {
  Problem p = base();
  p.m = -1;
  expect_refused(p, "M = -1");
  p = base();
  p.k = -7;
  expect_refused(p, "K = -7");
  p = base();
  p.batch = 0;
  expect_refused(p, "batch = 0");
}

TEST(Problem, RefusesShortLeadingDimensions) {
  Problem p = base(Layout::RR);
  p.lda = 5;
  expect_refused(p, "lda = 5");
  p = base(Layout::CR);
  p.lda = 3;
  expect_refused(p, "lda = 3");
  p = base(Layout::RC);
  p.ldb = 5;
  expect_refused(p, "ldb = 5");
  p = base();
  p.ldc = 4;
  expect_refused(p, "ldc = 4");
  p = base();
  p.ldc = -8;
  expect_refused(p, "ldc = -8");
}

TEST(Problem, RefusesOverflow) {
  Problem p = base();
  p.m = int64_t(1) << 40;
  p.k = int64_t(1) << 40;
  expect_refused(p, "overflow");
  p = base();
  p.lda = int64_t(1) << 62;
  expect_refused(p, "overflow");
  p = base();
  p.batch = int64_t(1) << 60;
  expect_refused(p, "overflows");
}

TEST(Problem, RefusesOverlappingBatchStrides) {
  Problem p = base();
  p.batch = 2;
  p.stride_c = 19;
  expect_refused(p, "stride_c = 19");
}

TEST(Problem, PrecisionPolicy) {
  Problem p = base();
  p.precision = {DType::f32, DType::f16, DType::f32};
  expect_refused(p, "out_dtype f16");
  p.precision = {DType::bf16, DType::f16, DType::f32};
  expect_refused(p, "out_dtype f16");
  p.precision = {DType::bf16, DType::bf16, DType::f16};
  expect_refused(p, "accum f16");
  p.precision = {DType::f16, DType::f16, DType::f16};
  EXPECT_TRUE(p.validate().ok());
  p.precision = {DType::bf16, DType::f32, DType::f32};
  EXPECT_TRUE(p.validate().ok());
}

}  // namespace
}  // namespace tileforge
