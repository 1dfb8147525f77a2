// Dispatch's plans of the choice alone (PlanOptions::best_only: a bound search of a product space, a scan of a
// listed one) choose exactly what a full plan ranks first, and a family's cost bound never exceeds the price of a
// config it bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "hw/hw.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"

namespace tileforge::plan {
namespace {

using testing::profile;

// The full plan's first choice and the best-only plan's choice: the same config at the same price, or the same
// refusal.
void expect_full_plans_choice(const Problem& q, const hw::HwProfile& chip, PlanOptions o) {
  SCOPED_TRACE(q.describe() + " on " + chip.name);
  o.top_n = 0;
  o.pick_only = o.legal_only = o.best_only = false;
  auto full = make_plan(q, chip, o);
  o.pick_only = o.legal_only = o.best_only = true;
  auto best = make_plan(q, chip, o);
  ASSERT_EQ(full.ok(), best.ok());
  if (!full.ok()) {
    EXPECT_EQ(full.status().message(), best.status().message());
    return;
  }
  ASSERT_EQ(full->served, best->served) << best->unserved;
  EXPECT_EQ(full->unserved, best->unserved);
  if (!full->served) return;
  ASSERT_NE(best->choice(), nullptr);
  EXPECT_EQ(full->choice()->config, best->choice()->config)
      << "full " << full->choice()->cost.seconds << " s, best-only " << best->choice()->cost.seconds << " s";
  EXPECT_EQ(full->choice()->cost.seconds, best->choice()->cost.seconds);
  EXPECT_EQ(full->choice()->cost.bound, best->choice()->cost.bound);
  EXPECT_EQ(best->choice()->rank, 1);
  // What dispatch reads of the backend's own pick: whether it is the choice.
  EXPECT_EQ(best->reference_rank == 1, full->reference_rank == 1);
  EXPECT_GE(best->priced, 1u);
  // Pins may repeat a listed config, which a scan prices again: at most every combination.
  EXPECT_LE(best->priced, best->combinations);
  if (best->choice_only) {
    EXPECT_EQ(best->ranked.size(), 1u);
  }
}

// A random problem: any size up to 8192 (some skinny, some with K far above M and N), every layout, f16 or bf16 in
// (f32 on CPUs), C of the input type or f32, beta 0 or not, leading dimensions padded or odd.
Problem random_problem(std::mt19937& rng, bool gpu) {
  std::uniform_int_distribution<int64_t> dim(1, 8192), small(1, 96);
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  const int kind = int(rng() % 4);
  const int64_t m = kind == 1 ? small(rng) : dim(rng), n = kind == 2 ? small(rng) : dim(rng);
  int64_t k = dim(rng);
  if (kind == 3) k = 4 * dim(rng);
  const bool aligned = rng() % 2;
  const auto round = [&](int64_t v) { return aligned ? (v + 7) / 8 * 8 : v; };
  const DType in = gpu ? (rng() % 2 ? DType::f16 : DType::bf16) : DType::f32;
  const DType out = gpu && rng() % 3 ? in : DType::f32;
  Problem q = testing::make_problem(round(m), round(n), round(k), layouts[rng() % 4], in, out);
  if (rng() % 4 == 0) q.beta = 1.0;
  if (rng() % 5 == 0) q.lda = q.normalized().lda + int64_t(rng() % 9);
  return q;
}

// One or two legal values of the family's parameters, pinned at random.
Pins random_pins(std::mt19937& rng, const Problem& q, const hw::HwProfile& chip) {
  const FamilyChoice fc = choose_family(chip, q);
  const KernelFamily* family = find_family(fc.family);
  if (!family) return {};
  const FamilySpace f = family->candidates(q.normalized(), chip, std::max(1, chip.cores));
  Pins pins;
  const int count = 1 + int(rng() % 2);
  for (int i = 0; i < count; ++i) {
    const ParamDecl& d = f.space.params[rng() % f.space.params.size()];
    if (std::any_of(pins.begin(), pins.end(), [&](const auto& p) { return p.first == d.name; })) continue;
    // A listed space's own values (a CPU family declares thousands of KC, MC and NC values; few are listed).
    const Config& c = f.list.empty() ? Config{} : f.list[rng() % f.list.size()];
    pins.emplace_back(d.name, f.list.empty() ? d.values[rng() % d.values.size()] : c.params.at(d.name));
  }
  return pins;
}

TEST(BestOnly, ChoosesAsAFullPlanOnRandomGpuShapes) {
  std::mt19937 rng(20261202);
  // The a100's full plans take longest (the sm80 family's space of 384,000 combinations): fewer shapes. The h100-sxm
  // record shares the h200's SMs and resident clusters (the same space, other rates): fewer too.
  for (const auto& [chip, shapes] : {std::pair{"h200", 10}, std::pair{"h100-sxm", 4}, std::pair{"a100-sxm", 5}}) {
    const hw::HwProfile p = profile(chip);
    for (int i = 0; i < shapes; ++i) expect_full_plans_choice(random_problem(rng, true), p, PlanOptions{});
  }
}

TEST(BestOnly, ChoosesAsAFullPlanOnRandomCpuShapes) {
  std::mt19937 rng(777);
  for (const char* chip : {"generic-avx2", "generic-avx512", "host"}) {
    const hw::HwProfile p = std::string_view(chip) == "host" ? hw::host_cpu_profile() : profile(chip);
    for (int i = 0; i < 12; ++i) {
      PlanOptions o;
      o.threads = i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 0;
      expect_full_plans_choice(random_problem(rng, false), p, o);
    }
  }
}

TEST(BestOnly, ChoosesAsAFullPlanWithPins) {
  std::mt19937 rng(4242);
  // The h100-sxm record shares the h200's space (the same SMs and resident clusters, other rates): fewer shapes.
  for (const auto& [chip, shapes] :
       {std::pair{"h200", 4}, std::pair{"h100-sxm", 2}, std::pair{"a100-sxm", 4}, std::pair{"generic-avx2", 4}}) {
    const hw::HwProfile p = profile(chip);
    for (int i = 0; i < shapes; ++i) {
      const Problem q = random_problem(rng, p.kind == "gpu");
      PlanOptions o;
      o.pins = random_pins(rng, q, p);
      expect_full_plans_choice(q, p, o);
    }
  }
  // Pins that leave nothing legal, or name nothing declared: refused alike.
  const Problem q = testing::make_problem(512, 512, 8192, Layout::RR, DType::f16, DType::f16);
  PlanOptions o;
  o.pins = {{"SPLIT_K", 32}, {"STREAM_K", 1}};
  expect_full_plans_choice(q, profile("h200"), o);
  o.pins = {{"SPLIT_K", 9}};
  expect_full_plans_choice(q, profile("h200"), o);
  o.pins = {{"NO_SUCH", 1}};
  expect_full_plans_choice(q, profile("h200"), o);
  o.pins = {{"MC", 6}, {"MR", 4}};
  expect_full_plans_choice(testing::make_problem(300, 200, 100), profile("generic-avx2"), o);
}

// Shapes the bound search meets at its edges: pins (the pinned shapes of the golden plans), one tile, a K that
// splits, a decode step, beta, a leading dimension TMA cannot read.
TEST(BestOnly, ChoosesAsAFullPlanOnPinnedShapes) {
  const hw::HwProfile h200 = profile("h200");
  for (const auto& [m, n, k] : {std::tuple{4096, 4096, 4096}, std::tuple{8192, 8192, 8192}, std::tuple{64, 64, 64},
                                std::tuple{256, 256, 16384}, std::tuple{16, 4096, 4096}, std::tuple{4095, 4097, 4093},
                                std::tuple{1, 1, 1}, std::tuple{16384, 16384, 1024}}) {
    expect_full_plans_choice(testing::make_problem(m, n, k, Layout::RR, DType::f16, DType::f16), h200, PlanOptions{});
  }
  Problem beta = testing::make_problem(3000, 3000, 3000, Layout::CC, DType::bf16, DType::f32);
  beta.beta = 0.5;
  expect_full_plans_choice(beta, profile("h100-sxm"), PlanOptions{});
  Problem odd = testing::make_problem(1000, 1000, 1000, Layout::RC, DType::f16, DType::f16);
  odd.lda = 1003;
  expect_full_plans_choice(odd, h200, PlanOptions{});
}

// Every legal config of a family that bounds its cost, and every partial config on its search order's way to it
// (the first d parameters set): the bound never exceeds the config's price, with and without the costly terms
// (`enough` 0 leaves the operands' simulated DRAM traffic out, infinity keeps it).
TEST(BestOnly, CostBoundNeverExceedsAPriceItBounds) {
  int checked = 0;
  struct Case {
    const char* chip;
    Problem q;
    bool tight = true;  // the bound of a whole config is its price (the sm80 bound keeps the DRAM floor)
  };
  Problem beta = testing::make_problem(777, 5000, 3001, Layout::CR, DType::bf16, DType::f32);
  beta.beta = 1.0;
  Problem odd = testing::make_problem(2000, 1500, 4100, Layout::RC, DType::f16, DType::f16);
  odd.lda = 4103;
  const Case cases[] = {{"h200", testing::make_problem(4096, 4096, 4096, Layout::RR, DType::f16, DType::f16)},
                        {"h100-sxm", beta},
                        {"h200", odd},
                        {"h200", testing::make_problem(128, 256, 16384, Layout::CC, DType::f16, DType::f16)},
                        {"a100-sxm", testing::make_problem(3000, 1000, 2000, Layout::RC, DType::f16, DType::f16),
                         false},
                        {"a100-sxm", beta, false}};
  for (const Case& c : cases) {
    const hw::HwProfile p = profile(c.chip);
    SCOPED_TRACE(c.q.describe() + " on " + p.name);
    const Problem q = c.q.normalized();
    const KernelFamily& family = *find_family(choose_family(p, q).family);
    const FamilySpace f = family.candidates(q, p, 0);
    if (f.search_order.empty()) continue;
    PlanOptions o;
    o.pick_only = o.legal_only = true;
    auto all = make_plan(q, p, o);
    ASSERT_TRUE(all.ok() && all->served);
    const std::unique_ptr<CostScratch> scratch = family.make_scratch();
    for (const Candidate& cand : all->ranked) {
      const double price = cand.cost.seconds;
      Config partial{cand.config.family, {}};
      for (std::size_t d = 0; d < f.search_order.size(); ++d) {
        const std::string& name = f.search_order[d];
        partial.params[name] = cand.config.params.at(name);
        for (const double enough : {0.0, std::numeric_limits<double>::infinity()}) {
          const double bound = family.cost_bound(q, p, partial, 0, scratch.get(), enough);
          ASSERT_LE(bound, price * (1 + 1e-12)) << partial.describe() << " bounds " << cand.config.describe();
          ++checked;
        }
      }
      // Set in full, the sm90 bound with every term is the price (up to rounding): the search prices little more
      // than it must.
      const double full =
          family.cost_bound(q, p, cand.config, 0, scratch.get(), std::numeric_limits<double>::infinity());
      if (c.tight) {
        ASSERT_GE(full, price * (1 - 1e-9)) << cand.config.describe();
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

// A parameter a family lists in bound_skips changes no bound by its value alone: on the search order's way to every
// legal config, setting it leaves the bound of the partial config as it was (the search then keeps the parent's
// bound instead of asking).
TEST(BestOnly, BoundSkipsLeaveTheBoundAsItWas) {
  int checked = 0;
  Problem odd = testing::make_problem(2000, 1500, 4100, Layout::RC, DType::f16, DType::f16);
  odd.lda = 4103;
  Problem beta = testing::make_problem(777, 5000, 3001, Layout::CR, DType::bf16, DType::f32);
  beta.beta = 1.0;
  const std::pair<const char*, Problem> cases[] = {
      {"h200", testing::make_problem(4096, 4096, 4096, Layout::RR, DType::f16, DType::f16)},
      {"h200", odd},
      {"h100-sxm", beta},
      {"h200", testing::make_problem(1000, 256, 256, Layout::RR, DType::f16, DType::f16)},
      {"a100-sxm", testing::make_problem(3000, 1000, 2000, Layout::RC, DType::f16, DType::f16)}};
  for (const auto& [chip, problem] : cases) {
    const hw::HwProfile p = profile(chip);
    SCOPED_TRACE(problem.describe() + " on " + p.name);
    const Problem q = problem.normalized();
    const KernelFamily& family = *find_family(choose_family(p, q).family);
    const FamilySpace f = family.candidates(q, p, 0);
    ASSERT_FALSE(f.bound_skips.empty()) << family.name();
    PlanOptions o;
    o.pick_only = o.legal_only = true;
    auto all = make_plan(q, p, o);
    ASSERT_TRUE(all.ok() && all->served);
    const std::unique_ptr<CostScratch> scratch = family.make_scratch();
    for (std::size_t i = 0; i < all->ranked.size(); i += 7) {
      const Config& config = all->ranked[i].config;
      Config partial{config.family, {}};
      for (const std::string& name : f.search_order) {
        Config next = partial;
        next.params[name] = config.params.at(name);
        if (std::find(f.bound_skips.begin(), f.bound_skips.end(), name) != f.bound_skips.end()) {
          for (const double enough : {0.0, std::numeric_limits<double>::infinity()}) {
            ASSERT_EQ(family.cost_bound(q, p, next, 0, scratch.get(), enough),
                      family.cost_bound(q, p, partial, 0, scratch.get(), enough))
                << name << " set in " << next.describe();
            ++checked;
          }
        }
        partial = std::move(next);
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace tileforge::plan
