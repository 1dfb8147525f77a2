// The sm90 family on an sm_90a GPU, through the cuda backend, against the float64 reference computed on the device:
// all four layouts, f16 and bf16 in, 16-bit and f32 out, tails in M, N and K, alpha/beta, skinny shapes, clusters
// along M and N, one and two consumer warpgroups, every epilogue; dispatch's family on the GPU; misaligned pointers
// and leading dimensions TMA cannot take run the sm80 family. Skips visibly without an sm_90a GPU.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/backend.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "measure/timer.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"
#include "plan/kernel_family.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

Config sm90_config(int bm, int bn, int st, int cons, int cm, int cn, int gm, int epi, int split, int stm) {
  return Config{"sm90", {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", 64}, {"STAGES", st}, {"CONSUMERS", cons},
                         {"CLUSTER_M", cm}, {"CLUSTER_N", cn}, {"GROUP_M", gm}, {"EPILOGUE", epi},
                         {"EPI_SPLIT", split}, {"STMATRIX", stm}}};
}

class Sm90GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = open_device("cuda");
    if (!d.ok()) GTEST_SKIP() << "SKIPPED: no CUDA device (" << d.status().message() << ")";
    auto props = cuda::query_device(d->ordinal);
    ASSERT_TRUE(props.ok()) << props.status().to_string();
    if (cuda::nvrtc_arch(props->cc_major, props->cc_minor) != "sm_90a") {
      GTEST_SKIP() << "SKIPPED: the sm90 family needs an sm_90a GPU; this is " << props->name;
    }
    device_ = *d;
    auto t = measure::make_timer(device_);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    timer_ = std::move(*t);
    cuda_ = find_backend("cuda");
    ASSERT_NE(cuda_, nullptr);
  }

  // Runs `config` (the backend's own choice when null) on random operands placed `offset_elems` past an aligned
  // base and checks every element on the device. Returns the family of the kernel that ran.
  std::string run(const Problem& problem, const Config* config, int64_t offset_elems = 0, uint64_t seed = 1) {
    auto ops = testing::make_operands(problem, seed);
    const Problem& p = ops.problem;
    const std::size_t in = size_of(p.precision.input), off = std::size_t(offset_elems) * in;
    auto place = [&](const std::vector<unsigned char>& host, std::size_t extra) {
      std::vector<unsigned char> padded(host.size() + extra, 0);
      std::memcpy(padded.data() + extra, host.data(), host.size());
      auto buf = timer_->allocate(padded.size());
      EXPECT_TRUE(buf.ok());
      EXPECT_TRUE((*buf)->upload(padded.data()).ok());
      return std::move(*buf);
    };
    auto a = place(ops.a, off), b = place(ops.b, off), c_in = place(ops.c, 0), c = place(ops.c, 0);
    if (p.beta == 0.0) {
      EXPECT_TRUE(c->fill_bytes(0xFF).ok());  // NaN everywhere: unwritten elements show
    }
    Config chosen;
    if (config) {
      chosen = *config;
    } else {
      auto h = cuda_->heuristic(p, device_);
      EXPECT_TRUE(h.ok()) << h.status().to_string();
      if (!h.ok()) return {};
      chosen = *h;
    }
    auto kernel = cuda_->prepare(p, chosen, device_);
    EXPECT_TRUE(kernel.ok()) << chosen.describe() << ": " << kernel.status().to_string();
    if (!kernel.ok()) return {};
    GemmArgs args{static_cast<char*>(a->data()) + off, static_cast<char*>(b->data()) + off, c->data(), timer_->stream()};
    Status s = cuda_->run(**kernel, p, args);
    EXPECT_TRUE(s.ok()) << chosen.describe() << ": " << s.to_string();
    struct View final : measure::OperandBuffer {
      View(measure::OperandBuffer& base, std::size_t off, std::size_t bytes) : base_(base), off_(off), bytes_(bytes) {}
      void* data() override { return static_cast<char*>(base_.data()) + off_; }
      std::size_t bytes() const override { return bytes_; }
      const void* host_view() const override { return nullptr; }
      Status upload(const void*) override { return {}; }
      Status download(void*) const override { return {}; }
      Status copy_from(const OperandBuffer&) override { return {}; }
      Status fill_bytes(unsigned char) override { return {}; }
      measure::OperandBuffer& base_;
      std::size_t off_, bytes_;
    };
    View va(*a, off, ops.a.size()), vb(*b, off, ops.b.size());
    auto e = timer_->verify_on_device(p, va, vb, *c_in, *c);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    if (!e.ok()) return {};
    EXPECT_EQ(e->checked, p.m * p.n * p.batch);
    const Status check = verify::check(p, *e);
    EXPECT_TRUE(check.ok()) << p.describe() << " " << chosen.describe() << ": " << check.to_string();
    return (*kernel)->config().family;
  }

  Device device_;
  std::unique_ptr<measure::RepTimer> timer_;
  Backend* cuda_ = nullptr;
};

