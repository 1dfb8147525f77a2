// The C API: results against float64 (all layouts, f32 and bf16, batched) and a named status for each bad argument.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "tileforge/tileforge.h"

namespace tileforge {
namespace {

tfLayout layout_a(Layout l) { return a_row_major(l) ? TF_ROW_MAJOR : TF_COL_MAJOR; }
tfLayout layout_b(Layout l) { return b_row_major(l) ? TF_ROW_MAJOR : TF_COL_MAJOR; }
tfDataType dtype(DType t) { return t == DType::f32 ? TF_R_32F : t == DType::f16 ? TF_R_16F : TF_R_16BF; }

class CApi : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(tfCreate(&handle), TF_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(tfDestroy(handle), TF_STATUS_SUCCESS); }
  tfHandle_t handle = nullptr;
};

TEST_F(CApi, MatchesTheReferenceInEveryLayoutDtypeAndOrderOfC) {
  for (DType in : {DType::f32, DType::bf16}) {
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
     for (Order order : {Order::row_major, Order::col_major}) {
      Problem p = testing::make_problem(37, 21, 29, l, in, DType::f32);
      p.c_order = order;
      p.alpha = 1.5;
      p.beta = -0.25;
      // Padded leading dimensions, as a caller's sub-matrix has.
      p.lda = p.min_lda() + 3;
      p.ldb = p.min_ldb() + 1;
      p.ldc = p.min_ldc() + 2;
      auto ops = testing::make_operands(p, 5);
      const auto ref = testing::reference_for(ops);
      const float alpha = 1.5f, beta = -0.25f;
      const tfLayout lc = order == Order::row_major ? TF_ROW_MAJOR : TF_COL_MAJOR;
      tfStatus_t s = tfGemmEx(handle, layout_a(l), layout_b(l), lc, p.m, p.n, p.k, &alpha, ops.a.data(), dtype(in),
                              p.lda, ops.b.data(), dtype(in), p.ldb, &beta, ops.c.data(), TF_R_32F, p.ldc,
                              TF_COMPUTE_32F);
      ASSERT_EQ(s, TF_STATUS_SUCCESS) << tfGetLastErrorMessage(handle);
      EXPECT_STREQ(tfGetLastErrorMessage(handle), "");
      Status ok = verify::check(ops.problem, verify::compare(ops.problem, ops.c.data(), ref));
      EXPECT_TRUE(ok) << ok.to_string() << " " << ops.problem.describe();
     }
    }
  }
}

TEST_F(CApi, StridedBatchedMatchesTheReference) {
  ASSERT_EQ(tfSetThreads(handle, 1), TF_STATUS_SUCCESS);
  Problem p = testing::make_problem(13, 11, 7, Layout::CR, DType::bf16, DType::bf16);
  p.batch = 3;
  p.stride_a = p.span_a() + 5;
  p.stride_b = p.span_b() + 2;
  p.stride_c = p.span_c() + 1;
  auto ops = testing::make_operands(p, 9);
  const auto ref = testing::reference_for(ops);
  const float alpha = 1.0f, beta = 0.0f;
  const Problem& q = ops.problem;
  tfStatus_t s = tfGemmStridedBatchedEx(handle, TF_COL_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, q.m, q.n, q.k, &alpha, ops.a.data(),
                                        TF_R_16BF, q.lda, q.stride_a, ops.b.data(), TF_R_16BF, q.ldb, q.stride_b, &beta,
                                        ops.c.data(), TF_R_16BF, q.ldc, q.stride_c, q.batch, TF_COMPUTE_32F);
  ASSERT_EQ(s, TF_STATUS_SUCCESS) << tfGetLastErrorMessage(handle);
  Status ok = verify::check(q, verify::compare(q, ops.c.data(), ref));
  EXPECT_TRUE(ok) << ok.to_string();
}

