// On a GPU: cuBLAS and cuBLASLt name the kernels their first call launched (CUPTI), and bench's native row shows
// them. Skips visibly without a CUDA device or cuBLAS, and where no CUPTI can be found (gpu-check points at one).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "backends/backend.hpp"
#include "bench/harness.hpp"
#include "hw/cuda_driver.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

class CuptiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = open_device("cuda");
    if (!d.ok()) GTEST_SKIP() << "SKIPPED: no CUDA device (" << d.status().message() << ")";
    device_ = *d;
    Backend* cublas = find_backend("cublas");
    if (!cublas) GTEST_SKIP() << "SKIPPED: this build has no cuBLAS backend";
    if (Support s = cublas->available(); !s) GTEST_SKIP() << "SKIPPED: cuBLAS not loadable: " << s.reason;
  }
  static bool no_cupti(const std::string& note) { return note.find("CUPTI not found") != std::string::npos; }
  Device device_;
};

// Each backend's first call names what it launched; later calls keep that name and are not captured again.
TEST_F(CuptiGpu, CublasAndCublasLtNameTheKernelsOfTheirFirstCall) {
  const Problem p = testing::make_problem(256, 256, 256, Layout::RR, DType::f16, DType::f16);
  ASSERT_TRUE(cuda::activate(device_.ordinal).ok());
  auto stream = cuda::Stream::create();
  ASSERT_TRUE(stream.ok()) << stream.status().to_string();
  auto a = cuda::DeviceBuffer::allocate(256 * 256 * 2), b = cuda::DeviceBuffer::allocate(256 * 256 * 2),
       c = cuda::DeviceBuffer::allocate(256 * 256 * 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (auto* buf : {&*a, &*b, &*c}) ASSERT_TRUE(buf->fill_bytes(0).ok());
  for (const char* name : {"cublas", "cublaslt"}) {
    SCOPED_TRACE(name);
    Backend* backend = find_backend(name);
    ASSERT_NE(backend, nullptr);
    auto config = backend->heuristic(p, device_);
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    auto kernel = backend->prepare(p, *config, device_);
    ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
    const GemmArgs args{a->data(), b->data(), c->data(), stream->get()};
    ASSERT_TRUE(backend->run(**kernel, p, args).ok());
    const std::string note = (*kernel)->implementation_note();
    if (no_cupti(note)) GTEST_SKIP() << "SKIPPED: " << note;
    const std::string impl = (*kernel)->implementation();
    EXPECT_TRUE(note.empty()) << note;
    ASSERT_FALSE(impl.empty());
    // A kernel's name first (nvjet_..., sm90_xmma_..., ...), never the heuristic's note alone.
    EXPECT_FALSE(impl.starts_with("cuBLASLt")) << impl;
    if (std::string(name) == "cublaslt") {
      EXPECT_NE(impl.find("cuBLASLt heuristic #"), std::string::npos) << impl;
    }
    ASSERT_TRUE(backend->run(**kernel, p, args).ok());
    EXPECT_EQ((*kernel)->implementation(), impl);
    ASSERT_TRUE(stream->synchronize().ok());
    std::printf("%s: %s\n", name, impl.c_str());
  }
}

// Bench's native row carries the name (the table's "native kernel" column and the JSON's `kernel`).
TEST_F(CuptiGpu, BenchNamesTheNativeKernel) {
  const Problem p = testing::make_problem(256, 256, 256, Layout::RR, DType::f16, DType::f16);
  bench::Settings s;
  s.min_reps = 3;
  s.min_time_s = 0;
  s.max_time_s = 0.05;
  s.warmup_time_s = 0;
  auto plan = bench::plan_case(device_, p, s);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto timer = bench::make_timer(device_);
  ASSERT_TRUE(timer.ok()) << timer.status().to_string();
  bench::CaseResult r = bench::run_case(device_, *plan, s, **timer);
  ASSERT_TRUE(r.native) << r.native_missing;
  for (const std::string& w : r.warnings) {
    if (no_cupti(w)) GTEST_SKIP() << "SKIPPED: " << w;
  }
  for (const std::string& w : r.warnings) EXPECT_EQ(w.find("kernel name not captured"), std::string::npos) << w;
  EXPECT_FALSE(r.native->implementation.empty());
  EXPECT_FALSE(r.native->implementation.starts_with("cuBLASLt")) << r.native->implementation;
  EXPECT_GT(r.native->timing.reps, 0);
}

}  // namespace
}  // namespace tileforge
