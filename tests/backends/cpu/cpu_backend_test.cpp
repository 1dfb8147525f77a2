// What only the cpu backend has: pinned configs of every ISA family the host runs, its B-packing heuristic, NaN and
// Inf through its kernels, null operands, and refused configs and pointers. Shapes, layouts, dtypes, alpha/beta,
// leading dimensions and batches against float64 are the conformance test's (tests/conformance/).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/microkernel.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

using testing::make_operands;
using testing::make_problem;
using testing::reference_for;

Device cpu_device(int threads = 0) {
  auto d = open_device("cpu", {}, threads);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return *d;
}

// Runs `problem` with `config` (heuristic when empty) and checks every element against float64.
void expect_correct(const Problem& problem, uint64_t seed, const Config* config = nullptr, int threads = 0) {
  Backend* cpu = find_backend("cpu");
  ASSERT_NE(cpu, nullptr);
  Device device = cpu_device(threads);
  auto ops = make_operands(problem, seed);
  const bool beta_zero = problem.beta == 0.0;
  if (beta_zero) verify::fill_poison(ops.c.data(), ops.problem.precision.output,
                                     int64_t(ops.c.size() / size_of(ops.problem.precision.output)));
  auto ref = reference_for(ops);
  Config chosen;
  if (config) {
    chosen = *config;
  } else {
    auto h = cpu->heuristic(ops.problem, device);
    ASSERT_TRUE(h.ok()) << h.status().to_string();
    chosen = *h;
  }
  auto kernel = cpu->prepare(ops.problem, chosen, device);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  Status s = cpu->run(**kernel, ops.problem, GemmArgs{ops.a.data(), ops.b.data(), ops.c.data(), nullptr});
  ASSERT_TRUE(s.ok()) << s.to_string();
  auto report = verify::compare(ops.problem, ops.c.data(), ref);
  EXPECT_TRUE(report.full);
  EXPECT_EQ(report.checked, ops.problem.m * ops.problem.n * ops.problem.batch);
  EXPECT_EQ(report.nan_count, 0) << problem.describe() << " " << chosen.describe();
  Status ok = verify::check(ops.problem, report);
  EXPECT_TRUE(ok.ok()) << problem.describe() << " " << chosen.describe() << ": " << ok.to_string();
}

// M = 0 or N = 0: nothing to compute and nothing touched, so A and B may be null (the values of every other
// degenerate case, K = 0 and alpha = 0, are in tests/conformance/).
TEST(CpuBackend, EmptyOutputNeedsNoOperands) {
  for (auto dims : {std::array<int64_t, 3>{0, 5, 7}, std::array<int64_t, 3>{5, 0, 7}}) {
    Problem p = make_problem(dims[0], dims[1], dims[2]);
    Backend* cpu = find_backend("cpu");
    Device d = cpu_device();
    auto k = cpu->prepare(p, *cpu->heuristic(p, d), d);
    ASSERT_TRUE(k.ok());
    float c = 42.0f;
    EXPECT_TRUE(cpu->run(**k, p, GemmArgs{nullptr, nullptr, &c, nullptr}).ok());
    EXPECT_EQ(c, 42.0f);
  }
}

TEST(CpuBackend, PinnedConfigsOfEveryFamilyTheHostRuns) {
  uint64_t seed = 500;
  for (const std::string& family : cpu::all_families()) {
    if (Support s = cpu::family_runs_here(family); !s) {
      std::cout << "SKIPPED: " << family << ": " << s.reason << "\n";
      continue;
    }
    for (const auto& uk : cpu::microkernels_for(family)) {
      for (int pack_b : {0, 1}) {
        // Small blocks force several jc, pc and ic iterations and partial blocks everywhere.
        Config c{family, {{"MR", uk.mr}, {"NR", uk.nr}, {"KC", 24}, {"MC", uk.mr * 3}, {"NC", uk.nr * 2},
                          {"PACK_B", pack_b}}};
        Problem p = make_problem(3 * uk.mr * 2 + 1, 5 * uk.nr + 3, 77);
        p.beta = 0.25;
        expect_correct(p, ++seed, &c);
        for (int threads : {1, 2}) expect_correct(make_problem(uk.mr + 1, uk.nr * 3 - 1, 50, Layout::RR), ++seed, &c, threads);
      }
    }
  }
}