TEST_F(CApi, KZeroScalesByBeta) {
  float c[6] = {1, 2, 3, 4, 5, 6};
  const float alpha = 1.0f, beta = 2.0f;
  ASSERT_EQ(tfGemmEx(handle, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 2, 3, 0, &alpha, nullptr, TF_R_32F, 1, nullptr, TF_R_32F, 3,
                     &beta, c, TF_R_32F, 3, TF_COMPUTE_32F),
            TF_STATUS_SUCCESS)
      << tfGetLastErrorMessage(handle);
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(c[i], 2.0f * float(i + 1));
}

// Each bad argument of tfGemmStridedBatchedEx in turn, from a valid call.
TEST_F(CApi, EveryBadArgumentHasANamedStatus) {
  struct Call {
    tfLayout la = TF_ROW_MAJOR, lb = TF_ROW_MAJOR, lc = TF_ROW_MAJOR;
    int64_t m = 4, n = 5, k = 6;
    const void* alpha;
    const void* A;
    tfDataType at = TF_R_32F;
    int64_t lda = 6, sa = 24;
    const void* B;
    tfDataType bt = TF_R_32F;
    int64_t ldb = 5, sb = 30;
    const void* beta;
    void* C;
    tfDataType ct = TF_R_32F;
    int64_t ldc = 5, sc = 20, batch = 2;
    tfComputeType compute = TF_COMPUTE_32F;
  };
  std::vector<float> a(48, 1.0f), b(60, 1.0f), c(40, 0.0f);
  const float one = 1.0f, zero = 0.0f;
  const Call good{.alpha = &one, .A = a.data(), .B = b.data(), .beta = &zero, .C = c.data()};
  auto invoke = [&](const Call& x) {
    return tfGemmStridedBatchedEx(handle, x.la, x.lb, x.lc, x.m, x.n, x.k, x.alpha, x.A, x.at, x.lda, x.sa, x.B, x.bt, x.ldb,
                                  x.sb, x.beta, x.C, x.ct, x.ldc, x.sc, x.batch, x.compute);
  };
  ASSERT_EQ(invoke(good), TF_STATUS_SUCCESS) << tfGetLastErrorMessage(handle);

  struct Bad {
    const char* name;
    std::function<void(Call&)> spoil;
  };
  const std::vector<Bad> bads = {
      {"layoutA", [](Call& x) { x.la = tfLayout(7); }},
      {"layoutB", [](Call& x) { x.lb = tfLayout(-1); }},
      {"layoutC", [](Call& x) { x.lc = tfLayout(2); }},
      {"ldc = 3", [](Call& x) {  // column-major C: ldc >= m = 4
         x.lc = TF_COL_MAJOR;
         x.ldc = 3;
       }},
      {"m = -1", [](Call& x) { x.m = -1; }},
      {"n = -2", [](Call& x) { x.n = -2; }},
      {"k = -3", [](Call& x) { x.k = -3; }},
      {"alpha", [](Call& x) { x.alpha = nullptr; }},
      {"A is null", [](Call& x) { x.A = nullptr; }},
      {"Atype", [](Call& x) { x.at = tfDataType(9); }},
      {"lda", [](Call& x) { x.lda = 5; }},
      {"strideA", [](Call& x) { x.sa = 3; }},
      {"B is null", [](Call& x) { x.B = nullptr; }},
      {"Btype", [](Call& x) { x.bt = TF_R_16BF; }},
      {"ldb", [](Call& x) { x.ldb = 0; }},
      {"strideB", [](Call& x) { x.sb = 0; }},
      {"beta", [](Call& x) { x.beta = nullptr; }},
      {"C is null", [](Call& x) { x.C = nullptr; }},
      {"Ctype", [](Call& x) { x.ct = tfDataType(-4); }},
      {"ldc", [](Call& x) { x.ldc = 4; }},
      {"strideC", [](Call& x) { x.sc = 19; }},
      {"batchCount", [](Call& x) { x.batch = 0; }},
      {"computeType", [](Call& x) { x.compute = tfComputeType(5); }},
      {"accum f16", [](Call& x) { x.compute = TF_COMPUTE_16F; }},  // f16 accumulation needs f16 inputs
      {"out_dtype", [](Call& x) { x.ct = TF_R_16BF; }},            // f32 inputs give f32 outputs
  };
  for (const Bad& bad : bads) {
    Call x = good;
    bad.spoil(x);
    EXPECT_EQ(invoke(x), TF_STATUS_INVALID_ARGUMENT) << bad.name;
    const std::string msg = tfGetLastErrorMessage(handle);
    EXPECT_NE(msg.find(bad.name), std::string::npos) << bad.name << ": " << msg;
    EXPECT_NE(msg.find("allowed"), std::string::npos) << bad.name << ": " << msg;
  }
  // A success clears the last message.
  ASSERT_EQ(invoke(good), TF_STATUS_SUCCESS);
  EXPECT_STREQ(tfGetLastErrorMessage(handle), "");
}