Problem half(int64_t m, int64_t n, int64_t k, Layout l, DType in = DType::f16, DType out = DType::f16) {
  return testing::make_problem(m, n, k, l, in, out);
}

TEST_F(Sm90GpuTest, DispatchRunsTheSm90FamilyHere) {
  const Problem p = half(4096, 4096, 4096, Layout::RR).normalized();
  EXPECT_EQ(cuda_->space(p, device_).family, "sm90");
  const plan::KernelFamily* f = plan::family_for("cuda", p, device_);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->name(), "sm90");
  // Leading dimensions TMA cannot take, batches, and outputs of fewer than 128 tiles of 64x64: the sm80 family.
  EXPECT_EQ(cuda_->space(half(4095, 4097, 4093, Layout::RR).normalized(), device_).family, "sm80");
  Problem batched = half(1024, 1024, 64, Layout::RR);
  batched.batch = 2;
  EXPECT_EQ(cuda_->space(batched.normalized(), device_).family, "sm80");
  EXPECT_EQ(cuda_->space(half(256, 256, 16384, Layout::RR).normalized(), device_).family, "sm80");
}

TEST_F(Sm90GpuTest, HeuristicInEveryLayoutAndDtypeWithTails) {
  // Tails in M, N and K (leading dimensions stay multiples of 8), a skinny M, a K of three k-steps.
  const int64_t shapes[][3] = {{1000, 1064, 1000}, {520, 1048, 136}, {16, 8200, 264}, {4104, 136, 72}};
  uint64_t seed = 10;
  for (auto& s : shapes) {
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
      for (DType in : {DType::f16, DType::bf16}) {
        const Problem p = half(s[0], s[1], s[2], l, in, in);
        EXPECT_EQ(run(p, nullptr, 0, ++seed), "sm90") << p.describe();
      }
    }
  }
  // f32 output (direct epilogue).
  for (Layout l : {Layout::RR, Layout::CC}) {
    EXPECT_EQ(run(half(1000, 1064, 1000, l, DType::bf16, DType::f32), nullptr, 0, ++seed), "sm90");
  }
}