TEST(CpuBackend, SkinnyProblemStreamsBAndMatches) {
  Problem p = make_problem(16, 1000, 700);
  Backend* cpu = find_backend("cpu");
  auto h = cpu->heuristic(p, cpu_device());
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->at("PACK_B"), 0) << "few rows: B is read in place";
  expect_correct(p, 600);
  // The same shape with column-major B must pack it.
  Problem q = make_problem(16, 1000, 700, Layout::RC);
  EXPECT_EQ(cpu->heuristic(q, cpu_device())->at("PACK_B"), 1);
  expect_correct(q, 601);
}

TEST(CpuBackend, NanAndInfPropagate) {
  Backend* cpu = find_backend("cpu");
  Device device = cpu_device();
  Problem p = make_problem(20, 30, 40).normalized();
  auto ops = make_operands(p, 700);
  auto* a = reinterpret_cast<float*>(ops.a.data());
  a[3 * p.lda + 5] = std::numeric_limits<float>::quiet_NaN();  // row 3 of C becomes NaN
  a[7 * p.lda + 1] = std::numeric_limits<float>::infinity();  // row 7 becomes +-Inf (or NaN where B is 0)
  auto k = cpu->prepare(p, *cpu->heuristic(p, device), device);
  ASSERT_TRUE(k.ok());
  ASSERT_TRUE(cpu->run(**k, p, GemmArgs{ops.a.data(), ops.b.data(), ops.c.data(), nullptr}).ok());
  const auto* c = reinterpret_cast<const float*>(ops.c.data());
  for (int64_t j = 0; j < p.n; ++j) {
    EXPECT_TRUE(std::isnan(c[3 * p.ldc + j])) << j;
    EXPECT_TRUE(std::isinf(c[7 * p.ldc + j]) || std::isnan(c[7 * p.ldc + j])) << j;
    EXPECT_TRUE(std::isfinite(c[0 * p.ldc + j])) << j;
  }
}

TEST(CpuBackend, RefusesBadConfigsAndPointers) {
  Backend* cpu = find_backend("cpu");
  Device device = cpu_device();
  Problem p = make_problem(8, 8, 8);
  const std::string family = cpu::host_family();
  auto space = cpu->space(p, device);
  auto unknown = space.pin(*cpu->heuristic(p, device), {{"BLOCK_M", 64}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("BLOCK_M"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("allowed"), std::string::npos);
  auto illegal = space.pin(*cpu->heuristic(p, device), {{"KC", 13}});
  ASSERT_FALSE(illegal.ok());
  EXPECT_NE(illegal.status().message().find("KC = 13"), std::string::npos);
  const int64_t mr = cpu->heuristic(p, device)->at("MR");  // every MR is > 2, so 10*MR + 2 is not a multiple
  auto bad_mc = space.pin(*cpu->heuristic(p, device), {{"MC", 10 * mr + 2}});
  ASSERT_FALSE(bad_mc.ok());
  EXPECT_NE(bad_mc.status().message().find("MC % MR"), std::string::npos);

  Problem q = p.normalized();
  auto k = cpu->prepare(q, *cpu->heuristic(q, device), device);
  ASSERT_TRUE(k.ok());
  std::vector<float> buf(64, 1.0f);
  Status s = cpu->run(**k, q, GemmArgs{nullptr, buf.data(), buf.data(), nullptr});
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("A is a null pointer"), std::string::npos);
  s = cpu->run(**k, q, GemmArgs{buf.data(), buf.data(), nullptr, nullptr});
  EXPECT_NE(s.message().find("C is a null pointer"), std::string::npos);
  Problem bad = q;
  bad.lda = 3;
  EXPECT_EQ(cpu->run(**k, bad, GemmArgs{buf.data(), buf.data(), buf.data(), nullptr}).code(), Code::invalid_argument);
  Problem f16acc = q;
  f16acc.precision = {DType::f16, DType::f16, DType::f16};
  EXPECT_FALSE(cpu->supports(f16acc, device).ok);
}

}  // namespace
}  // namespace tileforge