TEST_F(CApi, SettingsAreCheckedWhereTheyAreMade) {
  EXPECT_EQ(tfSetDevice(handle, "gpu"), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tfGetLastErrorMessage(handle)).find("cuda:N"), std::string::npos);
  EXPECT_EQ(tfSetDevice(handle, "cuda:x"), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tfSetDevice(handle, nullptr), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tfSetDevice(handle, "cpu"), TF_STATUS_SUCCESS);
  EXPECT_STREQ(tfGetLastErrorMessage(handle), "");
  EXPECT_EQ(tfSetWorkspace(handle, nullptr, 64), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tfGetLastErrorMessage(handle)).find("workspaceBytes = 64"), std::string::npos);
  EXPECT_EQ(tfSetParam(handle, "", 4), TF_STATUS_INVALID_ARGUMENT);
  int marker = 0;
  void* stream = nullptr;
  EXPECT_EQ(tfSetStream(handle, &marker), TF_STATUS_SUCCESS);
  EXPECT_EQ(tfGetStream(handle, &stream), TF_STATUS_SUCCESS);
  EXPECT_EQ(stream, &marker);
  EXPECT_EQ(tfGetStream(handle, nullptr), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tfSetStream(handle, nullptr), TF_STATUS_SUCCESS);
}

// A pin the family does not have is refused at the call, naming it; a profile that does not exist likewise; with
// the pin cleared and the DB off, the call runs.
TEST_F(CApi, PinsProfileAndDatabaseReachTheCall) {
  std::vector<float> a(64, 0.5f), b(64, 0.25f), c(64, 0.0f);
  const float one = 1.0f, zero = 0.0f;
  auto call = [&] {
    return tfGemmEx(handle, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 8, 8, 8, &one, a.data(), TF_R_32F, 8, b.data(),
                    TF_R_32F, 8, &zero, c.data(), TF_R_32F, 8, TF_COMPUTE_32F);
  };
  ASSERT_EQ(tfSetDevice(handle, "cpu"), TF_STATUS_SUCCESS);
  ASSERT_EQ(tfSetParam(handle, "NOT_A_PARAMETER", 3), TF_STATUS_SUCCESS);
  EXPECT_NE(call(), TF_STATUS_SUCCESS);
  EXPECT_NE(std::string(tfGetLastErrorMessage(handle)).find("NOT_A_PARAMETER"), std::string::npos)
      << tfGetLastErrorMessage(handle);
  ASSERT_EQ(tfClearParams(handle), TF_STATUS_SUCCESS);
  ASSERT_EQ(tfSetProfile(handle, "no-such-chip"), TF_STATUS_SUCCESS);
  EXPECT_NE(call(), TF_STATUS_SUCCESS);
  EXPECT_NE(std::string(tfGetLastErrorMessage(handle)).find("no-such-chip"), std::string::npos)
      << tfGetLastErrorMessage(handle);
  ASSERT_EQ(tfSetProfile(handle, nullptr), TF_STATUS_SUCCESS);
  ASSERT_EQ(tfUseDatabase(handle, 0), TF_STATUS_SUCCESS);
  ASSERT_EQ(call(), TF_STATUS_SUCCESS) << tfGetLastErrorMessage(handle);
  for (float v : c) EXPECT_FLOAT_EQ(v, 8 * 0.5f * 0.25f);
  // The non-deterministic policy (float-atomic sums allowed) is a setting like the others; the CPU sums in order.
  EXPECT_EQ(tfSetDeterministic(nullptr, 0), TF_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(tfSetDeterministic(handle, 0), TF_STATUS_SUCCESS);
  std::fill(c.begin(), c.end(), -1.0f);
  ASSERT_EQ(call(), TF_STATUS_SUCCESS) << tfGetLastErrorMessage(handle);
  for (float v : c) EXPECT_FLOAT_EQ(v, 8 * 0.5f * 0.25f);
  ASSERT_EQ(tfSetDeterministic(handle, 1), TF_STATUS_SUCCESS);
}

TEST_F(CApi, APlanRunsOnOtherOperandsAndSaysWhatRuns) {
  Problem p = testing::make_problem(29, 31, 17, Layout::CC);
  p.c_order = Order::col_major;
  const float alpha = 2.0f, beta = 0.0f;
  tfGemmPlan_t plan = nullptr;
  ASSERT_EQ(tfGemmPlanCreate(handle, &plan, TF_COL_MAJOR, TF_COL_MAJOR, TF_COL_MAJOR, p.m, p.n, p.k, &alpha, TF_R_32F,
                             p.m, 0, TF_R_32F, p.k, 0, &beta, TF_R_32F, p.m, 0, 1, TF_COMPUTE_32F),
            TF_STATUS_SUCCESS)
      << tfGetLastErrorMessage(handle);
  EXPECT_NE(std::string(tfGemmPlanDescribe(plan)).find(" on cpu"), std::string::npos) << tfGemmPlanDescribe(plan);
  size_t workspace = 1;
  EXPECT_EQ(tfGemmPlanGetWorkspaceSize(plan, &workspace), TF_STATUS_SUCCESS);
  EXPECT_EQ(workspace, 0u);
  p.alpha = 2.0;
  for (uint64_t seed : {3u, 4u}) {
    auto ops = testing::make_operands(p, seed);
    const auto ref = testing::reference_for(ops);
    ASSERT_EQ(tfGemmPlanRun(plan, ops.a.data(), ops.b.data(), ops.c.data(), nullptr, nullptr, 0), TF_STATUS_SUCCESS)
        << tfGetLastErrorMessage(handle);
    Status ok = verify::check(ops.problem, verify::compare(ops.problem, ops.c.data(), ref));
    EXPECT_TRUE(ok) << ok.to_string();
  }
  EXPECT_EQ(tfGemmPlanRun(plan, nullptr, nullptr, nullptr, nullptr, nullptr, 0), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tfGetLastErrorMessage(handle)).find("tfGemmPlanRun: A is null"), std::string::npos)
      << tfGetLastErrorMessage(handle);
  EXPECT_EQ(tfGemmPlanDestroy(plan), TF_STATUS_SUCCESS);
  EXPECT_EQ(tfGemmPlanDestroy(nullptr), TF_STATUS_SUCCESS);
  EXPECT_EQ(tfGemmPlanCreate(handle, nullptr, TF_COL_MAJOR, TF_COL_MAJOR, TF_COL_MAJOR, 4, 4, 4, &alpha, TF_R_32F, 4, 0,
                             TF_R_32F, 4, 0, &beta, TF_R_32F, 4, 0, 1, TF_COMPUTE_32F),
            TF_STATUS_INVALID_ARGUMENT);
}

