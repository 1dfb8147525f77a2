// The tuner's GPU compile step without a GPU: sm80 candidates compiled in parallel with NVRTC into a scratch
// kernel cache, failures kept per candidate (an injected ptxas failure too), a second pass served from the cache.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "hw/hw.hpp"
#include "jit/nvrtc.hpp"
#include "plan/planner.hpp"
#include "tune/compile.hpp"

namespace tileforge::tune {
namespace {

TEST(TuneCompile, CpuFamiliesHaveNothingToCompile) {
  EXPECT_TRUE(compiled_at_run_time("sm80"));
  EXPECT_FALSE(compiled_at_run_time("cpu-avx2"));
  Problem p;
  p.m = p.n = p.k = 64;
  CompileSummary s = compile_candidates(p, {Config{"cpu-avx2", {{"MR", 6}}}}, CompileOptions{});
  ASSERT_EQ(s.outcomes.size(), 1u);
  EXPECT_FALSE(s.outcomes[0].ok);
  EXPECT_NE(s.outcomes[0].error.find("not compiled at run time"), std::string::npos) << s.outcomes[0].error;
  EXPECT_EQ(s.failed, 1u);
}

TEST(TuneCompile, Sm80CandidatesCompileInParallelIntoAScratchCache) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc) GTEST_SKIP() << "SKIPPED: no NVRTC: " << nvrtc.status().message();
  // The planner's best candidates for an A100, as tune would take them on one (no GPU is needed to compile).
  auto profile = hw::load_profile("a100-sxm");
  ASSERT_TRUE(profile) << profile.status().to_string();
  Problem p;
  p.m = p.n = p.k = 1024;
  p.precision = {DType::f16, DType::f16, DType::f32};
  auto plan = plan::make_plan(p, *profile);
  ASSERT_TRUE(plan) << plan.status().to_string();
  ASSERT_TRUE(plan->served) << plan->unserved;
  ASSERT_EQ(plan->family, "sm80");
  std::vector<Config> configs;
  for (std::size_t i = 0; i < 3 && i < plan->ranked.size(); ++i) configs.push_back(plan->ranked[i].config);
  ASSERT_EQ(configs.size(), 3u);
  // One config the family does not declare: it fails alone, with its reason, and the others still compile.
  Config broken = configs[0];
  broken.family = "sm99";
  configs.push_back(broken);

  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("tileforge-tune-compile-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  CompileOptions o;
  o.arch = "sm_80";
  o.cache_dir = dir.string();
  o.threads = 2;
  std::vector<std::size_t> order;
  o.done = [&](std::size_t i, const CompileOutcome&) { order.push_back(i); };
  CompileSummary first = compile_candidates(p, configs, o);
  EXPECT_EQ(first.threads, 2u);
  EXPECT_EQ(order.size(), configs.size());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(first.outcomes[i].ok) << configs[i].describe() << ": " << first.outcomes[i].error;
    EXPECT_FALSE(first.outcomes[i].cache_hit);
    EXPECT_GT(first.outcomes[i].registers, 0);
  }
  EXPECT_FALSE(first.outcomes[3].ok);
  EXPECT_NE(first.outcomes[3].error.find("sm99"), std::string::npos) << first.outcomes[3].error;
  EXPECT_EQ(first.compiled, 3u);
  EXPECT_EQ(first.failed, 1u);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.path().extension() == ".tfk";
  EXPECT_EQ(files, 3u);
  std::printf("[ info ] 3 sm80 candidates for sm_80 compiled on %u threads in %.1f s\n", first.threads, first.wall_seconds);

  // A second tune finds them all in the cache.
  CompileSummary second = compile_candidates(p, {configs[0], configs[1], configs[2]}, o);
  EXPECT_EQ(second.hits, 3u);
  EXPECT_EQ(second.compiled, 0u);

  // The budget's stop: nothing more starts once it says so.
  o.stop = [] { return true; };
  CompileSummary none = compile_candidates(p, {configs[0]}, o);
  EXPECT_EQ(none.skipped, 1u);
  EXPECT_FALSE(none.outcomes[0].attempted);
  std::filesystem::remove_all(dir);
}

// A candidate that ptxas refuses (TILEFORGE_JIT_FAULT=ptxas) fails on its own with the assembler named, as the
// tuner reports it ("compile failed: ..."), and leaves no cache entry; with the fault gone it compiles.
TEST(TuneCompile, ACandidateThatPtxasRefusesFailsNamedAndIsNotCached) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc) GTEST_SKIP() << "SKIPPED: no NVRTC: " << nvrtc.status().message();
  auto profile = hw::load_profile("a100-sxm");
  ASSERT_TRUE(profile) << profile.status().to_string();
  Problem p;
  p.m = p.n = p.k = 512;
  p.precision = {DType::bf16, DType::bf16, DType::f32};
  auto plan = plan::make_plan(p, *profile);
  ASSERT_TRUE(plan) << plan.status().to_string();
  ASSERT_TRUE(plan->served) << plan->unserved;
  const std::vector<Config> configs = {plan->ranked[0].config};
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("tileforge-tune-fault-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  CompileOptions o;
  o.arch = "sm_80";
  o.cache_dir = dir.string();
  auto entries = [&] {
    std::size_t n = 0;
    if (std::filesystem::exists(dir))
      for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".tfk";
    return n;
  };

  ::setenv("TILEFORGE_JIT_FAULT", "ptxas", 1);
  const CompileSummary faulted = compile_candidates(p, configs, o);
  ::unsetenv("TILEFORGE_JIT_FAULT");
  ASSERT_EQ(faulted.outcomes.size(), 1u);
  EXPECT_FALSE(faulted.outcomes[0].ok);
  EXPECT_EQ(faulted.failed, 1u);
  const std::string& error = faulted.outcomes[0].error;
  EXPECT_EQ(error.rfind("ptxas (NVRTC's assembler step) could not assemble 'sm80_gemm_", 0), 0u) << error;
  EXPECT_NE(error.find("tileforge_injected_ptxas_fault"), std::string::npos) << error;
  EXPECT_EQ(entries(), 0u);

  const CompileSummary fine = compile_candidates(p, configs, o);
  EXPECT_TRUE(fine.outcomes[0].ok) << fine.outcomes[0].error;
  EXPECT_FALSE(fine.outcomes[0].cache_hit);
  EXPECT_EQ(entries(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tileforge::tune
