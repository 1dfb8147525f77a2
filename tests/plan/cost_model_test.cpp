// Properties of the analytic cost model: monotonic in the chip's resources, waves, stages, vector width, caches.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/sm80_family.hpp"
#include "hw/hw.hpp"
#include "plan/candidates.hpp"
#include "plan/cost_constants.hpp"
#include "plan/cost_model.hpp"
#include "support/test_support.hpp"

namespace tileforge::plan {
namespace {

using namespace constants;

hw::HwProfile profile(const char* name) {
  auto p = hw::load_profile(name);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return *p;
}

Problem f16(int64_t m, int64_t n, int64_t k) { return testing::make_problem(m, n, k, Layout::RR, DType::f16, DType::f16); }

Config sm80(int bm, int bn, int bk, int wm, int wn, int stages, int group_m = 8, int vec = 16, int copy = 0) {
  return Config{"sm80",
                {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"WARPS_M", wm}, {"WARPS_N", wn},
                 {"STAGES", stages}, {"GROUP_M", group_m}, {"VEC_BYTES", vec}, {"COPY_AB", copy}, {"FRAG_PIPE", 0}}};
}

// The same chip with fewer SMs: peak, L2 and registers scale with the SM count as on a MIG slice.
hw::HwProfile with_sms(hw::HwProfile p, int sms) {
  const double f = double(sms) / p.cores;
  for (auto& r : p.peaks) r.tflops *= f;
  p.cores = sms;
  return p;
}

TEST(PlanCostModel, MoreSmsAreNeverSlower) {
  const hw::HwProfile full = profile("h200");
  const std::vector<Problem> problems = {f16(4096, 4096, 4096), f16(16, 4096, 4096), f16(512, 512, 8192),
                                         f16(1000, 1000, 1000), f16(4095, 4097, 4093)};
  const std::vector<Config> configs = {sm80(128, 256, 32, 2, 4, 3), sm80(128, 128, 32, 2, 2, 4),
                                       sm80(64, 64, 64, 2, 2, 3),    sm80(16, 32, 64, 1, 2, 6),
                                       sm80(256, 128, 32, 4, 2, 4, 1)};
  for (const Problem& q : problems) {
    for (const Config& c : configs) {
      double previous = 1e30;
      for (int sms : {16, 33, 66, 100, 132}) {
        const double t = sm80_cost(q, with_sms(full, sms), c).seconds;
        EXPECT_LE(t, previous * (1 + 1e-9)) << q.describe() << " " << c.describe() << " at " << sms << " SMs";
        previous = t;
      }
    }
  }
}

TEST(PlanCostModel, MoreCoresAreNeverSlowerOnCpus) {
  const hw::HwProfile p = profile("generic-avx2");
  const Config c{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  for (const Problem& q : {testing::make_problem(4096, 4096, 4096), testing::make_problem(1024, 1024, 1024)}) {
    double previous = 1e30;
    for (int threads : {1, 2, 8, 32, 64}) {
      const double t = cpu_cost(q, p, c, threads).seconds;
      EXPECT_LT(t, previous) << q.describe() << " with " << threads << " threads";
      previous = t;
    }
  }
}

TEST(PlanCostModel, AnExtraWaveCostsAlmostAWholeWave) {
  // Tiles of 128x256 (one block per SM: registers) on 132 SMs: 132 tiles fill one wave; one more tile needs a
  // second wave for one SM.
  const hw::HwProfile p = profile("h200");
  const Config c = sm80(128, 256, 32, 2, 4, 4);
  const Cost one = sm80_cost(f16(128 * 132, 256, 4096), p, c);
  const Cost two = sm80_cost(f16(128 * 133, 256, 4096), p, c);
  EXPECT_EQ(one.occupancy, 1);
  EXPECT_EQ(one.waves.waves, 1);
  EXPECT_EQ(two.waves.waves, 2);
  EXPECT_GT(two.seconds / one.seconds, 1.8);
}

TEST(PlanCostModel, FewerWavesRankHigherWhenAllElseIsEqual) {
  // Two chips that differ only in SM count, so the same config has 2 waves on one and 1 on the other.
  const hw::HwProfile p = profile("h200");
  hw::HwProfile more = p;
  more.cores = 264;  // same per-SM rate: the peak grows with the SMs
  for (auto& r : more.peaks) r.tflops *= 2;
  const Config c = sm80(128, 256, 32, 2, 4, 4);
  const Problem q = f16(128 * 264, 256, 4096);
  const Cost two = sm80_cost(q, p, c), one = sm80_cost(q, more, c);
  EXPECT_EQ(two.waves.waves, 2);
  EXPECT_EQ(one.waves.waves, 1);
  EXPECT_LT(one.seconds, two.seconds);
}

TEST(PlanCostModel, StagesCoverLatencyUntilTheyDoNot) {
  const hw::HwProfile p = profile("a100-sxm");
  const Problem q = f16(4096, 4096, 4096);
  const Cost s2 = sm80_cost(q, p, sm80(128, 256, 32, 2, 4, 2));
  const Cost s3 = sm80_cost(q, p, sm80(128, 256, 32, 2, 4, 3));
  const Cost s6 = sm80_cost(q, p, sm80(128, 256, 32, 2, 4, 6));
  EXPECT_EQ(s2.bound, "latency");
  EXPECT_LT(s3.seconds, s2.seconds);
  EXPECT_GT(s2.latency_s, s3.latency_s);
  // Once latency is hidden, more stages only lengthen the prologue.
  EXPECT_LT(s3.seconds, s6.seconds);
  EXPECT_LT(s3.fill_s, s6.fill_s);
}

TEST(PlanCostModel, NarrowLoadsAndCopiesCost) {
  const hw::HwProfile p = profile("h200");
  const Problem q = f16(2048, 2048, 2048);
  const double v16 = sm80_cost(q, p, sm80(128, 128, 32, 2, 2, 4, 8, 16)).seconds;
  const double v4 = sm80_cost(q, p, sm80(128, 128, 32, 2, 2, 4, 8, 4)).seconds;
  const double v2 = sm80_cost(q, p, sm80(128, 128, 32, 2, 2, 4, 8, 2)).seconds;
  const double copy = sm80_cost(q, p, sm80(128, 128, 32, 2, 2, 4, 8, 16, 1)).seconds;
  EXPECT_LT(v16, v4);
  EXPECT_LT(v4, v2);
  EXPECT_GT(copy, v16);  // aligned operands gain nothing from a copy
}

TEST(PlanCostModel, MmaSyncOnHopperIsCreditedLessOfThePeak) {
  const Problem q = f16(8192, 8192, 8192);
  Config c = sm80(128, 256, 32, 2, 4, 4);
  c.params["FRAG_PIPE"] = 1;  // the pipelined kernel: the share is the instruction's, not the stalls'
  const Cost hopper = sm80_cost(q, profile("h100-sxm"), c);
  const Cost ampere = sm80_cost(q, profile("a100-sxm"), c);
  EXPECT_LT(hopper.compute_share, 0.66);
  EXPECT_GT(ampere.compute_share, 0.7);
  EXPECT_LE(ampere.compute_share, 0.85 + 1e-9);
}

TEST(PlanCostModel, FragmentPipeliningIsPredictedFaster) {
  // Measured on the H200: FRAG_PIPE=0 slower in every pair of the public suite (cost_constants.hpp).
  for (const Problem& q : {f16(4096, 4096, 4096), f16(256, 256, 16384), f16(16, 4096, 4096)}) {
    Config off = sm80(64, 64, 64, 2, 2, 4);
    Config on = off;
    on.params["FRAG_PIPE"] = 1;
    const Cost slow = sm80_cost(q, profile("h200"), off);
    const Cost fast = sm80_cost(q, profile("h200"), on);
    EXPECT_LT(fast.seconds, slow.seconds) << q.m << "x" << q.n << "x" << q.k;
    EXPECT_GT(fast.seconds, slow.seconds / 1.25) << q.m << "x" << q.n << "x" << q.k;
  }
}

TEST(PlanCostModel, ComputeRateNeedsFourWarpsPerSmAndPerBlock) {
  // Measured on the H200, kernel version 3 (cost_constants.hpp): a 4-warp block with 64x32 warp tiles runs 1024^3
  // at full rate alone on its SM; 2-warp blocks run slower however many share the SM.
  const hw::HwProfile h200 = profile("h200");
  auto compute = [&](const Problem& q, Config c) {
    c.params["FRAG_PIPE"] = 1;
    return sm80_cost(q, h200, c).compute_s;
  };
  // One 64x128 tile per SM at 1024^3: 4 warps compute as fast as 8.
  EXPECT_NEAR(compute(f16(1024, 1024, 1024), sm80(64, 128, 64, 1, 4, 4)),
              compute(f16(1024, 1024, 1024), sm80(64, 128, 64, 2, 4, 4)), 1e-12);
  // 3000^3 in 128x64 tiles, several blocks per SM: 2 warps per block are charged more compute than 4.
  const Problem q = f16(3000, 3000, 3000);
  EXPECT_GT(compute(q, sm80(128, 64, 32, 2, 1, 4)), 1.5 * compute(q, sm80(128, 64, 32, 2, 2, 4)));
}

TEST(PlanCostModel, PartialTilesPayCheckedCopiesPerThread) {
  // Measured on the H200, kernel version 3 (kCheckedCopyCyclesPerChunk): one 128x64x64 tile per SM in both shapes.
  // At 1024^3 every tile lies inside the matrix and the 4-warp block is the faster; at 1000^3, 23 tiles stick out
  // and copy through the bounds-checked path, where each of 8 warps' threads copies half as much, and the 8-warp
  // block is the faster.
  const hw::HwProfile h200 = profile("h200");
  auto cost = [&](const Problem& q, Config c) {
    c.params["FRAG_PIPE"] = 1;
    return sm80_cost(q, h200, c);
  };
  const Config w4 = sm80(128, 64, 64, 2, 2, 4), w8 = sm80(128, 64, 64, 4, 2, 4);
  EXPECT_LT(cost(f16(1024, 1024, 1024), w4).seconds, cost(f16(1024, 1024, 1024), w8).seconds);
  EXPECT_LT(cost(f16(1000, 1000, 1000), w8).seconds, cost(f16(1000, 1000, 1000), w4).seconds);
  // The charge is on top of the tensor work: the same block costs more at 1000^3 than at 1024^3, though it
  // computes fewer flops.
  EXPECT_GT(cost(f16(1000, 1000, 1000), w4).compute_s, cost(f16(1024, 1024, 1024), w4).compute_s);
  bool noted = false;
  for (const auto& n : cost(f16(1000, 1000, 1000), w4).notes) noted = noted || n.find("stick out") != std::string::npos;
  EXPECT_TRUE(noted);
  for (const auto& n : cost(f16(1024, 1024, 1024), w4).notes) EXPECT_EQ(n.find("stick out"), std::string::npos) << n;
}

TEST(PlanCostModel, GroupedRasterReadsLessFromDram) {
  hw::HwProfile p = profile("a100-sxm");
  const Problem big = f16(8192, 8192, 8192);
  const double grouped = sm80_operand_dram_bytes(big, p, 128, 128, 8, 1);
  const double rows = sm80_operand_dram_bytes(big, p, 128, 128, 1, 1);
  const double minimum = 2.0 * 8192 * 8192 * 2;
  EXPECT_GE(grouped, minimum);
  EXPECT_LT(grouped, rows);
  // A problem whose operands fit the usable L2 is read once whatever the order.
  const Problem small = f16(1024, 1024, 1024);
  EXPECT_DOUBLE_EQ(sm80_operand_dram_bytes(small, p, 128, 128, 1, 1), 2.0 * 1024 * 1024 * 2);
  // The cache returns what it computed.
  DramCache cache;
  const double first = sm80_operand_dram_bytes(big, p, 128, 128, 8, 1, &cache);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_DOUBLE_EQ(sm80_operand_dram_bytes(big, p, 128, 128, 8, 1, &cache), first);
}

TEST(PlanCostModel, OccupancyAndItsLimit) {
  const hw::HwProfile p = profile("a100-sxm");
  const Sm80Occupancy small = sm80_occupancy(sm80(64, 64, 32, 2, 2, 3), p);
  EXPECT_GE(small.blocks, 2);
  const Sm80Occupancy big = sm80_occupancy(sm80(128, 256, 32, 2, 4, 3), p);
  EXPECT_EQ(big.blocks, 1);
  EXPECT_EQ(big.limit, "registers");
  const Sm80Occupancy smem = sm80_occupancy(sm80(128, 128, 64, 2, 2, 5), p);  // 5 x 32 KB
  EXPECT_EQ(smem.limit, "shared memory");
}

TEST(PlanCostModel, CpuTermsAreConsistent) {
  const hw::HwProfile p = profile("generic-avx2");
  const Problem q = testing::make_problem(1024, 1024, 1024);
  const Config c{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  const Cost cost = cpu_cost(q, p, c);
  ASSERT_TRUE(cost.valid);
  EXPECT_GT(cost.compute_s, 0);
  EXPECT_LE(cost.compute_share, 1.0);
  EXPECT_GE(cost.seconds, cost.body_s + cost.fill_s);
  EXPECT_EQ(cost.bound, "compute");
  // KC beyond K changes nothing: the loop nest uses min(KC, K).
  Problem shallow = testing::make_problem(1024, 1024, 100);
  Config kc1 = c, kc2 = c;
  kc1.params["KC"] = 256;
  kc2.params["KC"] = 512;
  EXPECT_DOUBLE_EQ(cpu_cost(shallow, p, kc1).seconds, cpu_cost(shallow, p, kc2).seconds);
}

TEST(PlanCostModel, CpuInPlaceBPaysPerRowPanelOfA) {
  // ldb = 1024 floats = 4 KB: every row of a KC x NR micro-panel falls in the same L1 set, so B read in place is
  // re-read from a lower level by every MR-panel of A: 171 of them at M = 1024, where packing must win, against
  // 3 at M = 16, where the re-reads cost far less than a pass that packs B.
  const hw::HwProfile p = profile("generic-avx2");
  const Config packed{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  Config in_place = packed;
  in_place.params["PACK_B"] = 0;
  const Problem square = testing::make_problem(1024, 1024, 1024);
  const int threads = 2;
  const Cost square_packed = cpu_cost(square, p, packed, threads), square_in_place = cpu_cost(square, p, in_place, threads);
  EXPECT_LT(square_packed.seconds, square_in_place.seconds);
  const Problem skinny = testing::make_problem(16, 4096, 4096);
  EXPECT_LT(cpu_cost(skinny, p, in_place, threads).seconds, cpu_cost(skinny, p, packed, threads).seconds);
}

TEST(PlanCostModel, CpuInPlaceBFromDramIsBoundPerCore) {
  // Rows of B far apart stream from DRAM at a per-core rate (kInPlaceDramBytesPerCycle), not at the chip's
  // bandwidth: measured at 16x4096x4096 on a 2-core Zen 3, 5.70 ms in place where the bandwidth alone gives 1.7.
  const hw::HwProfile p = profile("generic-avx2");
  const int threads = 2;
  const Config c{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 0}}};
  const Problem skinny = testing::make_problem(16, 4096, 4096);
  const double b_bytes = 4096.0 * 4096.0 * 4.0;
  const double core_clock = *p.peak_tflops(DType::f32, DType::f32) * 1e12 / p.cores / (2.0 * 8 * kFmaPipes);
  const Cost in_place = cpu_cost(skinny, p, c, threads);
  EXPECT_GE(in_place.body_s, b_bytes / (threads * kInPlaceDramBytesPerCycle * core_clock) * (1 - 1e-9));
  EXPECT_EQ(in_place.bound, "DRAM");
  // Rows of 1.5 or 0.5 cache lines touch lines they do not use (measured 1.20x and 1.27x slower than 6x16).
  Config nr24 = c, nr8 = c;
  nr24.params["MR"] = 4;
  nr24.params["NR"] = 24;
  nr8.params["MR"] = 8;
  nr8.params["NR"] = 8;
  EXPECT_LT(in_place.seconds, cpu_cost(skinny, p, nr24, threads).seconds);
  EXPECT_LT(in_place.seconds, cpu_cost(skinny, p, nr8, threads).seconds);
}

TEST(PlanCostModel, CpuTeamCountsOnlyItsShareOfASharedL3) {
  // Two threads on a 16-core guest whose 300 MB L3 the other cores (and other guests) share: C's 64 MB at 4096^3
  // does not stay in the team's share, so every KC pass over C goes to memory and a deeper KC (fewer passes) is
  // predicted faster. Measured there: 12x32 KC=432 ran ahead of 6x64 KC=160 in both calls that compared them.
  hw::HwProfile p = profile("generic-avx512");
  const double per_core_tflops = *p.peak_tflops(DType::f32, DType::f32) / p.cores;
  for (auto& r : p.peaks) r.tflops = per_core_tflops * 16;
  p.cores = 16;
  p.mem_bandwidth_gbps = 15;
  hw::HwProfile whole = p, shared = p;
  for (auto* q : {&whole, &shared}) {
    for (auto& c : q->caches) {
      if (c.level != 3) continue;
      c.size_bytes = 300ll << 20;
      c.ways = 20;
      c.shared_by = q == &whole ? 2 : 16;
    }
  }
  const int threads = 2;
  const Problem q = testing::make_problem(4096, 4096, 4096);
  const Config shallow{"cpu-avx512", {{"MR", 6}, {"NR", 64}, {"KC", 160}, {"MC", 2112}, {"NC", 16384}, {"PACK_B", 1}}};
  const Config deep{"cpu-avx512", {{"MR", 12}, {"NR", 32}, {"KC", 432}, {"MC", 1056}, {"NC", 16384}, {"PACK_B", 1}}};
  auto dram = [](const Cost& c) {
    for (const auto& l : c.levels)
      if (l.level == "DRAM") return l.bytes;
    return 0.0;
  };
  const double c_bytes = 4.0 * 4096 * 4096;
  const Cost in_whole = cpu_cost(q, whole, shallow, threads), in_share = cpu_cost(q, shared, shallow, threads);
  EXPECT_LT(dram(in_whole), c_bytes);
  EXPECT_GT(dram(in_share), 2.0 * c_bytes * 25);  // 26 passes over C, each a load and a store (the first no load)
  EXPECT_LT(cpu_cost(q, shared, deep, threads).seconds, in_share.seconds);
}

TEST(PlanCostModel, CacheOverflowCosts) {
  const hw::HwProfile p = profile("generic-avx2");
  const Problem q = testing::make_problem(4096, 4096, 4096);
  const Config fit{"cpu-avx2", {{"MR", 6}, {"NR", 16}, {"KC", 168}, {"MC", 582}, {"NC", 16384}, {"PACK_B", 1}}};
  Config deep = fit;
  deep.params["KC"] = 1024;  // the KC x NR micro-panel of B (64 KB) no longer stays in a 32 KB L1
  const Cost a = cpu_cost(q, p, fit), b = cpu_cost(q, p, deep);
  EXPECT_LT(a.seconds, b.seconds);
  bool noted = false;
  for (const auto& n : b.notes) noted = noted || n.find("does not stay in L1") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(PlanCostModel, MissingNumbersMakeTheCostInvalid) {
  hw::HwProfile p = profile("a100-sxm");
  p.peaks.clear();
  const Cost c = sm80_cost(f16(256, 256, 256), p, sm80(64, 64, 32, 2, 2, 3));
  EXPECT_FALSE(c.valid);
  EXPECT_TRUE(std::isinf(c.seconds));
}

TEST(PlanCostModel, CpuThreadGridMatchesTheDriver) {
  EXPECT_EQ(cpu_thread_grid(4096, 6, 64), std::make_pair(64, 1));
  EXPECT_EQ(cpu_thread_grid(16, 6, 8), std::make_pair(1, 8));  // 3 MR-panels: columns are split
  EXPECT_EQ(cpu_thread_grid(60, 6, 8), std::make_pair(4, 2));  // 10 panels: 4 rows of threads get two each
}

}  // namespace
}  // namespace tileforge::plan
