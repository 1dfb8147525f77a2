// Planning for dispatch (PlanOptions::pick_only) picks exactly as a full plan, and the fast paths of the enumeration
// (listed configs moved out, declared values looked up without a scan) decide exactly as first_violation does.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "hw/hw.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"

namespace tileforge::plan {
namespace {

using testing::profile;

// The full plan and the pick-only plan of one problem agree on everything dispatch reads: the choice, the candidates
// and their prices, the reference and its rank and entry, the rejections. With `legal_only` (dispatch's own plans,
// walked with early constraint checks) the rejections are counted, not listed.
void expect_same_pick(const Problem& q, const hw::HwProfile& chip, PlanOptions o, bool legal_only = false) {
  SCOPED_TRACE(q.describe() + " on " + chip.name + " threads " + std::to_string(o.threads) +
               (legal_only ? " legal only" : ""));
  o.pick_only = false;
  o.legal_only = false;
  auto full = make_plan(q, chip, o);
  o.pick_only = true;
  o.legal_only = legal_only;
  auto pick = make_plan(q, chip, o);
  ASSERT_EQ(full.ok(), pick.ok());
  if (!full.ok()) {
    EXPECT_EQ(full.status().message(), pick.status().message());
    return;
  }
  ASSERT_EQ(full->served, pick->served);
  EXPECT_EQ(full->unserved, pick->unserved);
  EXPECT_EQ(full->family, pick->family);
  EXPECT_EQ(full->combinations, pick->combinations);
  EXPECT_EQ(full->coverage, pick->coverage);
  EXPECT_EQ(full->reference, pick->reference);
  EXPECT_EQ(full->reference_rank, pick->reference_rank);
  // The same candidates, priced the same; the choice first and the reference at its rank (the rest unordered).
  ASSERT_EQ(full->ranked.size(), pick->ranked.size());
  auto by_config = [](const Candidate& a, const Candidate& b) { return a.config.params < b.config.params; };
  std::vector<Candidate> a = full->ranked, b = pick->ranked;
  std::sort(a.begin(), a.end(), by_config);
  std::sort(b.begin(), b.end(), by_config);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].config, b[i].config);
    EXPECT_EQ(a[i].cost.seconds, b[i].cost.seconds) << a[i].config.describe();
    EXPECT_EQ(a[i].cost.bound, b[i].cost.bound) << a[i].config.describe();
  }
  if (!full->ranked.empty()) {
    EXPECT_EQ(pick->ranked.front().rank, 1);
  }
  if (full->reference_rank > 0) {
    const std::size_t r = std::size_t(full->reference_rank) - 1;
    EXPECT_EQ(full->ranked[r].config, pick->ranked[r].config) << "the reference's entry";
    EXPECT_EQ(pick->ranked[r].rank, full->reference_rank);
  }
  if (!legal_only) {
    EXPECT_EQ(full->rejected.values, pick->rejected.values);
    EXPECT_EQ(full->rejected.reason, pick->rejected.reason);
    EXPECT_EQ(full->rejected.reasons, pick->rejected.reasons);
  } else if (full->served) {
    EXPECT_TRUE(pick->rejected.reason.empty()) << "dispatch's walk lists no rejections";
    EXPECT_FALSE(full->rejected.reason.empty());
  }
  if (full->served) {
    ASSERT_NE(pick->choice(), nullptr);
    EXPECT_EQ(full->choice()->config, pick->choice()->config);
    // What only the explanation uses is left out.
    EXPECT_FALSE(full->log.empty());
    EXPECT_TRUE(pick->log.empty());
    EXPECT_TRUE(pick->neighbours.empty());
    EXPECT_TRUE(pick->binding.empty());
  }
}

TEST(PickOnly, RanksRandomCpuShapesAsAFullPlanDoes) {
  const hw::HwProfile& host = hw::host_cpu_profile();
  const hw::HwProfile avx2 = profile("generic-avx2");
  std::mt19937 rng(20261201);
  std::uniform_int_distribution<int64_t> small(1, 300), large(1, 5000);
  for (int i = 0; i < 8; ++i) {
    const int64_t m = i % 2 ? small(rng) : large(rng), n = small(rng), k = i % 3 ? small(rng) : large(rng);
    PlanOptions o;
    o.top_n = 0;
    o.threads = i % 2 ? 2 : 0;
    expect_same_pick(testing::make_problem(m, n, k), host, o);
    expect_same_pick(testing::make_problem(m, n, k, Layout::RC, DType::bf16, DType::f32), avx2, o);
  }
}

