// The C API on a GPU: device pointers, a non-default stream, every layout of A, B and C, against float64 and against
// cuBLAS on the same operands; a caller's split-K workspace; eight threads on one handle, each on its own stream; a
// host pointer refused. Skips visibly without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "core/c_order.hpp"
#include "hw/cuda_driver.hpp"
#include "support/test_support.hpp"
#include "tileforge/tileforge.h"

namespace tileforge {
namespace {

tfLayout order_of(bool row) { return row ? TF_ROW_MAJOR : TF_COL_MAJOR; }

class CApiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = open_device("cuda");
    if (!d.ok()) GTEST_SKIP() << "SKIPPED: no CUDA device (" << d.status().message() << ")";
    device_ = *d;
    // The stream and buffers are the caller's own: like a cuBLAS user, the test makes the context current first.
    auto ctx = cuda::activate(0);
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    auto s = cuda::Stream::create();
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    stream_ = std::move(*s);
    ASSERT_EQ(tfCreate(&handle_), TF_STATUS_SUCCESS);
    ASSERT_EQ(tfSetStream(handle_, stream_.get()), TF_STATUS_SUCCESS);
  }
  void TearDown() override { tfDestroy(handle_); }

  cuda::DeviceBuffer upload(const std::vector<unsigned char>& host) {
    auto buf = cuda::DeviceBuffer::allocate(std::max<std::size_t>(host.size(), 16));
    EXPECT_TRUE(buf.ok()) << buf.status().to_string();
    EXPECT_TRUE(buf->upload(host.data(), host.size()).ok());
    return std::move(*buf);
  }
  std::vector<unsigned char> download(const cuda::DeviceBuffer& buf, std::size_t bytes) {
    EXPECT_TRUE(stream_.synchronize().ok());
    std::vector<unsigned char> host(bytes);
    EXPECT_TRUE(buf.download(host.data(), bytes).ok());
    return host;
  }

  Device device_;
  cuda::Stream stream_;
  tfHandle_t handle_ = nullptr;
};

TEST_F(CApiGpu, DevicePointersOnAStreamMatchCublasInEveryLayout) {
  Backend* cublas = find_backend("cublas");
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
    for (Order order : {Order::row_major, Order::col_major}) {
      Problem p = testing::make_problem(200, 136, 264, l, DType::f16, DType::f16);
      p.c_order = order;
      p.alpha = 0.5;
      p.beta = 0.25;
      auto ops = testing::make_operands(p, 21);
      const auto ref = testing::reference_for(ops);
      const Problem& q = ops.problem;
      auto a = upload(ops.a), b = upload(ops.b), c = upload(ops.c), c_native = upload(ops.c);
      const float alpha = 0.5f, beta = 0.25f;
      ASSERT_EQ(tfGemmEx(handle_, order_of(a_row_major(l)), order_of(b_row_major(l)),
                         order_of(order == Order::row_major), q.m, q.n, q.k, &alpha, a.data(), TF_R_16F, q.lda,
                         b.data(), TF_R_16F, q.ldb, &beta, c.data(), TF_R_16F, q.ldc, TF_COMPUTE_32F),
                TF_STATUS_SUCCESS)
          << tfGetLastErrorMessage(handle_);
      const auto ours = download(c, ops.c.size());
      Status ok = verify::check(q, verify::compare(q, ours.data(), ref));
      EXPECT_TRUE(ok) << ok.to_string() << " " << q.describe();

      if (!cublas || !cublas->available()) continue;
      // cuBLAS on the same operands: its row-major C form (C^T = B^T A^T for a column-major C).
      const Problem t = row_major_c(q);
      auto kernel = cublas->prepare(t, Config{}, device_);
      ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
      const bool swap = order == Order::col_major;
      ASSERT_TRUE(cublas->run(**kernel, t, GemmArgs{swap ? b.data() : a.data(), swap ? a.data() : b.data(),
                                                    c_native.data(), stream_.get()}));
      const auto native = download(c_native, ops.c.size());
      Status native_ok = verify::check(q, verify::compare(q, native.data(), ref));
      EXPECT_TRUE(native_ok) << "cuBLAS: " << native_ok.to_string();
    }
  }
}

