// A reference kernel family defined only in this file: registered with one line, then planned, explained,
// dispatched, tuned and run through the generic layers with no edit anywhere else (docs/ADDING-A-KERNEL-FAMILY.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "bench/harness.hpp"
#include "db/location.hpp"
#include "dispatch/dispatch.hpp"
#include "hw/hw.hpp"
#include "plan/explain.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"
#include "tune/tune.hpp"
#include "verify/verify.hpp"

namespace tileforge {
namespace {

// The chip record the family serves: a copy of a builtin CPU record under its own name, so that no other test's
// plans change.
constexpr const char* kChip = "reference-family-test-chip";
constexpr const char* kFamily = "test-reference";

hw::HwProfile chip() {
  auto p = hw::load_profile("generic-avx2");
  EXPECT_TRUE(p.ok());
  hw::HwProfile c = *p;
  c.name = kChip;
  c.cores = 1;
  return c;
}

int64_t p_of(const Config& c, const char* n) { return c.params.at(n); }

class ReferenceKernel final : public Kernel {
 public:
  using Kernel::Kernel;
};

// C = alpha A B + beta C in f32, blocked BLOCK x BLOCK over C, the k loop unrolled UNROLL times: slow and simple.
class ReferenceFamily final : public plan::KernelFamily {
 public:
  std::string_view name() const override { return kFamily; }
  int version() const override { return 1; }
  std::string_view backend() const override { return "cpu"; }
  int preference() const override { return 1000; }

  plan::FamilyFit fit(const hw::HwProfile& p) const override {
    if (p.name == kChip) return plan::FamilyFit::yes("the reference family serves its test chip");
    plan::FamilyFit f;
    f.refusal = fmt::format("family {} plans only for {}", kFamily, kChip);
    return f;
  }

  plan::SupportGap supports(const Problem& p) const override {
    if (p.precision.input != DType::f32 || p.precision.output != DType::f32) {
      return {"the reference family computes in f32 only", "another family"};
    }
    return {};
  }

  plan::FamilySpace candidates(const Problem&, const hw::HwProfile&, int) const override {
    plan::FamilySpace f;
    f.space.family = kFamily;
    f.space.version = version();
    f.space.params = {{"BLOCK", {8, 16, 32, 64}, "data scheduling", "rows and columns of C per block"},
                      {"UNROLL", {1, 2, 4}, "parameter adaptation", "k steps per loop iteration"}};
    f.space.constraints = {{Layer::data_scheduling, "BLOCK * UNROLL <= 128",
                            [](const Config& c) { return p_of(c, "BLOCK") * p_of(c, "UNROLL") <= 128; }}};
    for (const ParamDecl& d : f.space.params) f.grid.push_back(d.values);
    f.reference = Config{kFamily, {{"BLOCK", 16}, {"UNROLL", 1}}};
    f.reference_name = "the reference family's default";
    f.reference_reasons = {"BLOCK 16, UNROLL 1"};
    f.coverage = "the full space";
    return f;
  }

  // Larger blocks and deeper unrolling are predicted faster, so the planner's choice is known: BLOCK 64, UNROLL 2 (6 x 1.2 against 5 x 1.4 for 32 x 4).
  plan::Cost cost(const Problem& q, const hw::HwProfile&, const Config& c, int, plan::CostScratch*) const override {
    plan::Cost cost;
    cost.compute_s = 2.0 * double(q.m) * double(q.n) * double(q.k) /
                     (1e9 * std::log2(double(p_of(c, "BLOCK"))) * (1.0 + 0.1 * double(p_of(c, "UNROLL"))));
    plan::combine_terms(cost, {{"compute", cost.compute_s, true}});
    cost.seconds = cost.body_s;
    return cost;
  }

  void explain(plan::Plan& plan) const override {
    const Config& c = plan.ranked.front().config;
    plan.log.add(layer_name(Layer::data_scheduling), fmt::format("BLOCK={}", p_of(c, "BLOCK")),
                 "the largest block the constraint allows with this unrolling");
    plan.log.add(layer_name(Layer::parameter_adaptation), fmt::format("UNROLL={}", p_of(c, "UNROLL")),
                 "deeper unrolling is predicted faster");
  }

