// The family a backend runs a problem with (plan::family_for) agrees with the planner's choice (choose_family): a
// specialist that yields a problem to the chip's general family is passed over where that family takes it, and
// still runs what no other family takes. Two test families serve a test chip of their own only.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "hw/hw.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

constexpr const char* kChip = "family-for-test-chip";

hw::HwProfile chip() {
  auto p = hw::load_profile("generic-avx2");
  EXPECT_TRUE(p.ok());
  hw::HwProfile c = *p;
  c.name = kChip;
  c.vendor = "test";  // no built-in family fits it
  c.kind = "test";
  return c;
}

// A family for the test chip that plans nothing: only which family is chosen is under test.
class TestFamily : public plan::KernelFamily {
 public:
  int version() const override { return 1; }
  std::string_view backend() const override { return "cpu"; }
  plan::FamilyFit fit(const hw::HwProfile& p) const override {
    if (p.name == kChip) return plan::FamilyFit::yes("the test chip");
    plan::FamilyFit f;
    f.refusal = fmt::format("family {} serves only {}", name(), kChip);
    return f;
  }
  plan::FamilySpace candidates(const Problem&, const hw::HwProfile&, int) const override { return {}; }
  plan::Cost cost(const Problem&, const hw::HwProfile&, const Config&, int, plan::CostScratch*) const override {
    return {};
  }
  void explain(plan::Plan&) const override {}
};

// The chip's general family: every problem with K up to 100000.
class GeneralFamily final : public TestFamily {
 public:
  std::string_view name() const override { return "test-yield-general"; }
  int preference() const override { return 900; }
  plan::SupportGap supports(const Problem& q) const override {
    if (q.k <= 100000) return {};
    return {fmt::format("K = {} above 100000", q.k), "the specialist"};
  }
};

// A few-row specialist (M up to 16) that yields M above 4 to the general family on the test chip.
class SpecialistFamily final : public TestFamily {
 public:
  std::string_view name() const override { return "test-yield-specialist"; }
  int preference() const override { return 950; }
  bool specialist() const override { return true; }
  plan::SupportGap supports(const Problem& q) const override {
    if (q.m <= 16) return {};
    return {fmt::format("M = {} above 16", q.m), "the general family"};
  }
  std::string yields(const hw::HwProfile&, const Problem& q) const override {
    return q.m > 4 ? fmt::format("the general family leads from 5 rows up; M = {}", q.m) : std::string();
  }
};

const plan::FamilyRegistration kGeneral{std::make_unique<GeneralFamily>()};
const plan::FamilyRegistration kSpecialist{std::make_unique<SpecialistFamily>()};

std::string run_by(const Problem& p) {
  Device d;
  d.profile = chip();
  const plan::KernelFamily* f = plan::family_for("cpu", p.normalized(), d);
  return f ? std::string(f->name()) : "none";
}

std::string planned_by(const Problem& p) { return plan::choose_family(chip(), p.normalized()).family; }

TEST(FamilyFor, ASpecialistYieldsWhereTheGeneralFamilyTakesTheProblem) {
  // M = 16: the specialist takes it but yields it on this chip.
  const Problem yielded = testing::make_problem(16, 4096, 4096, Layout::RR, DType::f32, DType::f32);
  EXPECT_EQ(run_by(yielded), "test-yield-general");
  EXPECT_EQ(planned_by(yielded), "test-yield-general");
  // M = 4: it leads.
  const Problem led = testing::make_problem(4, 4096, 4096, Layout::RR, DType::f32, DType::f32);
  EXPECT_EQ(run_by(led), "test-yield-specialist");
  EXPECT_EQ(planned_by(led), "test-yield-specialist");
  // M = 64: only the general family takes it.
  EXPECT_EQ(run_by(testing::make_problem(64, 512, 512, Layout::RR, DType::f32, DType::f32)), "test-yield-general");
}

TEST(FamilyFor, AYieldingSpecialistStillRunsWhatNoOtherFamilyTakes) {
  // K above the general family's limit: the specialist runs M = 16 although it would yield it.
  const Problem p = testing::make_problem(16, 64, 200000, Layout::RR, DType::f32, DType::f32);
  EXPECT_EQ(run_by(p), "test-yield-specialist");
  // Nothing takes M = 64 with that K.
  EXPECT_EQ(run_by(testing::make_problem(64, 64, 200000, Layout::RR, DType::f32, DType::f32)), "none");
}

}  // namespace
}  // namespace tileforge