TEST_F(CApiGpu, APlanRunsWithTheCallersWorkspaceAgainAndAgain) {
  Problem p = testing::make_problem(256, 256, 8192, Layout::RC, DType::f16, DType::f16);
  const float alpha = 1.0f, beta = 0.0f;
  // Split-K where the family has it (sm90); another family refuses the pin, and the plan runs without it.
  ASSERT_EQ(tfSetParam(handle_, "SPLIT_K", 4), TF_STATUS_SUCCESS);
  tfGemmPlan_t plan = nullptr;
  tfStatus_t made = tfGemmPlanCreate(handle_, &plan, TF_ROW_MAJOR, TF_COL_MAJOR, TF_ROW_MAJOR, p.m, p.n, p.k, &alpha,
                                     TF_R_16F, p.k, 0, TF_R_16F, p.k, 0, &beta, TF_R_16F, p.n, 0, 1, TF_COMPUTE_32F);
  if (made != TF_STATUS_SUCCESS) {
    ASSERT_EQ(tfClearParams(handle_), TF_STATUS_SUCCESS);
    ASSERT_EQ(tfGemmPlanCreate(handle_, &plan, TF_ROW_MAJOR, TF_COL_MAJOR, TF_ROW_MAJOR, p.m, p.n, p.k, &alpha,
                               TF_R_16F, p.k, 0, TF_R_16F, p.k, 0, &beta, TF_R_16F, p.n, 0, 1, TF_COMPUTE_32F),
              TF_STATUS_SUCCESS)
        << tfGetLastErrorMessage(handle_);
  }
  std::printf("plan: %s\n", tfGemmPlanDescribe(plan));
  size_t bytes = 0;
  ASSERT_EQ(tfGemmPlanGetWorkspaceSize(plan, &bytes), TF_STATUS_SUCCESS);
  auto workspace = cuda::DeviceBuffer::allocate(std::max<size_t>(bytes, 256));
  ASSERT_TRUE(workspace.ok());
  ASSERT_TRUE(workspace->fill_bytes(0x5a).ok());  // garbage counters: the plan must zero what it uses
  for (uint64_t seed : {5u, 6u, 7u}) {
    auto ops = testing::make_operands(p, seed);
    const auto ref = testing::reference_for(ops);
    auto a = upload(ops.a), b = upload(ops.b), c = upload(ops.c);
    ASSERT_EQ(tfGemmPlanRun(plan, a.data(), b.data(), c.data(), stream_.get(), bytes ? workspace->data() : nullptr,
                            bytes),
              TF_STATUS_SUCCESS)
        << tfGetLastErrorMessage(handle_);
    const auto ours = download(c, ops.c.size());
    Status ok = verify::check(ops.problem, verify::compare(ops.problem, ours.data(), ref));
    EXPECT_TRUE(ok) << ok.to_string() << " seed " << seed;
  }
  if (bytes > 0) {
    // Whole operands (the plan checks that C overlaps neither A nor B over their full extents) and a workspace too
    // small: the run is refused for the workspace.
    auto ops = testing::make_operands(p, 8);
    auto a = upload(ops.a), b = upload(ops.b), c = upload(ops.c);
    EXPECT_EQ(tfGemmPlanRun(plan, a.data(), b.data(), c.data(), stream_.get(), workspace->data(), 16),
              TF_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(tfGetLastErrorMessage(handle_)).find("workspace"), std::string::npos)
        << tfGetLastErrorMessage(handle_);
  }
  tfGemmPlanDestroy(plan);
}