TEST(PickOnly, RanksRandomH200ShapesAsAFullPlanDoes) {
  const hw::HwProfile h200 = profile("h200");
  std::mt19937 rng(4096);
  std::uniform_int_distribution<int64_t> dim(1, 8192);
  for (int i = 0; i < 3; ++i) {
    PlanOptions o;
    o.top_n = 0;
    expect_same_pick(testing::make_problem(dim(rng), dim(rng), dim(rng), Layout::RR, DType::f16, DType::f16), h200, o);
  }
}

// Dispatch's case (pick_only with legal_only): the product walked with early constraint checks finds the same
// candidates, priced the same, the same choice and reference rank, the same combination count.
TEST(PickOnly, DispatchsWalkFindsTheCandidatesOfAFullPlan) {
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<int64_t> dim(1, 8192), skinny(1, 64);
  const Layout layouts[] = {Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  for (const char* chip : {"h200", "h100-sxm", "a100-sxm"}) {
    const hw::HwProfile p = profile(chip);
    for (int i = 0; i < 3; ++i) {
      const int64_t m = i == 1 ? skinny(rng) : dim(rng);
      Problem q = testing::make_problem(m, dim(rng), dim(rng), layouts[rng() % 4], i % 2 ? DType::bf16 : DType::f16,
                                        i == 2 ? DType::f32 : DType::f16);
      if (i == 2) q.lda = q.normalized().lda + 3;  // a leading dimension TMA cannot take
      PlanOptions o;
      o.top_n = 0;
      expect_same_pick(q, p, o, true);
    }
  }
  // Pins, one of which leaves nothing legal (the same refusal), and the CPU families.
  PlanOptions pinned;
  pinned.pins = {{"SPLIT_K", 8}, {"CLUSTER_M", 2}};
  expect_same_pick(testing::make_problem(512, 512, 8192, Layout::RR, DType::f16, DType::f16), profile("h200"), pinned, true);
  pinned.pins = {{"SPLIT_K", 32}, {"STREAM_K", 1}};
  expect_same_pick(testing::make_problem(512, 512, 8192, Layout::RR, DType::f16, DType::f16), profile("h200"), pinned, true);
  PlanOptions cpu;
  cpu.top_n = 0;
  expect_same_pick(testing::make_problem(300, 200, 100), hw::host_cpu_profile(), cpu, true);
  expect_same_pick(testing::make_problem(1000, 17, 999), profile("generic-avx2"), cpu, true);
}

TEST(PickOnly, ConstraintsReadOnlyWhatTheyDeclare) {
  // A constraint that declares its reads is checked before the other parameters are set: its answer must not depend
  // on them. Random configs of every registered family's space on two chips, each undeclared parameter changed to
  // every other declared value.
  std::mt19937 rng(31);
  int checked = 0;
  for (const char* chip : {"h200", "generic-avx2"}) {
    const hw::HwProfile p = profile(chip);
    const Problem q = testing::make_problem(1000, 1000, 1000, Layout::RC, DType::f16, DType::f16);
    for (const KernelFamily* family : families()) {
      if (!family->fit(p).ok) continue;
      const FamilySpace f = family->candidates(q, p, 2);
      const ParamSpace& space = f.space;
      for (int round = 0; round < 200; ++round) {
        Config c{space.family, {}};
        for (const ParamDecl& d : space.params) c.params[d.name] = d.values[rng() % d.values.size()];
        for (const Constraint& k : space.constraints) {
          if (k.reads.empty()) continue;
          const bool before = k.holds(c);
          for (const ParamDecl& d : space.params) {
            if (std::find(k.reads.begin(), k.reads.end(), d.name) != k.reads.end()) continue;
            const int64_t kept = c.params[d.name];
            for (int64_t v : d.values) {
              c.params[d.name] = v;
              ASSERT_EQ(k.holds(c), before) << k.text << " reads " << d.name << ", which it does not declare";
              ++checked;
            }
            c.params[d.name] = kept;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(PickOnly, RanksPinnedAndRefusedPlansAsAFullPlanDoes) {
  const hw::HwProfile avx2 = profile("generic-avx2");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> dim(1, 2048);
  for (int i = 0; i < 3; ++i) {
    const Problem q = testing::make_problem(dim(rng), dim(rng), dim(rng));
    PlanOptions o;
    o.pins = {{"KC", 8 * (1 + int64_t(rng() % 64))}, {"PACK_B", 1}};
    expect_same_pick(q, avx2, o);
    o.pins = {{"MC", 6}, {"MR", 4}};  // may leave no legal config: then both refuse alike
    expect_same_pick(q, avx2, o);
  }
  PlanOptions sm80;
  sm80.family = "sm80";
  sm80.pins = {{"STAGES", 3}};
  expect_same_pick(testing::make_problem(777, 1024, 333, Layout::RR, DType::f16, DType::f16), profile("h200"), sm80);
}

// A listed space with repeats, undeclared values and declarations that are an arithmetic progression, ascending
// without a constant step, and unordered.
FamilySpace listed_space(std::mt19937& rng) {
  FamilySpace f;
  f.space.family = "test";
  f.space.params = {{"A", {4, 8, 12, 16, 20}, "hardware mapping", ""},
                    {"B", {1, 2, 3, 5, 8, 13}, "data scheduling", ""},
                    {"C", {9, 3, 7, 1}, "compute pipeline", ""}};
  f.space.constraints = {{Layer::data_scheduling, "A % B == 0", [](const Config& c) {
                            return c.params.at("B") != 0 && c.params.at("A") % c.params.at("B") == 0;
                          }}};
  std::uniform_int_distribution<int64_t> value(0, 24);
  for (int i = 0; i < 400; ++i) f.list.push_back(Config{"test", {{"A", value(rng)}, {"B", value(rng)}, {"C", value(rng)}}});
  return f;
}

TEST(PickOnly, ListedEnumerationDecidesAsFirstViolation) {
  std::mt19937 rng(99);
  for (int round = 0; round < 5; ++round) {
    FamilySpace f = listed_space(rng);
    const Pins pins = round % 2 ? Pins{} : Pins{{"C", 7}};
    auto copied = enumerate_candidates(f, pins, "test-chip");
    ASSERT_TRUE(copied.ok()) << copied.status().to_string();
    // Every rejected config is rejected for the reason first_violation gives, every legal one passes it.
    for (std::size_t i = 0; i < copied->rejected.size(); ++i) {
      const Config c = copied->rejected.config(i);
      const auto why = first_violation(f.space, c);
      ASSERT_TRUE(why.has_value()) << c.describe();
      EXPECT_EQ(why->text, copied->rejected.reasons[copied->rejected.reason[i]]) << c.describe();
    }
    for (const Config& c : copied->legal) EXPECT_FALSE(first_violation(f.space, c).has_value()) << c.describe();
    // Each combination once, in the order listed.
    std::vector<std::vector<int64_t>> seen;
    for (Config c : f.list) {
      for (const auto& [name, value] : pins) c.params[name] = value;
      const std::vector<int64_t> key{c.at("A"), c.at("B"), c.at("C")};
      if (std::find(seen.begin(), seen.end(), key) == seen.end()) seen.push_back(key);
    }
    EXPECT_EQ(copied->combinations, seen.size());
    EXPECT_EQ(copied->legal.size() + copied->rejected.size(), seen.size());

    // Moving the legal configs out gives the same enumeration.
    auto moved = enumerate_candidates_moving(f, pins, "test-chip");
    ASSERT_TRUE(moved.ok());
    EXPECT_EQ(moved->legal, copied->legal);
    EXPECT_EQ(moved->combinations, copied->combinations);
    EXPECT_EQ(moved->rejected.values, copied->rejected.values);
    EXPECT_EQ(moved->rejected.reason, copied->rejected.reason);
    EXPECT_EQ(moved->rejected.reasons, copied->rejected.reasons);
  }
}

}  // namespace
}  // namespace tileforge::plan
