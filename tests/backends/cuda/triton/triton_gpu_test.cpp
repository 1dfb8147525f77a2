// The triton family through Triton's compiler (no GPU needed; skips visibly without Python and Triton): the configs
// the planner ranks first on the H200, A100 and MI300X records compile for cuda:90, cuda:80 and hip:gfx942 within
// the record's shared memory and registers, without spills, using the shared memory the family's model predicts.
// Then on a GPU, through the cuda backend against the float64 reference: every layout, tails in M, N and K,
// alpha/beta, bf16 and f32 out, a batch, padded leading dimensions and misaligned pointers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "backends/cuda/triton/triton_compiler.hpp"
#include "backends/cuda/triton/triton_family.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"
#include "support/gpu_run.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

// The setup's Triton (build/triton-venv) unless the caller named an interpreter.
Expected<cuda::triton::Toolchain> triton_toolchain() {
#if defined(TILEFORGE_TRITON_PYTHON)
  if (std::filesystem::exists(TILEFORGE_TRITON_PYTHON)) setenv("TILEFORGE_PYTHON", TILEFORGE_TRITON_PYTHON, 0);
#endif
  return cuda::triton::toolchain();
}

Problem half(int64_t m, int64_t n, int64_t k, Layout layout = Layout::RR, DType in = DType::f16,
             DType out = DType::f16) {
  return testing::make_problem(m, n, k, layout, in, out);
}

Config triton(int64_t bm, int64_t bn, int64_t bk, int64_t group, int64_t warps, int64_t stages) {
  return Config{"triton", {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"GROUP_M", group}, {"WARPS", warps},
                           {"STAGES", stages}}};
}

TEST(TritonCompile, PlannedConfigsFitEveryTargetAsModelled) {
  auto tc = triton_toolchain();
  if (!tc.ok()) GTEST_SKIP() << "SKIPPED: " << tc.status().message();
  const std::filesystem::path dir = testing::fresh_test_dir("triton-compile");
  for (const char* name : {"h200", "a100-sxm", "mi300x"}) {
    const hw::HwProfile prof = testing::profile(name);
    const cuda::TritonTarget target = cuda::triton_target(prof);
    if (!tc->has(target.backend == "cuda" ? "nvidia" : "amd")) continue;
    for (const Problem& p : {half(4096, 4096, 4096), half(1000, 1000, 1000), half(512, 512, 8192),
                             half(16, 4096, 4096, Layout::RC)}) {
      plan::PlanOptions o;
      o.family = "triton";
      o.top_n = 2;
      auto plan = plan::make_plan(p.normalized(), prof, o);
      ASSERT_TRUE(plan.ok() && plan->served) << name << " " << p.describe();
      for (std::size_t i = 0; i < std::min<std::size_t>(2, plan->ranked.size()); ++i) {
        const Config& c = plan->ranked[i].config;
        const std::string what = fmt::format("{} {} {}", name, p.describe(), c.describe());
        auto b = cuda::triton::compile(cuda::triton_request(p.normalized(), c, target), dir.string());
        ASSERT_TRUE(b.ok()) << what << ": " << b.status().to_string();
        EXPECT_EQ(b->kind, target.backend == "cuda" ? "cubin" : "hsaco") << what;
        EXPECT_EQ(b->num_warps, c.at("WARPS")) << what;
        EXPECT_LE(b->shared_bytes + b->static_shared_bytes, prof.smem_per_block_bytes) << what;
        EXPECT_GT(b->registers, 0) << what;
        EXPECT_EQ(b->spill_bytes, 0) << what;
        EXPECT_LE(int64_t(b->registers) * c.at("WARPS") * target.warp_size, prof.registers_per_core) << what;
        const cuda::TritonResources r = cuda::triton_resources(p.normalized(), target, c);
        if (target.backend == "cuda" && r.pipelined) {
          // The model's shared memory is the compiler's, dynamic and static, on NVIDIA targets.
          EXPECT_EQ(r.smem_bytes, b->shared_bytes + b->static_shared_bytes) << what;
          EXPECT_EQ(r.wgmma, b->wgmma) << what;
        } else {
          EXPECT_LE(b->shared_bytes + b->static_shared_bytes, r.smem_bytes) << what;
        }
      }
    }
  }
  // A second compile of the same request comes from the cache.
  const hw::HwProfile h200 = testing::profile("h200");
  const auto req = cuda::triton_request(half(256, 256, 256).normalized(), triton(64, 64, 64, 1, 4, 3),
                                        cuda::triton_target(h200));
  auto first = cuda::triton::compile(req, dir.string());
  auto again = cuda::triton::compile(req, dir.string());
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(first->data, again->data);
  std::filesystem::remove_all(dir);
}

using TritonGpuTest = testing::CudaGpuTest;

TEST_F(TritonGpuTest, EveryLayoutTailAndEpilogueAgainstTheReference) {
  auto tc = triton_toolchain();
  if (!tc.ok()) GTEST_SKIP() << "SKIPPED: " << tc.status().message();
  uint64_t seed = 70;
  const Config configs[] = {triton(128, 128, 64, 8, 8, 3), triton(64, 128, 32, 4, 4, 4), triton(32, 64, 64, 1, 2, 2),
                            triton(128, 256, 64, 8, 8, 3)};
  for (const Config& c : configs) {
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
      EXPECT_EQ(run(half(512, 512, 512, l), &c, 0, ++seed), "triton") << c.describe() << " " << to_string(l);
    }
    // Tails: M, N and K off the tile and off 16 (lda 136 and ldb 344: multiples of 8, the divisibility-8 hint).
    EXPECT_EQ(run(half(1000, 1000, 1000), &c, 0, ++seed), "triton") << c.describe();
    EXPECT_EQ(run(half(136, 344, 1111, Layout::CR), &c, 0, ++seed), "triton") << c.describe();
    EXPECT_EQ(run(half(300, 264, 72, Layout::RR, DType::bf16, DType::f32), &c, 0, ++seed), "triton") << c.describe();
  }
  // Leading dimensions off 8 elements (rows loaded two bytes at a time): configs whose staging the space admits.
  for (const Config& c : {triton(64, 64, 32, 1, 4, 2), triton(32, 32, 32, 4, 2, 3)}) {
    const Problem odd = half(77, 333, 1111, Layout::CR);
    ASSERT_TRUE(cuda::triton_space(odd.normalized(), device_.profile).admits(c)) << c.describe();
    EXPECT_EQ(run(odd, &c, 0, ++seed), "triton") << c.describe();
  }
  // alpha and beta, padded leading dimensions, a batch.
  Problem p = half(200, 264, 328);
  p.lda = p.min_lda() + 8;
  p.ldb = p.min_ldb() + 24;
  p.ldc = p.min_ldc() + 5;
  p.alpha = -0.75;
  p.beta = 1.5;
  for (const Config& c : configs) EXPECT_EQ(run(p, &c, 0, ++seed), "triton") << c.describe();
  Problem batched = half(96, 160, 224, Layout::RC, DType::bf16, DType::bf16);
  batched.batch = 3;
  for (const Config& c : configs) EXPECT_EQ(run(batched, &c, 0, ++seed), "triton") << c.describe();
  // Operands one element past an aligned base: the same config compiled without the pointers' divisibility.
  EXPECT_EQ(run(half(256, 256, 256), &configs[1], 1, ++seed), "triton");
}

}  // namespace
}  // namespace tileforge