TEST_F(CApiGpu, EightThreadsOnOneHandleEachOnItsOwnStream) {
  // One handle, eight threads, each with its own stream and its own plans (split-K with the library's per-stream
  // workspace, column-major C, unaligned sizes, several families), three fresh operand sets each, every C checked
  // against float64. A wrong stream or a workspace shared between streams shows up as a wrong element.
  ASSERT_EQ(tfSetDevice(handle_, "cuda"), TF_STATUS_SUCCESS);
  const auto failures = testing::run_in_threads(8, [&](int t) -> std::string {
    auto ctx = cuda::activate(0);
    if (!ctx.ok()) return ctx.status().to_string();
    auto stream = cuda::Stream::create();
    if (!stream.ok()) return stream.status().to_string();
    struct Shape {
      int64_t m, n, k;
      Layout layout;
      Order c_order;
    };
    const Shape shapes[4] = {{256, 256, 8192, Layout::RC, Order::row_major},
                             {200, 136, 264, Layout::RR, Order::col_major},
                             {1000, 1000, 1000, Layout::RR, Order::row_major},
                             {96, 520, 136, Layout::CR, Order::col_major}};
    const Shape& sh = shapes[t % 4];
    Problem p = testing::make_problem(sh.m, sh.n + 8 * (t / 4), sh.k, sh.layout, DType::f16, DType::f16);
    p.c_order = sh.c_order;
    const Problem q = testing::make_operands(p, 1).problem;
    const float alpha = 1.0f, beta = 0.0f;
    tfGemmPlan_t plan = nullptr;
    if (tfGemmPlanCreate(handle_, &plan, order_of(a_row_major(q.layout)), order_of(b_row_major(q.layout)),
                         order_of(q.c_order == Order::row_major), q.m, q.n, q.k, &alpha, TF_R_16F, q.lda, 0, TF_R_16F,
                         q.ldb, 0, &beta, TF_R_16F, q.ldc, 0, 1, TF_COMPUTE_32F) != TF_STATUS_SUCCESS) {
      return std::string("tfGemmPlanCreate: ") + tfGetLastErrorMessage(handle_);
    }
    std::printf("thread %d: %s\n", t, tfGemmPlanDescribe(plan));
    std::string failure;
    for (uint64_t rep = 0; rep < 3 && failure.empty(); ++rep) {
      auto ops = testing::make_operands(p, uint64_t(100 + 10 * t) + rep);
      const auto ref = testing::reference_for(ops);
      // Device copies of the operands (the fixture's upload() reports through gtest, which is not for threads).
      auto put = [](const std::vector<unsigned char>& host) -> Expected<cuda::DeviceBuffer> {
        auto buf = cuda::DeviceBuffer::allocate(std::max<std::size_t>(host.size(), 16));
        if (!buf) return buf.status();
        if (Status s = buf->upload(host.data(), host.size()); !s) return s;
        return buf;
      };
      auto a = put(ops.a), b = put(ops.b), c = put(ops.c);
      for (const auto* buf : {&a, &b, &c}) {
        if (!buf->ok()) return "device buffer: " + buf->status().to_string();
      }
      if (tfGemmPlanRun(plan, a->data(), b->data(), c->data(), stream->get(), nullptr, 0) != TF_STATUS_SUCCESS) {
        failure = std::string("tfGemmPlanRun: ") + tfGetLastErrorMessage(handle_);
        break;
      }
      if (Status s = stream->synchronize(); !s) return s.to_string();
      std::vector<unsigned char> out(ops.c.size());
      if (Status s = c->download(out.data(), out.size()); !s) return s.to_string();
      if (Status ok = verify::check(ops.problem, verify::compare(ops.problem, out.data(), ref)); !ok) {
        failure = ok.to_string() + " (" + ops.problem.describe() + ", rep " + std::to_string(rep) + ")";
      }
    }
    tfGemmPlanDestroy(plan);
    return failure;
  });
  for (std::size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_F(CApiGpu, HostPointersOnAGpuHandleAreRefusedNotCrashedOn) {
  ASSERT_EQ(tfSetDevice(handle_, "cuda"), TF_STATUS_SUCCESS);
  std::vector<uint16_t> host(64 * 64, 0x3c00);
  std::vector<uint16_t> out(64 * 64);
  const float alpha = 1.0f, beta = 0.0f;
  EXPECT_EQ(tfGemmEx(handle_, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 64, 64, 64, &alpha, host.data(), TF_R_16F, 64,
                     host.data(), TF_R_16F, 64, &beta, out.data(), TF_R_16F, 64, TF_COMPUTE_32F),
            TF_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tfGetLastErrorMessage(handle_)).find("not device memory"), std::string::npos)
      << tfGetLastErrorMessage(handle_);
  // "auto" (the default) sends host pointers to the CPU instead.
  ASSERT_EQ(tfSetDevice(handle_, "auto"), TF_STATUS_SUCCESS);
  std::vector<float> a(64, 1.0f), b(64, 2.0f), c(64);
  ASSERT_EQ(tfGemmEx(handle_, TF_ROW_MAJOR, TF_ROW_MAJOR, TF_ROW_MAJOR, 8, 8, 8, &alpha, a.data(), TF_R_32F, 8,
                     b.data(), TF_R_32F, 8, &beta, c.data(), TF_R_32F, 8, TF_COMPUTE_32F),
            TF_STATUS_SUCCESS)
      << tfGetLastErrorMessage(handle_);
  for (float v : c) EXPECT_FLOAT_EQ(v, 16.0f);
}

}  // namespace
}  // namespace tileforge
