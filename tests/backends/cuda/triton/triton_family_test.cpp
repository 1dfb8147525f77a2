// The triton family without a compiler or GPU: its targets, the problems it takes, its space and heuristic on the
// NVIDIA and AMD records, the compile request's specialisation (divisibility, constexprs) per problem, and the
// planner serving the MI300X, which no other family plans for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/cuda/triton/triton_family.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

using cuda::triton_request;
using cuda::triton_target;

Problem half(int64_t m, int64_t n, int64_t k, Layout layout = Layout::RR) {
  return testing::make_problem(m, n, k, layout, DType::f16, DType::f16).normalized();
}

// The divisor the request claims for an argument (0: none).
int divisor(const cuda::triton::Request& r, const std::string& x) {
  for (const auto& [name, d] : r.divisible) {
    if (name == x) return d;
  }
  return 0;
}

int64_t constexpr_of(const cuda::triton::Request& r, const std::string& name) {
  for (const auto& [n, value] : r.constexprs) {
    if (n == name) return value;
  }
  ADD_FAILURE() << "no constexpr " << name;
  return -1;
}

TEST(TritonFamily, TargetsFromTheChipRecord) {
  EXPECT_EQ(cuda::to_string(triton_target(testing::profile("h200"))), "cuda:90");
  EXPECT_EQ(cuda::to_string(triton_target(testing::profile("a100-sxm"))), "cuda:80");
  EXPECT_EQ(cuda::to_string(triton_target(testing::profile("mi300x"))), "hip:gfx942");
  EXPECT_EQ(triton_target(testing::profile("mi300x")).warp_size, 64);
  EXPECT_TRUE(triton_target(testing::profile("ascend-910b")).backend.empty());
  EXPECT_TRUE(triton_target(testing::profile("generic-avx2")).backend.empty());
  const plan::KernelFamily* f = plan::find_family("triton");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->fit(testing::profile("mi300x")).ok);
  EXPECT_FALSE(f->fit(testing::profile("ascend-910b")).ok);
  EXPECT_NE(f->fit(testing::profile("ascend-910b")).refusal.find("gfx942"), std::string::npos);
  auto t = cuda::parse_target("hip:gfx942");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->warp_size, 64);
  EXPECT_EQ(cuda::parse_target("sm_90a")->arch, "90");
  EXPECT_EQ(cuda::parse_target("sm_80")->sm, 80);
  EXPECT_EQ(cuda::parse_target("cuda:90")->sm, 90);
  EXPECT_FALSE(cuda::parse_target("cuda:70").ok());
  // The whole arch is the number: not its leading digits.
  EXPECT_FALSE(cuda::parse_target("cuda:9x").ok());
  EXPECT_FALSE(cuda::parse_target("cuda:90abc").ok());
  EXPECT_FALSE(cuda::parse_target("sm_9y0").ok());
  EXPECT_FALSE(cuda::parse_target("cuda:").ok());
  EXPECT_FALSE(cuda::parse_target("tpu").ok());
}

TEST(TritonFamily, TakesHalfInputsWithF32Accumulation) {
  EXPECT_EQ(cuda::triton_refusal(half(100, 200, 300)), "");
  Problem p = testing::make_problem(64, 64, 64, Layout::RR, DType::f32, DType::f32);
  EXPECT_NE(cuda::triton_refusal(p).find("f16 or bf16"), std::string::npos);
  p = testing::make_problem(64, 64, 64, Layout::RR, DType::bf16, DType::f32);
  EXPECT_EQ(cuda::triton_refusal(p), "");
  p.precision.accum = DType::f16;
  EXPECT_NE(cuda::triton_refusal(p).find("f32"), std::string::npos);
  EXPECT_NE(cuda::triton_refusal(half(int64_t(1) << 31, 8, 8)).find("32-bit"), std::string::npos);
}