// 8 threads call one handle at once, each with its own shape and C order; each thread's last error is its own.
TEST_F(CApi, EightThreadsOnOneHandle) {
  const auto failures = testing::run_in_threads(8, [&](int t) {
    std::string failure;
    for (int rep = 0; rep < 3; ++rep) {
      Problem p = testing::make_problem(20 + t, 13 + rep, 11 + t, t % 4 < 2 ? Layout::RR : Layout::CR);
      p.c_order = t % 2 ? Order::col_major : Order::row_major;
      auto ops = testing::make_operands(p, uint64_t(t * 31 + rep));
      const auto ref = testing::reference_for(ops);
      const Problem& q = ops.problem;
      const float alpha = 1.0f, beta = 0.0f;
      const tfStatus_t s =
          tfGemmEx(handle, layout_a(q.layout), layout_b(q.layout), t % 2 ? TF_COL_MAJOR : TF_ROW_MAJOR, q.m, q.n,
                   q.k, &alpha, ops.a.data(), TF_R_32F, q.lda, ops.b.data(), TF_R_32F, q.ldb, &beta, ops.c.data(),
                   TF_R_32F, q.ldc, TF_COMPUTE_32F);
      if (s != TF_STATUS_SUCCESS) failure += tfGetLastErrorMessage(handle);
      if (Status ok = verify::check(q, verify::compare(q, ops.c.data(), ref)); !ok) failure += ok.to_string();
      // A bad call on this thread leaves its message here and nowhere else.
      const float one = 1.0f;
      float c = 0;
      if (tfGemmEx(handle, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 1, 1, 1, &one, &one, TF_R_32F, 1, &one,
                   TF_R_32F, 1, &one, &c, TF_R_32F, 1 - t - 1, TF_COMPUTE_32F) != TF_STATUS_INVALID_ARGUMENT ||
          std::string(tfGetLastErrorMessage(handle)).find("ldc = " + std::to_string(-t)) == std::string::npos) {
        failure += std::string("wrong last error: ") + tfGetLastErrorMessage(handle);
      }
    }
    return failure;
  });
  for (std::size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(CApiHandle, NullHandlesAndThreads) {
  EXPECT_EQ(tfCreate(nullptr), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tfSetThreads(nullptr, 1), TF_STATUS_INVALID_ARGUMENT);
  const float one = 1.0f;
  float c = 0;
  EXPECT_EQ(tfGemmEx(nullptr, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 1, 1, 1, &one, &one, TF_R_32F, 1, &one, TF_R_32F, 1, &one, &c,
                     TF_R_32F, 1, TF_COMPUTE_32F),
            TF_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tfGetLastErrorMessage(nullptr)).find("null"), std::string::npos);
  tfHandle_t h = nullptr;
  ASSERT_EQ(tfCreate(&h), TF_STATUS_SUCCESS);
  EXPECT_EQ(tfSetThreads(h, -1), TF_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tfGetLastErrorMessage(h)).find("threads"), std::string::npos);
  EXPECT_EQ(tfDestroy(h), TF_STATUS_SUCCESS);
  EXPECT_EQ(tfDestroy(nullptr), TF_STATUS_SUCCESS);
}

TEST(CApiStrings, EveryStatusHasAName) {
  EXPECT_STREQ(tfGetStatusString(TF_STATUS_SUCCESS), "TF_STATUS_SUCCESS");
  EXPECT_STREQ(tfGetStatusString(TF_STATUS_INVALID_ARGUMENT), "TF_STATUS_INVALID_ARGUMENT");
  EXPECT_STREQ(tfGetStatusString(TF_STATUS_INTERNAL), "TF_STATUS_INTERNAL");
  EXPECT_STREQ(tfGetStatusString(tfStatus_t(99)), "TF_STATUS_UNKNOWN");
  EXPECT_STREQ(tfGetVersion(), "0.1.0");
}

}  // namespace
}  // namespace tileforge
