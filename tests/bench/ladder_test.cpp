// tileforge ladder: the baseline is the legal config nearest the article's values; on the CPU each step changes only
// its layer's parameters, every row is verified and measured beside the native library, and the dispatched config is
// measured in the same run. (How fast each step is belongs to results files, not to tests.)
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/ladder.hpp"
#include "plan/candidates.hpp"
#include "support/test_support.hpp"

namespace tileforge::bench {
namespace {

Config config(std::map<std::string, int64_t> params) { return Config{"sm80", std::move(params)}; }

TEST(LadderBaseline, IsTheLegalConfigNearestTheArticlesValues) {
  ParamSpace space{"sm80",
                   {{"BLOCK_M", {64, 128, 256}, "hardware mapping", ""},
                    {"BLOCK_N", {64, 128, 256}, "hardware mapping", ""},
                    {"BLOCK_K", {32, 64}, "data scheduling", ""},
                    {"STAGES", {2, 3, 4}, "compute pipeline", ""},
                    {"VEC_BYTES", {4, 8, 16}, "hardware mapping", ""}},
                   {}};
  const std::vector<Config> legal = {
      config({{"BLOCK_M", 256}, {"BLOCK_N", 256}, {"BLOCK_K", 64}, {"STAGES", 4}, {"VEC_BYTES", 16}}),
      config({{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 32}, {"STAGES", 3}, {"VEC_BYTES", 8}}),
      config({{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"BLOCK_K", 32}, {"STAGES", 2}, {"VEC_BYTES", 4}}),
  };
  auto b = ladder_baseline("sm80", space, legal);
  ASSERT_TRUE(b);
  // 128x128x32, 3 stages, 8-byte vectors is 1.0 away; 128x64x32, 2 stages, 4-byte vectors 0.5.
  EXPECT_EQ(b->at("BLOCK_N"), 64);
  EXPECT_EQ(b->at("STAGES"), 2);
  EXPECT_FALSE(ladder_baseline("sm80", space, {}));
}

TEST(LadderBaseline, OnTheCpuHasNoCacheBlockingAndTheSmallestRegisterBlock) {
  ParamSpace space{"cpu-avx2",
                   {{"MR", {4, 6, 8}, "hardware mapping", ""},
                    {"KC", {64, 128, 256}, "data scheduling", ""},
                    {"MC", {24, 48, 96}, "data scheduling", ""}},
                   {}};
  const std::vector<Config> legal = {Config{"cpu-avx2", {{"MR", 8}, {"KC", 256}, {"MC", 96}}},
                                     Config{"cpu-avx2", {{"MR", 4}, {"KC", 256}, {"MC", 96}}},
                                     Config{"cpu-avx2", {{"MR", 4}, {"KC", 64}, {"MC", 24}}}};
  auto b = ladder_baseline("cpu-avx2", space, legal);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->at("MR"), 4);
  EXPECT_EQ(b->at("KC"), 256);
}

TEST(Ladder, OnTheCpuEachStepChangesOnlyItsLayerAndEveryRowIsVerified) {
  auto device = open_device("cpu", {}, 1);
  ASSERT_TRUE(device) << device.status().to_string();
  Settings s;
  s.min_reps = 3;
  s.min_time_s = 0;
  s.max_time_s = 0.02;
  s.warmup_time_s = 0;
  s.db = db::LocationRequest{"", true};
  CpuTimer timer;
  const Problem p = testing::make_problem(96, 80, 72);
  LadderOptions o;
  o.candidates = 2;
  auto ladder = run_ladder(*device, p, s, timer, o);
  ASSERT_TRUE(ladder) << ladder.status().to_string();
  ASSERT_GE(ladder->rows.size(), 3u);
  EXPECT_EQ(ladder->rows.front().step, "baseline");
  const ParamSpace space = own_backend("cpu")->space(ladder->problem, *device);
  for (std::size_t i = 0; i < ladder->rows.size(); ++i) {
    const LadderRow& r = ladder->rows[i];
    ASSERT_TRUE(r.ours) << r.step << ": " << r.change;
    EXPECT_LE(r.ours->error.rel_error, 1e-5) << r.step;
    EXPECT_GT(r.ours->timing.reps, 0) << r.step;
    EXPECT_TRUE(r.native || !r.native_missing.empty()) << r.step;
    if (i == 0 || r.step.starts_with("bench's dispatch")) continue;
    // A layer step: every parameter of an earlier layer is the previous row's. Later layers may change with it (a
    // value of this layer that the current later ones do not admit comes with the planner's refit of them).
    const Config& before = ladder->rows[i - 1].config;
    const auto layer_index = [](std::string_view layer) {
      return std::find(std::begin(plan::kLayers), std::end(plan::kLayers), layer) - std::begin(plan::kLayers);
    };
    std::ptrdiff_t step_layer = -1;
    for (std::string_view l : plan::kLayers) {
      if (r.step.starts_with(l)) step_layer = layer_index(l);
    }
    ASSERT_GE(step_layer, 0) << r.step;
    for (const ParamDecl& d : space.params) {
      if (layer_index(d.layer) >= step_layer) continue;
      EXPECT_EQ(r.config.get(d.name), before.get(d.name)) << r.step << " changed " << d.name;
    }
  }
  EXPECT_TRUE(ladder->rows.back().step.starts_with("bench's dispatch"));
  EXPECT_TRUE(ladder->dispatch_gap.has_value());
  const std::string md = ladder_table(*ladder, true);
  EXPECT_NE(md.find("| baseline |"), std::string::npos) << md;
  EXPECT_NE(ladder_json(*ladder).find("\"dispatch_gap\""), std::string::npos);
  // Pins are the ladder's own business.
  s.pins = {{"MR", 6}};
  EXPECT_EQ(run_ladder(*device, p, s, timer, o).status().code(), Code::invalid_argument);
}

// The verdict is the binding term's time over the measured one: half the speed of the limit reads 50%, flagged.
TEST(Verdict, IsTheShareOfTheBindingLimitReached) {
  auto device = open_device("cpu", {}, 1);
  ASSERT_TRUE(device);
  const Problem p = testing::make_problem(512, 512, 512).normalized();
  auto config = own_backend("cpu")->heuristic(p, *device);
  ASSERT_TRUE(config);
  Measured m;
  m.config = *config;
  m.timing.median_ms = 1000;  // far slower than any limit
  auto slow = verdict_for(*device, p, m);
  ASSERT_TRUE(slow);
  EXPECT_FALSE(slow->bound.empty());
  EXPECT_GT(slow->limit_ms, 0);
  m.timing.median_ms = slow->limit_ms * 2;
  auto half = verdict_for(*device, p, m);
  ASSERT_TRUE(half);
  EXPECT_NEAR(half->fraction, 0.5, 1e-9);
  EXPECT_TRUE(half->below);
  m.timing.median_ms = slow->limit_ms / 0.8;
  EXPECT_FALSE(verdict_for(*device, p, m)->below);
  m.config.family = "no-such-family";
  EXPECT_FALSE(verdict_for(*device, p, m));
}

}  // namespace
}  // namespace tileforge::bench