TEST_F(Sm90GpuTest, EveryKindOfConfigInEveryLayoutThatTakesIt) {
  const Config configs[] = {
      sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1),   // the probe's best (L16)
      sm90_config(128, 256, 4, 2, 2, 1, 16, 1, 2, 1),  // 2x1 cluster, half staging tiles
      sm90_config(256, 128, 3, 2, 1, 2, 1, 1, 1, 0),   // 1x2 cluster, row-major walk, 32-bit staging stores
      sm90_config(128, 192, 4, 2, 1, 1, 8, 1, 1, 1),   // BLOCK_N 192
      sm90_config(128, 256, 3, 2, 1, 1, 8, 2, 1, 1),   // deferred epilogue
      sm90_config(128, 128, 5, 2, 1, 1, 4, 0, 1, 0),   // direct epilogue
      sm90_config(64, 64, 8, 1, 1, 2, 8, 1, 1, 1),     // one consumer, 1x2 cluster of 64x64 (32-row A boxes)
      sm90_config(64, 128, 8, 1, 1, 1, 8, 1, 1, 1),    // one consumer
      sm90_config(256, 64, 4, 1, 2, 1, 8, 1, 1, 1),    // one consumer, four m64 blocks, 2x1 cluster
      sm90_config(128, 64, 8, 2, 1, 2, 8, 1, 1, 1),    // two consumers of 64x64, 1x2 cluster
  };
  uint64_t seed = 100;
  for (const Config& c : configs) {
    int ran = 0;
    for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC}) {
      const DType in = seed % 2 ? DType::bf16 : DType::f16;
      // Ragged in every dimension against every tile (leading dimensions stay multiples of 8): 1032 = 8 x 128 + 8,
      // 1544 = 6 x 256 + 8, 2056 = 32 x 64 + 8.
      const Problem p = half(1032, 1544, 2056, l, in, in);
      ++seed;
      // The multicast splits need whole 64-row (column-major A) or 64-column (row-major B) boxes per CTA.
      if (!cuda::sm90_space(p.normalized(), device_.profile).check(c).ok()) continue;
      EXPECT_EQ(run(p, &c, 0, seed), "sm90") << c.describe();
      ++ran;
    }
    EXPECT_GE(ran, 2) << c.describe();
  }
}

TEST_F(Sm90GpuTest, AlphaBetaPaddedLeadingDimensionsAndSkinnyShapes) {
  Problem p = half(1000, 1064, 136, Layout::RC);
  p.lda = p.min_lda() + 8;
  p.ldb = p.min_ldb() + 16;
  p.ldc = p.min_ldc() + 8;
  p.alpha = -0.75;
  p.beta = 1.5;  // the TMA-store epilogues take the direct path for beta != 0
  for (const Config& c : {sm90_config(128, 256, 3, 2, 1, 1, 8, 1, 1, 1), sm90_config(64, 64, 8, 1, 1, 2, 8, 1, 1, 1)}) {
    EXPECT_EQ(run(p, &c, 0, 300), "sm90");
  }
  // beta == 0 with alpha, through the TMA store; an ldc that only the direct epilogue takes.
  p.beta = 0.0;
  EXPECT_EQ(run(p, nullptr, 0, 301), "sm90");
  p.ldc = p.min_ldc() + 6;
  const Config direct = sm90_config(128, 128, 5, 2, 1, 1, 4, 0, 1, 0);
  EXPECT_EQ(run(p, &direct, 0, 302), "sm90");
  Problem q = half(16, 8200, 4096, Layout::RR);
  q.alpha = 0.5;
  EXPECT_EQ(run(q, nullptr, 0, 303), "sm90");
  const Config skinny = sm90_config(64, 64, 8, 1, 1, 2, 8, 1, 1, 1);
  EXPECT_EQ(run(half(16, 8200, 4096, Layout::RC, DType::bf16, DType::bf16), &skinny, 0, 304), "sm90");
}

TEST_F(Sm90GpuTest, WhatTmaCannotTakeRunsTheSm80Family) {
  // A and B one element past an aligned base: the sm90 kernel hands the call to the sm80 family and says so.
  const Problem p = half(1024, 1024, 256, Layout::RR);
  auto c = cuda_->heuristic(p.normalized(), device_);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->family, "sm90");
  EXPECT_EQ(run(p, &*c, 1, 400), "sm90");  // prepared as sm90; the run itself goes through sm80 (the warning says so)
  // An odd leading dimension, and a C too small for the persistent grid: the backend's own choice is sm80's.
  EXPECT_EQ(run(half(301, 263, 517, Layout::CC), nullptr, 0, 401), "sm80");
  EXPECT_EQ(run(half(256, 256, 1024, Layout::RR), nullptr, 0, 402), "sm80");
}

}  // namespace
}  // namespace tileforge