  // A fixed list another tuner would try: the third entry breaks the space's constraint and is left out.
  std::vector<plan::ConfigPeer> config_peers(const Problem&, const hw::HwProfile&) const override {
    plan::ConfigPeer peer{"test-fixed-list", "three fixed configs, the fastest kept", {}, 3};
    for (auto [block, unroll] : {std::pair{8, 1}, std::pair{32, 4}, std::pair{64, 4}}) {
      if (block * unroll <= 128) peer.configs.push_back(Config{kFamily, {{"BLOCK", block}, {"UNROLL", unroll}}});
    }
    return {peer};
  }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& p, const Config& config, const Device&) const override {
    if (plan::SupportGap g = supports(p); !g.empty()) return unsupported(g.why);
    return std::unique_ptr<Kernel>(std::make_unique<ReferenceKernel>(config));
  }

  Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) const override {
    const Problem p = problem.normalized();
    const int64_t block = p_of(kernel.config(), "BLOCK"), unroll = p_of(kernel.config(), "UNROLL");
    const auto* a = static_cast<const float*>(args.a);
    const auto* b = static_cast<const float*>(args.b);
    auto* c = static_cast<float*>(args.c);
    auto at = [](const float* base, bool row_major, int64_t ld, int64_t r, int64_t col) {
      return row_major ? base[r * ld + col] : base[col * ld + r];
    };
    for (int64_t e = 0; e < p.batch; ++e) {
      const float* ae = a + e * p.stride_a;
      const float* be = b + e * p.stride_b;
      float* ce = c + e * p.stride_c;
      for (int64_t i0 = 0; i0 < p.m; i0 += block)
        for (int64_t j0 = 0; j0 < p.n; j0 += block)
          for (int64_t i = i0; i < std::min(p.m, i0 + block); ++i)
            for (int64_t j = j0; j < std::min(p.n, j0 + block); ++j) {
              double acc = 0;
              int64_t k = 0;
              for (; k + unroll <= p.k; k += unroll)
                for (int64_t u = 0; u < unroll; ++u)
                  acc += double(at(ae, a_row_major(p.layout), p.lda, i, k + u)) *
                         at(be, b_row_major(p.layout), p.ldb, k + u, j);
              for (; k < p.k; ++k)
                acc += double(at(ae, a_row_major(p.layout), p.lda, i, k)) * at(be, b_row_major(p.layout), p.ldb, k, j);
              float& out = ce[i * p.ldc + j];
              out = float(p.alpha * acc + (p.beta != 0.0 ? p.beta * double(out) : 0.0));
            }
    }
    return {};
  }
};

// The one registration line.
const plan::FamilyRegistration kRegistration{std::make_unique<ReferenceFamily>()};

Device test_device() {
  Device d;
  d.kind = "cpu";
  d.name = "cpu";
  d.profile = chip();
  d.threads = 1;
  return d;
}

TEST(ReferenceFamily, IsRegistered) {
  ASSERT_NE(plan::find_family(kFamily), nullptr);
  const auto names = plan::family_names();
  EXPECT_NE(std::find(names.begin(), names.end(), kFamily), names.end());
  // Another chip record never gets it.
  auto avx2 = hw::load_profile("generic-avx2");
  ASSERT_TRUE(avx2.ok());
  EXPECT_NE(plan::choose_family(*avx2).family, kFamily);
}

TEST(ReferenceFamily, IsPlannedAndExplained) {
  const Problem q = testing::make_problem(96, 80, 64);
  auto plan = plan::make_plan(q, chip());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_TRUE(plan->served) << plan->unserved;
  EXPECT_EQ(plan->family, kFamily);
  EXPECT_EQ(plan->backend, "cpu");
  ASSERT_NE(plan->choice(), nullptr);
  EXPECT_EQ(plan->choice()->config.at("BLOCK"), 64);
  EXPECT_EQ(plan->choice()->config.at("UNROLL"), 2);
  EXPECT_EQ(plan->combinations, 12u);
  EXPECT_EQ(plan->rejected.size(), 1u);  // BLOCK 64 x UNROLL 4
  ASSERT_EQ(plan->rejected.reason_layers.size(), 1u);
  EXPECT_EQ(plan->rejected.reason_layers[0], Layer::data_scheduling);
  const std::string text = plan::render_explain(*plan);
  EXPECT_NE(text.find("BLOCK=64"), std::string::npos) << text;
  EXPECT_NE(text.find("UNROLL=2"), std::string::npos) << text;
  EXPECT_NE(text.find("BLOCK * UNROLL <= 128"), std::string::npos) << text;
  // An explicit request on another chip is refused with the family's words.
  plan::PlanOptions o;
  o.family = kFamily;
  auto other = plan::make_plan(q, *hw::load_profile("generic-avx2"), o);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("plans only for"), std::string::npos);
}

