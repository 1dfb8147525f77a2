// What every CPU vendor backend must do around the call (shared by the OpenBLAS and oneDNN tests): its interface
// contract and idle threads after a call. Its results against float64 are the conformance test's (tests/conformance/).
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/backend.hpp"
#include "support/test_support.hpp"

namespace tileforge::vendor_test {

inline Device cpu_device(int threads = 0) {
  Device d;
  d.threads = threads;
  return d;
}

inline Problem shaped(int64_t m, int64_t n, int64_t k, Layout layout, DType in = DType::f32,
                      DType out = DType::f32) {
  return testing::make_problem(m, n, k, layout, in, out);
}

// The interface around the call: names, empty space, config family, and refusing a different problem.
inline void interface_contract(Backend& backend) {
  EXPECT_TRUE(backend.native());
  EXPECT_EQ(backend.device_kind(), "cpu");
  const Problem p = shaped(8, 8, 8, Layout::RR);
  const Device dev = cpu_device();
  const ParamSpace space = backend.space(p, dev);
  EXPECT_EQ(space.family, backend.name());
  EXPECT_TRUE(space.params.empty());
  auto config = backend.heuristic(p, dev);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->family, backend.name());
  EXPECT_TRUE(config->params.empty());
  EXPECT_EQ(backend.prepare(p, Config{"cpu-avx2", {}}, dev).status().code(), Code::invalid_argument);
  auto kernel = backend.prepare(p, *config, dev);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  std::vector<float> a(64, 0.5f), b(64, 0.5f), c(64, 0.0f);
  const Problem other = shaped(8, 8, 4, Layout::RR);
  EXPECT_EQ(backend.run(**kernel, other, GemmArgs{a.data(), b.data(), c.data(), nullptr}).code(),
            Code::invalid_argument);
  Device gpu;
  gpu.kind = "cuda";
  EXPECT_FALSE(backend.supports(p, gpu).ok);
  Problem f16acc = shaped(8, 8, 8, Layout::RR, DType::f16, DType::f16);
  f16acc.precision.accum = DType::f16;
  const Support s = backend.supports(f16acc, dev);
  EXPECT_FALSE(s.ok);
  EXPECT_FALSE(s.reason.empty());
}

inline double process_cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + 1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

// DESIGN.md: a vendor library must not leave threads spinning while another kernel runs. After a multi-threaded
// call the process should use (almost) no CPU while the calling thread sleeps. A spinning OpenBLAS worker with
// its default timeout burns ~0.1 s per worker here, so 0.05 s over 0.4 s of sleep separates the two clearly.
inline void idle_after_call(Backend& backend) {
  const Problem p = shaped(384, 384, 384, Layout::RR);
  const Device dev = cpu_device(2);
  auto kernel = backend.prepare(p, Config{std::string(backend.name()), {}}, dev);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  std::vector<float> a(384 * 384, 0.25f), b(384 * 384, 0.5f), c(384 * 384, 0.0f);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(backend.run(**kernel, p, GemmArgs{a.data(), b.data(), c.data(), nullptr}).ok());
  }
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_LT(process_cpu_seconds() - before, 0.05) << "threads kept running after the call returned";
}

}  // namespace tileforge::vendor_test
