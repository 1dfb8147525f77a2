// The GPU timer's device-side verification against the host's float64 reference: the check that computes the
// reference with each call and the reference kept on the device (computed once, then only compared) report what
// verify::compare reports on the host, for every precision, layout, tail, batch and beta, and a large problem's
// sampled rows what a host reference with the same limit reports. Skips visibly without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "support/gpu_run.hpp"
#include "support/test_support.hpp"
#include "verify/verify.hpp"

namespace tileforge::measure {
namespace {

class GpuTimerVerifyTest : public testing::CudaGpuTest {};

// `a` within a relative `tol` of `b` (or both zero).
void expect_close(double a, double b, double tol, const std::string& what) {
  EXPECT_LE(std::fabs(a - b), tol * std::max(std::fabs(a), std::fabs(b))) << what << ": " << a << " vs " << b;
}

TEST_F(GpuTimerVerifyTest, KeptAndPerCallDeviceReferencesReportWhatTheHostReferenceDoes) {
  struct Case {
    int64_t m, n, k;
    Layout layout;
    DType in, out;
    double beta;
    int64_t batch;
  };
  const std::vector<Case> cases = {
      {67, 45, 33, Layout::RR, DType::f16, DType::f16, 0.5, 1},   // tails of every tile, C read
      {40, 70, 129, Layout::CC, DType::f32, DType::f32, 0.0, 2},  // column-major, batched
      {128, 64, 200, Layout::RC, DType::bf16, DType::bf16, 0.0, 1},
      {65, 130, 17, Layout::CR, DType::f16, DType::f32, 1.0, 3},
      // More batches, and more row tiles, than a grid's z and y dimensions hold (65535): the kernels walk them.
      {2, 3, 5, Layout::RR, DType::f32, DType::f32, 0.5, 70000},
      {1100000, 2, 3, Layout::CR, DType::f16, DType::f32, 0.0, 1},
  };
  for (const Case& c : cases) {
    Problem q = testing::make_problem(c.m, c.n, c.k, c.layout, c.in, c.out);
    q.beta = c.beta;
    q.alpha = 1.25;
    q.batch = c.batch;
    if (c.batch > 1) {
      q.stride_a = q.span_a() + 8;
      q.stride_b = q.span_b() + 8;
      q.stride_c = q.span_c() + 8;
    }
    auto ops = testing::make_operands(q, 7);
    const Problem& p = ops.problem;
    const std::string what = p.describe();
    const verify::Reference host_ref = testing::reference_for(ops);
    // A "result": random values (far from the product, so every element has an error to compare), one of them NaN.
    std::vector<unsigned char> out(ops.c.size());
    verify::fill_random(out.data(), p.precision.output, int64_t(out.size() / size_of(p.precision.output)), 99);
    std::memset(out.data() + size_of(p.precision.output) * std::size_t(p.ldc + 1), 0xFF,
                size_of(p.precision.output));
    const verify::ErrorReport host = verify::compare(p, out.data(), host_ref);
    ASSERT_TRUE(host.full) << what;
    ASSERT_EQ(host.nan_count, 1) << what;

    auto a = upload(ops.a), b = upload(ops.b), c_in = upload(ops.c), c_out = upload(out);
    std::unique_ptr<KeptReference> kept;
    for (int round = 0; round < 3; ++round) {
      // Round 0 fills `kept`, round 1 reuses it, round 2 computes the reference within the check.
      auto dev = timer_->verify_on_device(p, *a, *b, *c_in, *c_out, round < 2 ? &kept : nullptr);
      ASSERT_TRUE(dev.ok()) << what << ": " << dev.status().to_string();
      const std::string label = what + " round " + std::to_string(round);
      EXPECT_EQ(dev->checked, p.m * p.n * p.batch) << label;
      EXPECT_EQ(dev->nan_count, host.nan_count) << label;
      expect_close(dev->rel_error, host.rel_error, 1e-9, label + " rel_error");
      expect_close(dev->max_scaled_error, host.max_scaled_error, 1e-9, label + " max_scaled_error");
      EXPECT_GT(dev->rel_error, 0.1) << label;  // random results: the comparison saw them
      if (round == 0) {
        ASSERT_NE(kept, nullptr) << label;
      }
    }
  }
}

TEST_F(GpuTimerVerifyTest, ALargeProblemIsCheckedOnTheHostReferencesSampleOfRows) {
  // Above the device's limit (lowered here to 1e5 multiply-adds) the device checks the rows verify::covered_rows
  // samples, nothing kept: the same elements as a host reference with that limit, so the same errors and NaNs.
  timer_->set_device_reference_limit(1e5);
  for (const Layout l : {Layout::RR, Layout::CR}) {
    Problem q = testing::make_problem(1003, 70, 40, l, DType::f16, DType::f32);
    q.alpha = 0.75;
    q.beta = 0.5;
    auto ops = testing::make_operands(q, 11);
    const Problem& p = ops.problem;
    const verify::Reference host_ref = verify::reference_gemm(p, ops.a.data(), ops.b.data(), ops.c.data(), 1e5);
    ASSERT_EQ(int64_t(host_ref.rows.size()), verify::covered_row_count(p, 1e5));
    ASSERT_LT(int64_t(host_ref.rows.size()), p.m);
    std::vector<unsigned char> out(ops.c.size());
    verify::fill_random(out.data(), p.precision.output, int64_t(out.size() / size_of(p.precision.output)), 5);
    // A NaN in a covered row (the last) and one in a row between the samples (row 1): only the first is seen.
    const std::size_t es = size_of(p.precision.output);
    std::memset(out.data() + es * std::size_t((p.m - 1) * p.ldc + 3), 0xFF, es);
    std::memset(out.data() + es * std::size_t(1 * p.ldc + 3), 0xFF, es);
    const verify::ErrorReport host = verify::compare(p, out.data(), host_ref);
    ASSERT_FALSE(host.full);
    ASSERT_EQ(host.nan_count, 1);
    auto a = upload(ops.a), b = upload(ops.b), c_in = upload(ops.c), c_out = upload(out);
    std::unique_ptr<KeptReference> kept;
    auto dev = timer_->verify_on_device(p, *a, *b, *c_in, *c_out, &kept);
    ASSERT_TRUE(dev.ok()) << dev.status().to_string();
    EXPECT_FALSE(dev->full);
    EXPECT_EQ(kept, nullptr);
    EXPECT_EQ(dev->checked, int64_t(host_ref.rows.size()) * p.n);
    EXPECT_EQ(dev->nan_count, 1);
    expect_close(dev->rel_error, host.rel_error, 1e-9, p.describe() + " rel_error");
    expect_close(dev->max_scaled_error, host.max_scaled_error, 1e-9, p.describe() + " max_scaled_error");
  }
  // Under the limit, every element again.
  timer_->set_device_reference_limit(1e12);
  Problem small = testing::make_problem(64, 32, 16, Layout::RR, DType::f16, DType::f16);
  auto ops = testing::make_operands(small, 3);
  auto a = upload(ops.a), b = upload(ops.b), c_in = upload(ops.c), c_out = upload(ops.c);
  auto dev = timer_->verify_on_device(ops.problem, *a, *b, *c_in, *c_out, nullptr);
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  EXPECT_TRUE(dev->full);
  EXPECT_EQ(dev->checked, 64 * 32);
}

}  // namespace
}  // namespace tileforge::measure
