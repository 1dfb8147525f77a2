// Properties of the sm80 family's cost model: monotonic in the chip's resources, waves, stages, vector width,
// occupancy, the group-M raster's DRAM bytes.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/sm80/sm80_cost_constants.hpp"
#include "backends/cuda/sm80/sm80_cost_model.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "hw/hw.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"

namespace tileforge::cuda {
namespace {

using namespace sm80_constants;
using plan::Cost;

using testing::profile;

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

TEST(Sm80CostModel, MoreSmsAreNeverSlower) {
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

TEST(Sm80CostModel, AnExtraWaveCostsAlmostAWholeWave) {
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

TEST(Sm80CostModel, FewerWavesRankHigherWhenAllElseIsEqual) {
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

TEST(Sm80CostModel, StagesCoverLatencyUntilTheyDoNot) {
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

TEST(Sm80CostModel, NarrowLoadsAndCopiesCost) {
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

TEST(Sm80CostModel, MmaSyncOnHopperIsCreditedLessOfThePeak) {
  const Problem q = f16(8192, 8192, 8192);
  Config c = sm80(128, 256, 32, 2, 4, 4);
  c.params["FRAG_PIPE"] = 1;  // the pipelined kernel: the share is the instruction's, not the stalls'
  const Cost hopper = sm80_cost(q, profile("h100-sxm"), c);
  const Cost ampere = sm80_cost(q, profile("a100-sxm"), c);
  EXPECT_LT(hopper.compute_share, 0.66);
  EXPECT_GT(ampere.compute_share, 0.7);
  EXPECT_LE(ampere.compute_share, 0.85 + 1e-9);
}

TEST(Sm80CostModel, FragmentPipeliningIsPredictedFaster) {
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

TEST(Sm80CostModel, ComputeRateNeedsFourWarpsPerSmAndPerBlock) {
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

TEST(Sm80CostModel, PartialTilesPayCheckedCopiesPerThread) {
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

TEST(Sm80CostModel, GroupedRasterReadsLessFromDram) {
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

TEST(Sm80CostModel, SplitKPricesDoNotDependOnWhatTheCacheSawFirst) {
  // One cache per problem serves every config of a plan: a SPLIT_K config priced after the whole-K config of the same
  // tile (or another slice count, or BLOCK_K) is priced as on its own.
  const hw::HwProfile p = profile("a100-sxm");
  const Problem q = testing::make_problem(1119, 73, 7212, Layout::RC, DType::bf16, DType::bf16);
  Config whole = sm80(64, 64, 32, 2, 2, 4);
  DramCache cache;
  (void)sm80_cost(q, p, whole, &cache);
  for (int64_t split : {2, 3, 8}) {
    for (int64_t bk : {32, 64}) {
      Config c = whole;
      c.params["SPLIT_K"] = split;
      c.params["BLOCK_K"] = bk;
      const double fresh = sm80_cost(q, p, c, nullptr).seconds;
      EXPECT_DOUBLE_EQ(sm80_cost(q, p, c, &cache).seconds, fresh) << c.describe();
    }
  }
}

TEST(Sm80CostModel, OccupancyAndItsLimit) {
  const hw::HwProfile p = profile("a100-sxm");
  const Sm80Occupancy small = sm80_occupancy(sm80(64, 64, 32, 2, 2, 3), p);
  EXPECT_GE(small.blocks, 2);
  const Sm80Occupancy big = sm80_occupancy(sm80(128, 256, 32, 2, 4, 3), p);
  EXPECT_EQ(big.blocks, 1);
  EXPECT_EQ(big.limit, "registers");
  const Sm80Occupancy smem = sm80_occupancy(sm80(128, 128, 64, 2, 2, 5), p);  // 5 x 32 KB
  EXPECT_EQ(smem.limit, "shared memory");
}

TEST(Sm80CostModel, MissingNumbersMakeTheCostInvalid) {
  hw::HwProfile p = profile("a100-sxm");
  p.peaks.clear();
  const Cost c = sm80_cost(f16(256, 256, 256), p, sm80(64, 64, 32, 2, 2, 3));
  EXPECT_FALSE(c.valid);
  EXPECT_TRUE(std::isinf(c.seconds));
}

TEST(Sm80CostModel, AMissingChipNumberIsNamedNotAssumed) {
  // Each number the model needs, cleared in turn: the cost is invalid and its note names the field (it used to
  // assume 1.4 GHz, 100 KB, 65536 registers, 2048 threads, 16 blocks, 32 B/cycle of L2 and 128 of shared memory).
  const hw::HwProfile full = profile("a100-sxm");
  const Config cfg = sm80(64, 64, 32, 2, 2, 3);
  ASSERT_TRUE(sm80_cost(f16(256, 256, 256), full, cfg).valid);
  EXPECT_FALSE(sm80_missing_field(full).has_value());
  struct Field {
    const char* name;
    void (*clear)(hw::HwProfile&);
  };
  const Field fields[] = {
      {"boost_clock_ghz", [](hw::HwProfile& p) { p.boost_clock_ghz = 0; }},
      {"smem_per_core_bytes", [](hw::HwProfile& p) { p.smem_per_core_bytes = 0; }},
      {"registers_per_core", [](hw::HwProfile& p) { p.registers_per_core = 0; }},
      {"max_threads_per_core", [](hw::HwProfile& p) { p.max_threads_per_core = 0; }},
      {"max_blocks_per_core", [](hw::HwProfile& p) { p.max_blocks_per_core = 0; }},
      {"l2_bytes_per_core_cycle", [](hw::HwProfile& p) { p.l2_bytes_per_core_cycle = 0; }},
      {"smem_bytes_per_core_cycle", [](hw::HwProfile& p) { p.smem_bytes_per_core_cycle = 0; }},
  };
  for (const Field& f : fields) {
    SCOPED_TRACE(f.name);
    hw::HwProfile p = full;
    f.clear(p);
    const Cost c = sm80_cost(f16(256, 256, 256), p, cfg);
    EXPECT_FALSE(c.valid);
    ASSERT_FALSE(c.notes.empty());
    EXPECT_NE(c.notes[0].find(std::string("the profile records no ") + f.name), std::string::npos) << c.notes[0];
  }
  // The planner reports such a chip unserved, with the field named.
  hw::HwProfile p = full;
  p.l2_bytes_per_core_cycle = 0;
  auto plan = plan::make_plan(f16(1024, 1024, 1024), p, plan::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_FALSE(plan->served);
  EXPECT_NE(plan->unserved.find("the profile records no l2_bytes_per_core_cycle"), std::string::npos) << plan->unserved;
  // Without the per-block shared-memory limit the space admits nothing, and says which number is missing.
  hw::HwProfile no_smem = full;
  no_smem.smem_per_block_bytes = 0;
  const ParamSpace space = sm80_space(f16(1024, 1024, 1024), no_smem);
  EXPECT_FALSE(space.check(cfg).ok());
  bool named = false;
  for (const auto& c : space.constraints) named = named || c.text.find("no smem_per_block_bytes") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(Sm80CostModel, ChipRatesComeFromTheRecord) {
  // The L2 and shared-memory rates and the blocks per SM are the record's: doubling a rate halves its term.
  const hw::HwProfile base = profile("a100-sxm");
  const Problem q = f16(4096, 4096, 4096);
  const Config cfg = sm80(128, 128, 32, 2, 2, 4);
  auto term = [&](const hw::HwProfile& p, const char* level) {
    for (const auto& l : sm80_cost(q, p, cfg).levels)
      if (l.level == level) return l.seconds;
    return -1.0;
  };
  hw::HwProfile fast = base;
  fast.l2_bytes_per_core_cycle *= 2;
  fast.smem_bytes_per_core_cycle *= 2;
  EXPECT_NEAR(term(fast, "L2"), term(base, "L2") / 2, 1e-12);
  EXPECT_NEAR(term(fast, "shared memory"), term(base, "shared memory") / 2, 1e-12);
  // 64x64 tiles with 2x2 warps: few enough resources that blocks per SM is the limit once it is small.
  hw::HwProfile few = base;
  few.max_blocks_per_core = 1;
  const Sm80Occupancy o = sm80_occupancy(sm80(64, 64, 32, 2, 2, 2), few);
  EXPECT_EQ(o.blocks, 1);
  EXPECT_EQ(o.limit, "blocks per SM");
}

TEST(Sm80CostModel, TheHeuristicUsesTheCostModelsOccupancy) {
  // One occupancy for both: the heuristic's pick on every NVIDIA record is legal and its resident blocks are the
  // cost model's (a chip with fewer threads per SM, as sm_89's 1536, is counted as such).
  for (const char* name : {"a100-sxm", "h100-sxm", "h200", "l40s", "rtx-4090"}) {
    SCOPED_TRACE(name);
    const hw::HwProfile p = profile(name);
    for (const Problem& q : {f16(4096, 4096, 4096), f16(1000, 1000, 1000), f16(16, 4096, 4096)}) {
      const Config c = sm80_heuristic(q, p);
      ASSERT_FALSE(c.family.empty());
      EXPECT_TRUE(sm80_space(q, p).check(c).ok());
      EXPECT_EQ(sm80_cost(q, p, c).occupancy, std::max(1, sm80_occupancy(c, p).blocks));
    }
  }
}

}  // namespace
}  // namespace tileforge::cuda
