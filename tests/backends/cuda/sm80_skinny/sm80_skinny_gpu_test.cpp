// The sm80_skinny family compiled by NVRTC (no GPU needed: no spills, for sm_80 and sm_90a) and run on a GPU through
// the cuda backend against the float64 reference computed on the device: M from 1 to 16, tails in N and K, f16 and
// bf16 in, 16-bit and f32 out, alpha/beta, padded leading dimensions, split-K bit-identical from run to run and on
// another stream, a caller's workspace, misaligned pointers through the sm80 family. GPU cases skip visibly
// without a GPU.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/backend.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/sm80_skinny/sm80_skinny_family.hpp"
#include "hw/cuda_driver.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/nvrtc.hpp"
#include "measure/timer.hpp"
#include "plan/kernel_family.hpp"
#include "support/gpu_run.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

Problem half(int64_t m, int64_t n, int64_t k, DType in = DType::f16, DType out = DType::f16) {
  return testing::make_problem(m, n, k, Layout::RR, in, out);
}

Config skinny(int64_t warps, int64_t stages, int64_t split) {
  return Config{"sm80_skinny", {{"WARPS", warps}, {"STAGES", stages}, {"SPLIT_K", split}}};
}

TEST(SkinnyFamily, NvrtcBuildsEveryWarpCountWithoutSpillsForSm80AndSm90a) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok()) GTEST_SKIP() << "SKIPPED: NVRTC not available: " << nvrtc.status().message();
  const plan::KernelFamily* f = plan::find_family("sm80_skinny");
  ASSERT_NE(f, nullptr);
  const std::filesystem::path dir = testing::fresh_test_dir("skinny-nvrtc");
  jit::KernelCache cache(dir.string());
  for (const char* arch : {"sm_80", "sm_90a"}) {
    if (!(*nvrtc)->check_arch(arch).ok()) continue;
    for (const Config& c : {skinny(8, 8, 1), skinny(8, 4, 3), skinny(16, 4, 16)}) {
      for (const Problem& p : {half(16, 4096, 4096), half(1, 4096, 4096, DType::bf16, DType::f32)}) {
        auto r = f->compile_ahead(p.normalized(), c, arch, &cache);
        ASSERT_TRUE(r.ok()) << arch << " " << c.describe() << ": " << r.status().to_string();
        EXPECT_GT(r->registers, 0);
        EXPECT_LE(int64_t(r->registers) * 32 * c.at("WARPS"), 65536) << arch << " " << c.describe();
      }
    }
  }
  std::filesystem::remove_all(dir);
}

using SkinnyGpuTest = testing::CudaGpuTest;

// The family dispatch runs a problem with on this GPU: sm80_skinny where it takes the problem, unless it yields it
// to the sm90 family's transposed run (on sm_90, from kSkinnyLeadMOnWgmma + 1 rows up).
std::string dispatch_family(const Problem& p, const Device& device) {
  const plan::KernelFamily* f = plan::find_family("sm80_skinny");
  return f->yields(device.profile, p.normalized()).empty() ? "sm80_skinny" : "sm90";
}

