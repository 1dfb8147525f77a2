// The analytic block-size model: a worked example by hand, and the cache-fit properties it must keep.
#include <gtest/gtest.h>

#include "backends/cpu/blocking.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "hw/hw.hpp"

namespace tileforge::cpu {
namespace {

hw::HwProfile synthetic_cpu(int64_t l1, int l1_ways, int64_t l2, int l2_ways, int64_t l3, int l3_ways) {
  hw::HwProfile p;
  p.name = "synthetic";
  p.kind = "cpu";
  p.cores = 2;
  p.fma_pipes = 2;  // the usual x86 core: two FMA pipes of four cycles
  p.fma_latency_cycles = 4;
  p.caches = {{1, "data", l1, l1_ways, 64, 1}, {2, "unified", l2, l2_ways, 64, 1}, {3, "unified", l3, l3_ways, 64, 2}};
  return p;
}

TEST(AnalyticBlocking, RegisterBlockPerFamily) {
  // Most FLOPs per element loaded among kernels that fit the registers and hide FMA latency.
  const hw::HwProfile p = synthetic_cpu(32 << 10, 8, 512 << 10, 8, 32 << 20, 16);
  EXPECT_EQ(choose_register_block("cpu-avx2", p).mr, 6);
  EXPECT_EQ(choose_register_block("cpu-avx2", p).nr, 16);
  EXPECT_EQ(choose_register_block("cpu-avx512", p).mr, 14);
  EXPECT_EQ(choose_register_block("cpu-avx512", p).nr, 32);
  EXPECT_EQ(choose_register_block("cpu-generic", p).mr, 4);
  EXPECT_EQ(choose_register_block("cpu-generic", p).nr, 8);
  EXPECT_NE(choose_register_block("cpu-avx2", p).reasons[0].find("cover 2 FMA pipes x 4 cycles of latency"),
            std::string::npos);
}

TEST(AnalyticBlocking, LatencyCoverComesFromTheRecord) {
  // A core of one pipe and two cycles needs only 2 independent accumulators; one of three pipes and six cycles 18,
  // which no cpu-avx2 micro-kernel that fits 16 registers has: the most intensive one is then taken, said so by
  // the pipes and latency in the reason.
  hw::HwProfile slow = synthetic_cpu(32 << 10, 8, 512 << 10, 8, 32 << 20, 16);
  slow.fma_pipes = 3;
  slow.fma_latency_cycles = 6;
  const BlockSizes b = choose_register_block("cpu-avx2", slow);
  EXPECT_NE(b.reasons[0].find("cover 3 FMA pipes x 6 cycles"), std::string::npos) << b.reasons[0];
  // A record without them: latency cover is not checked, and the reason says the profile lacks the numbers.
  hw::HwProfile unknown = slow;
  unknown.fma_pipes = 0;
  unknown.fma_latency_cycles = 0;
  const BlockSizes u = choose_register_block("cpu-avx2", unknown);
  EXPECT_GT(u.mr, 0);
  EXPECT_NE(u.reasons[0].find("the profile records no fma_pipes"), std::string::npos) << u.reasons[0];
}

TEST(AnalyticBlocking, WorkedExampleZen3LikeCaches) {
  // 32 KB 8-way L1 (64 sets), 512 KB 8-way L2 (1024 sets), 32 MB 16-way L3, MR x NR = 6 x 16:
  //   C_Ar = floor(7 / (1 + 16/6)) = 1; KC = 1 * 64 * 64 / (6 * 4) = 170 -> 168 (multiple of 8).
  //   L2 way = 64 KB; B micro-panel 168*16*4 = 10.5 KB -> 1 way; A gets 8 - 1 - 1 = 6 ways:
  //   MC = 6 * 65536 / (168 * 4) = 585 -> 582 (multiple of 6).
  //   L3 way = 2 MB; two A blocks 2 * 582*168*4 = 782 KB -> 1 way; B gets 16 - 1 - 1 = 14 ways:
  //   NC = 14 * 2 MiB / (168 * 4) = 43690 -> capped at 16384.
  auto b = analytic_block_sizes(synthetic_cpu(32 << 10, 8, 512 << 10, 8, 32 << 20, 16), "cpu-avx2", 2);
  EXPECT_EQ(b.kc, 168);
  EXPECT_EQ(b.mc, 582);
  EXPECT_EQ(b.nc, 16384);
  EXPECT_GE(b.reasons.size(), 4u);
}

TEST(AnalyticBlocking, BlocksFitTheirCachesOnEveryCpuProfile) {
  std::vector<hw::HwProfile> profiles;
  for (const auto& name : hw::builtin_profile_names()) {
    auto p = hw::load_profile(name);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    if (p->kind == "cpu") profiles.push_back(*p);
  }
  profiles.push_back(hw::host_cpu_profile());
  ASSERT_GE(profiles.size(), 3u);
  for (const auto& prof : profiles) {
    for (const std::string& family : all_families()) {
      auto b = analytic_block_sizes(prof, family, prof.cores);
      const auto* l1 = prof.cache(1);
      const auto* l2 = prof.cache(2);
      ASSERT_NE(l1, nullptr) << prof.name;
      ASSERT_NE(l2, nullptr) << prof.name;
      EXPECT_EQ(b.kc % 8, 0);
      EXPECT_EQ(b.mc % b.mr, 0);
      EXPECT_EQ(b.nc % b.nr, 0);
      // The B micro-panel and one A micro-panel fit L1; the A block fits L2.
      EXPECT_LE((b.kc * b.nr + b.kc * b.mr) * 4, l1->size_bytes) << prof.name << " " << family;
      EXPECT_LE(b.mc * b.kc * 4, l2->size_bytes) << prof.name << " " << family;
      if (const auto* l3 = prof.cache(3)) {
        EXPECT_LE(b.kc * b.nc * 4, l3->size_bytes) << prof.name << " " << family;
      }
    }
  }
}

TEST(AnalyticBlocking, LargerCachesNeverGiveSmallerBlocks) {
  auto small = analytic_block_sizes(synthetic_cpu(32 << 10, 8, 512 << 10, 8, 16 << 20, 16), "cpu-avx2", 2);
  auto large = analytic_block_sizes(synthetic_cpu(48 << 10, 12, 2 << 20, 16, 64 << 20, 16), "cpu-avx2", 2);
  EXPECT_GE(large.kc, small.kc);
  EXPECT_GE(large.mc * large.kc, small.mc * small.kc);
  EXPECT_GE(large.nc * large.kc, small.nc * small.kc);
}

}  // namespace
}  // namespace tileforge::cpu