// The request specialises on divisibility by 16 as Triton's JIT would, and its constexprs follow the problem.
TEST(TritonFamily, RequestSpecialisesOnTheProblemsAlignment) {
  const Config c{"triton", {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"BLOCK_K", 64}, {"GROUP_M", 8}, {"WARPS", 4},
                            {"STAGES", 3}}};
  const auto h200 = triton_target(testing::profile("h200"));
  auto r = triton_request(half(4096, 4096, 4096), c, h200);
  for (const char* a : {"a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "lda", "ldb", "ldc"}) EXPECT_EQ(divisor(r, a), 16) << a;
  EXPECT_EQ(constexpr_of(r, "EVEN_K"), 1);
  EXPECT_EQ(constexpr_of(r, "HINT_M"), 1);
  EXPECT_EQ(constexpr_of(r, "A_ROW"), 1);
  EXPECT_EQ(r.num_warps, 4);
  EXPECT_EQ(r.num_stages, 3);
  r = triton_request(half(1000, 1000, 1000, Layout::CR), c, h200, false);
  EXPECT_EQ(divisor(r, "a_ptr"), 0);
  EXPECT_EQ(divisor(r, "lda"), 8);  // 1000 is a multiple of 8, not of 16: the article's hint
  EXPECT_TRUE(cuda::triton_operands_aligned(half(1000, 1000, 1000)));
  EXPECT_EQ(divisor(triton_request(half(999, 1001, 1003), c, h200), "lda"), 0);
  EXPECT_FALSE(cuda::triton_operands_aligned(half(999, 1001, 1003)));
  EXPECT_EQ(constexpr_of(r, "EVEN_K"), 0);
  EXPECT_EQ(constexpr_of(r, "HINT_M"), 0);
  EXPECT_EQ(constexpr_of(r, "A_ROW"), 0);
  EXPECT_EQ(constexpr_of(r, "B_ROW"), 1);
  Problem p = half(256, 256, 256);
  p.alpha = 0.5;
  p.beta = 2;
  r = triton_request(p, c, h200);
  EXPECT_EQ(constexpr_of(r, "ALPHA_ONE"), 0);
  EXPECT_EQ(constexpr_of(r, "HAS_BETA"), 1);
  // Every signature entry after the runtime arguments is a constexpr, in the kernel's order.
  EXPECT_EQ(r.signature.size(), 14u + r.constexprs.size());
  EXPECT_EQ(r.signature[13].first, "beta");
  EXPECT_EQ(r.signature[14].second, "constexpr");
}

// On every record Triton serves, random problems get a legal heuristic pick and a served plan whose choice fits the
// record's shared memory and registers as the family models them.
TEST(TritonFamily, HeuristicAndPlanAreLegalOnEveryTarget) {
  const plan::KernelFamily* f = plan::find_family("triton");
  ASSERT_NE(f, nullptr);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> dim(1, 9000);
  for (const char* name : {"h200", "a100-sxm", "mi300x"}) {
    const hw::HwProfile prof = testing::profile(name);
    const auto target = triton_target(prof);
    for (int i = 0; i < 12; ++i) {
      const Problem p = half(dim(rng), dim(rng), dim(rng), Layout(i % 4));
      const ParamSpace space = cuda::triton_space(p, prof);
      const Config h = cuda::triton_heuristic(p, prof);
      ASSERT_FALSE(h.family.empty()) << name << " " << p.describe();
      EXPECT_TRUE(space.admits(h)) << name << " " << p.describe() << " " << h.describe();
      plan::PlanOptions o;
      o.family = "triton";
      auto made = plan::make_plan(p, prof, o);
      ASSERT_TRUE(made.ok()) << made.status().to_string();
      const plan::Plan& plan = *made;
      ASSERT_TRUE(plan.served) << name << " " << p.describe() << ": " << plan.unserved;
      const Config& best = plan.ranked.front().config;
      EXPECT_LE(cuda::triton_resources(p, target, best).smem_bytes, prof.smem_per_block_bytes) << best.describe();
      EXPECT_TRUE(std::isfinite(plan.ranked.front().cost.seconds));
    }
  }
}

// The tutorial's list as the triton-autotune peer: the 17 configs, each kept exactly when the family's limits admit
// it (not its planning rules: the list's 128-row tiles run on a 16-row problem, as under Triton), every kept one
// within the chip's shared memory, every one left out breaking a hardware limit.
TEST(TritonFamily, TheTutorialListIsAPeerOfTheConfigsTheLimitsAdmit) {
  const plan::KernelFamily* f = plan::find_family("triton");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(cuda::triton_tutorial_configs().size(), 17u);
  for (const char* name : {"h200", "a100-sxm"}) {
    const hw::HwProfile prof = testing::profile(name);
    for (const Problem& p : {half(4096, 4096, 4096), half(16, 4096, 4096), half(1000, 1000, 1000, Layout::CR)}) {
      const auto peers = f->config_peers(p, prof);
      ASSERT_EQ(peers.size(), 1u);
      const plan::ConfigPeer& peer = peers[0];
      EXPECT_EQ(peer.name, "triton-autotune");
      EXPECT_EQ(peer.listed, 17);
      const ParamSpace limits = cuda::triton_limits(p, prof);
      std::size_t kept = 0;
      for (const Config& c : cuda::triton_tutorial_configs()) {
        const bool in = std::find(peer.configs.begin(), peer.configs.end(), c) != peer.configs.end();
        EXPECT_EQ(in, limits.admits(c)) << name << " " << p.describe() << " " << c.describe();
        if (in) {
          ++kept;
          EXPECT_LE(cuda::triton_resources(p, triton_target(prof), c).smem_bytes, prof.smem_per_block_bytes);
        } else {
          int broken = 0;
          for (const Constraint& limit : limits.constraints) {
            if (limit.holds(c)) continue;
            ++broken;
            EXPECT_EQ(limit.layer, Layer::hardware_mapping) << limit.text;
          }
          EXPECT_GT(broken, 0) << c.describe();
        }
      }
      EXPECT_EQ(kept, peer.configs.size());
      // The A100 loses the 128x256 tiles of 8 warps and fewer (their accumulators spill under mma.sync) and more.
      EXPECT_GE(kept, 8u) << name << " " << p.describe();
    }
  }
  // On the skinny problem the planning rule refuses the list's tall tiles, the limits do not.
  const Problem skinny = half(16, 4096, 4096);
  const Config tall = cuda::triton_tutorial_configs().front();  // 128x256x64
  EXPECT_FALSE(cuda::triton_space(skinny, testing::profile("h200")).admits(tall));
  EXPECT_TRUE(cuda::triton_limits(skinny, testing::profile("h200")).admits(tall));
  // A problem the family does not take has no peer.
  EXPECT_TRUE(f->config_peers(testing::make_problem(64, 64, 64), testing::profile("h200")).empty());
}

// The MI300X has no CUDA family: the planner serves it with the triton family unasked.
TEST(TritonFamily, PlansTheMi300xByDefault) {
  auto made = plan::make_plan(half(4096, 4096, 4096), testing::profile("mi300x"));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  ASSERT_TRUE(made->served) << made->unserved;
  EXPECT_EQ(made->family, "triton");
  EXPECT_FALSE(made->log.empty());
}

}  // namespace
}  // namespace tileforge
