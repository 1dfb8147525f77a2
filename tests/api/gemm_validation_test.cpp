// tileforge::gemm() refuses what it cannot compute right: enums outside their range (Layout(7) was computed as CC,
// DType(9) returned ok and wrote nothing), C sharing bytes with A or B, and thread counts no machine has.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/test_support.hpp"
#include "tileforge/tileforge.h"
#include "tileforge/tileforge.hpp"

namespace tileforge {
namespace {

using testing::make_operands;
using testing::make_problem;

void expect_refused(const Status& s, std::initializer_list<const char*> mentions) {
  EXPECT_EQ(s.code(), Code::invalid_argument) << s.to_string();
  for (const char* m : mentions) EXPECT_NE(s.message().find(m), std::string::npos) << m << " in: " << s.message();
}

TEST(GemmValidation, EnumsOutsideTheirRangeAreRefusedByName) {
  Problem p = make_problem(4, 5, 6);
  auto ops = make_operands(p, 1);
  const std::vector<unsigned char> before = ops.c;

  Problem layout = p;
  layout.layout = static_cast<Layout>(7);
  expect_refused(gemm(layout, ops.a.data(), ops.b.data(), ops.c.data()), {"layout", "7", "RR, RC, CR, CC"});
  EXPECT_EQ(layout.validate().code(), Code::invalid_argument);

  Problem input = p;
  input.precision.input = static_cast<DType>(9);
  expect_refused(gemm(input, ops.a.data(), ops.b.data(), ops.c.data()), {"precision.input", "9", "f32, f16, bf16"});
  Problem output = p;
  output.precision.output = static_cast<DType>(-1);
  expect_refused(gemm(output, ops.a.data(), ops.b.data(), ops.c.data()), {"precision.output", "-1", "f32"});
  Problem accum = p;
  accum.precision.accum = static_cast<DType>(3);
  expect_refused(gemm(accum, ops.a.data(), ops.b.data(), ops.c.data()), {"precision.accum", "3", "f32"});
  EXPECT_EQ(ops.c, before);  // nothing was written
}

TEST(GemmValidation, COverlappingAOrBIsRefused) {
  const Problem p = make_problem(8, 8, 8);  // f32, tight: 64 elements, 256 bytes each
  std::vector<float> buffer(64 * 4, 1.0f);
  float* a = buffer.data();
  float* b = buffer.data() + 64;
  // C is A, C is B, and C starting half way into A (so it also covers the first half of B).
  expect_refused(gemm(p, a, b, a), {"c overlaps a", "allowed"});
  expect_refused(gemm(p, a, b, b), {"c overlaps b", "allowed"});
  expect_refused(gemm(p, a, b, a + 32), {"c overlaps a"});
  expect_refused(gemm(p, a, b, b + 63), {"c overlaps b"});

  // Batched: C's second matrix overlaps B's first.
  Problem batched = make_problem(4, 4, 4);
  batched.batch = 2;
  std::vector<float> more(16 * 6, 1.0f);
  expect_refused(gemm(batched, more.data(), more.data() + 48, more.data() + 32), {"c overlaps b"});

  // Adjacent is not overlapping, and A and B may share storage (both are only read).
  EXPECT_TRUE(gemm(p, a, b, b + 64));
  EXPECT_TRUE(gemm(p, a, a, b + 64));
  // Without a product (K = 0) A and B are not read: C is only scaled, wherever A is.
  const Problem scale = make_problem(8, 8, 0);
  EXPECT_TRUE(gemm(scale, a, a, a));
}

TEST(GemmValidation, AnOverlapIsRefusedThroughTheCApiToo) {
  tfHandle_t h = nullptr;
  ASSERT_EQ(tfCreate(&h), TF_STATUS_SUCCESS);
  std::vector<float> buffer(64 * 2, 1.0f);
  const float alpha = 1, beta = 0;
  EXPECT_EQ(tfGemmEx(h, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 8, 8, 8, &alpha, buffer.data(), TF_R_32F, 8, buffer.data() + 64,
                     TF_R_32F, 8, &beta, buffer.data(), TF_R_32F, 8, TF_COMPUTE_32F),
            TF_STATUS_INVALID_ARGUMENT);
  const std::string message = tfGetLastErrorMessage(h);
  EXPECT_NE(message.find("tfGemmEx"), std::string::npos) << message;
  EXPECT_NE(message.find("overlaps"), std::string::npos) << message;
  tfDestroy(h);
}

TEST(GemmValidation, ThreadCountsBeyondTheBoundAreRefused) {
  Problem p = make_problem(4, 5, 6);
  auto ops = make_operands(p, 1);
  Options o;
  o.threads = 100000000;
  expect_refused(gemm(p, ops.a.data(), ops.b.data(), ops.c.data(), o), {"options.threads", "100000000", "1 to 65536"});

  tfHandle_t h = nullptr;
  ASSERT_EQ(tfCreate(&h), TF_STATUS_SUCCESS);
  EXPECT_EQ(tfSetThreads(h, 100000000), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tfGetLastErrorMessage(h)).find("1 to 65536"), std::string::npos) << tfGetLastErrorMessage(h);
  EXPECT_EQ(tfSetThreads(h, 2), TF_STATUS_SUCCESS);
  tfDestroy(h);
}

}  // namespace
}  // namespace tileforge
