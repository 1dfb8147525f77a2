// Cases every CPU vendor backend must pass against the float64 reference (shared by the OpenBLAS and oneDNN tests).
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/backend.hpp"
#include "support/test_support.hpp"
#include "verify/verify.hpp"

namespace tileforge::vendor_test {

inline Device cpu_device(int threads = 0) {
  Device d;
  d.threads = threads;
  return d;
}

// Prepares and runs `problem` on random operands (C poisoned with NaN when beta is 0, so a read of C shows),
// then checks every element against the reference under the policy's ceiling.
inline void expect_correct(Backend& backend, Problem problem, uint64_t seed, int threads = 0) {
  SCOPED_TRACE(problem.describe());
  testing::Operands ops = testing::make_operands(problem, seed);
  const Problem& p = ops.problem;
  if (p.beta == 0 && !ops.c.empty()) {
    verify::fill_poison(ops.c.data(), p.precision.output, int64_t(ops.c.size() / size_of(p.precision.output)));
  }
  const verify::Reference ref = testing::reference_for(ops);
  const Device dev = cpu_device(threads);
  const Support s = backend.supports(p, dev);
  ASSERT_TRUE(s.ok) << s.reason;
  auto kernel = backend.prepare(p, Config{std::string(backend.name()), {}}, dev);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  const Status run = backend.run(**kernel, p, GemmArgs{ops.a.data(), ops.b.data(), ops.c.data(), nullptr});
  ASSERT_TRUE(run.ok()) << run.to_string();
  const verify::ErrorReport r = verify::compare(p, ops.c.data(), ref);
  EXPECT_TRUE(r.full);
  EXPECT_EQ(r.checked, p.batch * p.m * p.n);
  EXPECT_EQ(r.nan_count, 0);
  const Status ok = verify::check(p, r);
  EXPECT_TRUE(ok.ok()) << ok.to_string();
}

inline Problem shaped(int64_t m, int64_t n, int64_t k, Layout layout, DType in = DType::f32,
                      DType out = DType::f32) {
  return testing::make_problem(m, n, k, layout, in, out);
}

constexpr Layout kLayouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};

// Shapes with primes, unit and tall/wide edges, all four layouts, alpha/beta (beta = 0 with C poisoned).
inline void shapes_and_layouts(Backend& backend, DType in, DType out) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 1, 1}, {37, 53, 61}, {64, 64, 64}, {129, 65, 257}, {3, 200, 17}, {150, 2, 90}};
  uint64_t seed = 100;
  for (Layout layout : kLayouts) {
    for (const Shape& s : shapes) {
      Problem p = shaped(s.m, s.n, s.k, layout, in, out);
      expect_correct(backend, p, ++seed);
      p.alpha = -1.5;
      p.beta = 0.75;
      expect_correct(backend, p, ++seed);
    }
  }
}

inline void padded_leading_dimensions(Backend& backend, DType in, DType out) {
  uint64_t seed = 200;
  for (Layout layout : kLayouts) {
    Problem p = shaped(45, 31, 23, layout, in, out);
    p.lda = p.min_lda() + 7;
    p.ldb = p.min_ldb() + 3;
    p.ldc = p.min_ldc() + 5;
    p.beta = 0.5;
    expect_correct(backend, p, ++seed);
  }
}

inline void batched(Backend& backend, DType in, DType out) {
  uint64_t seed = 300;
  for (Layout layout : kLayouts) {
    Problem p = shaped(19, 27, 33, layout, in, out);
    p.batch = 3;
    expect_correct(backend, p, ++seed);
    // Padded leading dimensions and gaps between batch entries.
    p.lda = p.min_lda() + 2;
    p.ldb = p.min_ldb() + 1;
    p.ldc = p.min_ldc() + 4;
    p.stride_a = p.span_a() + 11;
    p.stride_b = p.span_b() + 13;
    p.stride_c = p.span_c() + 17;
    p.alpha = 0.5;
    p.beta = -1.0;
    expect_correct(backend, p, ++seed);
  }
}

// K = 0: C = beta * C (beta = 0 must give zeros over a NaN-poisoned C); M or N = 0: nothing is touched.
inline void degenerate_sizes(Backend& backend, DType in, DType out) {
  for (double beta : {0.0, 0.5, 1.0}) {
    Problem p = shaped(7, 9, 0, Layout::RR, in, out);
    p.beta = beta;
    expect_correct(backend, p, 400);
  }
  for (auto [m, n] : {std::pair<int64_t, int64_t>{0, 5}, {5, 0}, {0, 0}}) {
    Problem p = shaped(m, n, 4, Layout::RC, in, out);
    p.beta = 0.5;
    const Device dev = cpu_device();
    ASSERT_TRUE(backend.supports(p, dev).ok);
    auto kernel = backend.prepare(p, Config{std::string(backend.name()), {}}, dev);
    ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
    std::vector<float> a(32, 1.0f), b(32, 1.0f), c(32, 3.0f);  // C is never touched: no element to write
    EXPECT_TRUE(backend.run(**kernel, p, GemmArgs{a.data(), b.data(), c.data(), nullptr}).ok());
    for (float v : c) EXPECT_EQ(v, 3.0f);
  }
}

// alpha = 0: C = beta * C without reading A or B (the BLAS convention), so NaN there does not propagate.
inline void alpha_zero(Backend& backend, DType in, DType out) {
  for (double beta : {0.0, -2.0}) {
    Problem q = shaped(13, 11, 9, Layout::CR, in, out);
    q.alpha = 0;
    q.beta = beta;
    testing::Operands ops = testing::make_operands(q, 500);
    const Problem& p = ops.problem;
    verify::fill_poison(ops.a.data(), in, int64_t(ops.a.size() / size_of(in)));
    verify::fill_poison(ops.b.data(), in, int64_t(ops.b.size() / size_of(in)));
    if (beta == 0) verify::fill_poison(ops.c.data(), out, int64_t(ops.c.size() / size_of(out)));
    const verify::Reference ref = testing::reference_for(ops);
    const Device dev = cpu_device();
    auto kernel = backend.prepare(p, Config{std::string(backend.name()), {}}, dev);
    ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
    ASSERT_TRUE(backend.run(**kernel, p, GemmArgs{ops.a.data(), ops.b.data(), ops.c.data(), nullptr}).ok());
    const verify::ErrorReport r = verify::compare(p, ops.c.data(), ref);
    EXPECT_EQ(r.nan_count, 0) << p.describe();
    EXPECT_TRUE(verify::check(p, r).ok()) << p.describe() << ": " << verify::check(p, r).to_string();
  }
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