TEST_F(SkinnyGpuTest, DispatchAndEveryConfigKindAgainstTheReference) {
  EXPECT_EQ(cuda_->space(half(16, 4096, 4096).normalized(), device_).family,
            dispatch_family(half(16, 4096, 4096), device_));
  EXPECT_EQ(cuda_->space(half(4, 4096, 4096).normalized(), device_).family, "sm80_skinny");
  EXPECT_NE(cuda_->space(half(17, 4096, 4096).normalized(), device_).family, "sm80_skinny");
  uint64_t seed = 40;
  // Dispatch and the heuristic on tails: N past a strip, K not a multiple of 16, one row. Where dispatch runs another
  // family, the heuristic's config still runs here, pinned.
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 4096, 4096}, {16, 4104, 1000}, {3, 136, 72}, {9, 64, 16},
                         {16, 8, 5000}}) {
    const Problem p = half(m, n, k);
    EXPECT_EQ(run(p, nullptr, 0, ++seed), dispatch_family(p, device_)) << m << "x" << n << "x" << k;
    const Config h = cuda::skinny_heuristic(p.normalized(), device_.profile);
    EXPECT_EQ(run(p, &h, 0, ++seed), "sm80_skinny") << m << "x" << n << "x" << k << " " << h.describe();
  }
  // Both warp counts, deep and shallow rings, split-K with a short last slice; bf16 and f32 out.
  const Config configs[] = {skinny(8, 2, 1), skinny(8, 8, 2), skinny(16, 4, 3), skinny(8, 4, 12)};
  for (const Config& c : configs) {
    EXPECT_EQ(run(half(13, 1032, 2056), &c, 0, ++seed), "sm80_skinny") << c.describe();
    EXPECT_EQ(run(half(16, 520, 4104, DType::bf16, DType::bf16), &c, 0, ++seed), "sm80_skinny") << c.describe();
    EXPECT_EQ(run(half(2, 264, 1960, DType::f16, DType::f32), &c, 0, ++seed), "sm80_skinny") << c.describe();
  }
  // alpha and beta, padded leading dimensions (multiples of 8).
  Problem p = half(11, 1032, 3000);
  p.lda = p.min_lda() + 8;
  p.ldb = p.min_ldb() + 24;
  p.ldc = p.min_ldc() + 5;
  p.alpha = -0.75;
  p.beta = 1.5;
  for (const Config& c : configs) EXPECT_EQ(run(p, &c, 0, ++seed), "sm80_skinny") << c.describe();
  // A and B one element past an aligned base: prepared as sm80_skinny, run by the sm80 family (with a warning).
  EXPECT_EQ(run(half(16, 1024, 1024), &configs[1], 1, ++seed), "sm80_skinny");
}

TEST_F(SkinnyGpuTest, SplitKIsBitIdenticalFromRunToRunOnTwoStreamsAndInTheCallersWorkspace) {
  const Problem p = half(16, 2056, 8200).normalized();
  const Config c = skinny(8, 4, 12);
  auto ops = testing::make_operands(p, 77);
  auto a = upload(ops.a), b = upload(ops.b);
  auto kernel = cuda_->prepare(p, c, device_);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  const std::size_t ws_bytes = (*kernel)->workspace_bytes(p);
  EXPECT_EQ(int64_t(ws_bytes), cuda::skinny_grid(p, c).workspace_bytes);
  auto ws = timer_->allocate(ws_bytes);
  ASSERT_TRUE(ws.ok());
  ASSERT_TRUE((*ws)->fill_bytes(0x5A).ok());  // garbage counters: the kernel must zero them itself
  auto other = cuda::Stream::create();
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  std::vector<std::vector<unsigned char>> outs;
  for (int i = 0; i < 4; ++i) {
    auto out = upload(ops.c);
    GemmArgs args{a->data(), b->data(), out->data(), i == 2 ? static_cast<void*>(other->get()) : timer_->stream()};
    if (i == 3) {
      args.workspace = (*ws)->data();
      args.workspace_bytes = ws_bytes;
    }
    outs.push_back(run_and_read(**kernel, p, args, *out));
    ASSERT_EQ(outs.back().size(), ops.c.size());
  }
  EXPECT_EQ(outs[0], outs[1]) << "two runs differ";
  EXPECT_EQ(outs[0], outs[2]) << "another stream differs";
  EXPECT_EQ(outs[0], outs[3]) << "the caller's workspace differs";
  // A workspace too small is refused with the size needed.
  auto out = upload(ops.c);
  GemmArgs small{a->data(), b->data(), out->data(), timer_->stream()};
  small.workspace = (*ws)->data();
  small.workspace_bytes = ws_bytes - 4;
  const Status s = cuda_->run(**kernel, p, small);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find(std::to_string(ws_bytes)), std::string::npos) << s.to_string();
  // And the result is right.
  EXPECT_EQ(run(p, &c, 0, 77), "sm80_skinny");
}

}  // namespace
}  // namespace tileforge