// Runs a config through the cpu backend (which hands it to the family) and checks it against float64.
void expect_correct(const Config& config, const Problem& problem, uint64_t seed) {
  Backend* cpu = find_backend("cpu");
  ASSERT_NE(cpu, nullptr);
  const Device d = test_device();
  auto ops = testing::make_operands(problem, seed);
  auto ref = testing::reference_for(ops);
  auto kernel = cpu->prepare(ops.problem, config, d);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  ASSERT_TRUE(cpu->run(**kernel, ops.problem, GemmArgs{ops.a.data(), ops.b.data(), ops.c.data(), nullptr}).ok());
  const auto report = verify::compare(ops.problem, ops.c.data(), ref);
  EXPECT_EQ(report.checked, ops.problem.m * ops.problem.n * ops.problem.batch);
  EXPECT_TRUE(verify::check(ops.problem, report).ok()) << config.describe();
}

TEST(ReferenceFamily, IsDispatchedAndRun) {
  Problem q = testing::make_problem(70, 45, 33, Layout::CR);
  q.alpha = 0.75;
  q.beta = -0.5;
  Backend* cpu = find_backend("cpu");
  ASSERT_NE(cpu, nullptr);
  dispatch::DispatchOptions o;
  o.db.disabled = true;
  auto choice = dispatch::choose_config(q, test_device(), *cpu, o);
  ASSERT_TRUE(choice.ok()) << choice.status().to_string();
  EXPECT_EQ(choice->config.family, kFamily);
  EXPECT_EQ(choice->source, "planner") << choice->reason;
  expect_correct(choice->config, q, 5);
}

TEST(ReferenceFamily, IsTuned) {
  const Problem q = testing::make_problem(64, 48, 40);
  tune::TuneOptions o;
  o.top = 4;
  o.leaders = 2;
  o.contract.min_reps = 3;
  o.contract.min_time_s = 0;
  o.contract.max_time_s = 0.05;
  o.contract.warmup_time_s = 0;
  o.write_db = false;
  auto r = tune::tune(q, test_device(), o, [](const tune::Progress&) {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->family, kFamily);
  ASSERT_FALSE(r->candidates.empty());
  ASSERT_NE(r->best(), nullptr) << r->winner_reason;
  const Config& winner = r->best()->config;
  EXPECT_EQ(winner.family, kFamily);
  expect_correct(winner, q, 9);
}

TEST(ReferenceFamily, ItsConfigPeerIsTheFastestVerifiedConfigOfItsList) {
  const Problem q = testing::make_problem(40, 36, 52);
  bench::Settings s;
  s.config_peers = true;
  s.db.disabled = true;
  s.min_reps = 3;
  s.min_time_s = 0;
  s.max_time_s = 0.05;
  s.warmup_time_s = 0;
  const Device d = test_device();
  auto plan = bench::plan_case(d, q, s);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->config.family, kFamily);
  ASSERT_EQ(plan->peer_lists.size(), 1u);
  EXPECT_EQ(plan->peer_lists[0].peer.listed, 3);
  ASSERT_EQ(plan->variants.size(), 2u);
  auto timer = bench::make_timer(d);
  ASSERT_TRUE(timer.ok()) << timer.status().to_string();
  const bench::CaseResult r = bench::run_case(d, *plan, s, **timer);
  ASSERT_TRUE(r.ours.has_value()) << r.ours_failure;
  const auto peer = std::find_if(r.peers.begin(), r.peers.end(),
                                 [](const bench::Measured& m) { return m.backend == "test-fixed-list"; });
  ASSERT_NE(peer, r.peers.end());
  EXPECT_TRUE(verify::check(q, peer->error).ok());
  EXPECT_GT(peer->timing.reps, 0);
  EXPECT_NE(peer->implementation.find("fastest of 2 timed; 2 of the 3 listed"), std::string::npos) << peer->implementation;
  bool among = false;
  for (const auto& v : r.variants) {
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    among = among || v->config == peer->config;
    EXPECT_LE(peer->timing.median_ms, v->timing.median_ms) << v->config.describe();
  }
  EXPECT_TRUE(among) << peer->config.describe();
  // Without the setting, no list is added.
  s.config_peers = false;
  auto plain = bench::plan_case(d, q, s);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->peer_lists.empty());
  EXPECT_TRUE(plain->variants.empty());
}

}  // namespace
}  // namespace tileforge
