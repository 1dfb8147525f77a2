// The planner end to end without a device: the seed article's scenario on chips that are not present, the CPU
// profiles, pins, unserved chips and precisions, and the consistency of the candidate lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/microkernel.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "hw/hw.hpp"
#include "plan/planner.hpp"
#include "support/test_support.hpp"

namespace tileforge::plan {
namespace {

using testing::profile;

Problem f16(int64_t m, int64_t n, int64_t k) { return testing::make_problem(m, n, k, Layout::RR, DType::f16, DType::f16); }

Plan plan_of(const Problem& q, const char* chip, PlanOptions o = {}) {
  auto p = make_plan(q, profile(chip), o);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::move(p).value();
}

void expect_all_layers(const Plan& plan) {
  for (std::string_view layer : kLayers) EXPECT_FALSE(plan.log.in_layer(layer).empty()) << layer;
}

TEST(Planner, Sm80SpaceOnH200HasOverAHundredLegalConfigs) {
  // The sm90 family plans for the H200 by default; the sm80 family still does when asked.
  PlanOptions sm80;
  sm80.family = "sm80";
  const Plan plan = plan_of(f16(4096, 4096, 4096), "h200", sm80);
  ASSERT_TRUE(plan.served) << plan.unserved;
  EXPECT_EQ(plan.family, "sm80");
  EXPECT_EQ(plan.backend, "cuda");
  EXPECT_GT(plan.ranked.size(), 100u);
  // The tile, warps, stages, GROUP_M, VEC_BYTES, COPY_AB and FRAG_PIPE, then SPLIT_K's 7 values (declared by default).
  EXPECT_EQ(plan.combinations, 5u * 5 * 3 * 4 * 4 * 5 * 4 * 4 * 2 * 2 * 7);
  EXPECT_EQ(plan.ranked.size() + plan.rejected.size(), plan.combinations);
  // The planner's legal set is exactly the family's own enumeration.
  EXPECT_EQ(plan.ranked.size(), cuda::sm80_space(plan.problem, plan.profile).enumerate().size());
  for (std::size_t i = 1; i < plan.ranked.size(); ++i) {
    EXPECT_LE(plan.ranked[i - 1].cost.seconds, plan.ranked[i].cost.seconds * (1 + 1e-9));  // ties: nearest the heuristic first
    EXPECT_EQ(plan.ranked[i].rank, int(i) + 1);
  }
}

TEST(Planner, EveryRejectedConfigViolatesItsReason) {
  PlanOptions all;
  all.rejected_examples = SIZE_MAX;
  const Plan plan = plan_of(f16(1024, 1024, 1024), "a100-sxm", all);
  const ParamSpace space = cuda::sm80_space(plan.problem, plan.profile);
  ASSERT_GT(plan.rejected.size(), 0u);
  ASSERT_EQ(plan.rejected.stored(), plan.rejected.size());
  for (std::size_t i = 0; i < plan.rejected.size(); i += 997) {
    const Config c = plan.rejected.config(i);
    const std::string& why = plan.rejected.reasons[plan.rejected.reason[i]];
    const auto first = first_violation(space, c);
    ASSERT_TRUE(first.has_value()) << c.describe();
    EXPECT_EQ(first->text, why);
    EXPECT_EQ(first->layer, plan.rejected.reason_layers[plan.rejected.reason[i]]);
  }
  for (const Candidate& c : plan.ranked) ASSERT_TRUE(space.check(c.config).ok()) << c.config.describe();
}

TEST(Planner, RejectedConfigsAreAllCountedAndAFewOfEachReasonStored) {
  // The full sm90 space has ~10M combinations: a plan stores a few rejected configs per reason (the explanation's
  // examples), not all of them (storing all took 1.9 GB for a 100x72x48 plan), and counts every one.
  PlanOptions all;
  all.rejected_examples = SIZE_MAX;
  PlanOptions few;
  few.rejected_examples = 2;
  const Plan full = plan_of(f16(1000, 520, 264), "a100-sxm", all);
  const Plan some = plan_of(f16(1000, 520, 264), "a100-sxm", few);
  ASSERT_GT(full.rejected.reasons.size(), 1u);
  EXPECT_EQ(some.rejected.size(), full.rejected.size());
  EXPECT_EQ(some.rejected.reasons, full.rejected.reasons);
  EXPECT_EQ(some.rejected.counts, full.rejected.counts);
  EXPECT_EQ(some.combinations, full.combinations);
  std::size_t counted = 0;
  for (std::size_t n : full.rejected.counts) counted += n;
  EXPECT_EQ(counted, full.rejected.size());
  // The stored ones are the first two of each reason, in enumeration order.
  std::vector<std::size_t> seen(full.rejected.reasons.size(), 0);
  std::size_t j = 0;
  for (std::size_t i = 0; i < full.rejected.stored(); ++i) {
    const uint32_t r = full.rejected.reason[i];
    if (seen[r]++ >= 2) continue;
    ASSERT_LT(j, some.rejected.stored());
    EXPECT_EQ(some.rejected.reason[j], r);
    EXPECT_EQ(some.rejected.config(j).describe(), full.rejected.config(i).describe());
    ++j;
  }
  EXPECT_EQ(j, some.rejected.stored());
  EXPECT_LE(some.rejected.stored(), 2 * some.rejected.reasons.size());
}

TEST(Planner, SeedScenarioA100FitsItsSharedMemoryAndNamesTheLimit) {
  // The seed article: 4096^3 FP16 planned for a chip that is not present: the A100 SXM (164 KB per SM, 163 KB per
  // block, no TMA).
  const Plan plan = plan_of(f16(4096, 4096, 4096), "a100-sxm");
  ASSERT_TRUE(plan.served) << plan.unserved;
  EXPECT_TRUE(plan.prediction);
  EXPECT_EQ(plan.label, "prediction (profile a100-sxm is not the running device)");
  EXPECT_TRUE(plan.roofline.compute_bound);
  EXPECT_FALSE(plan.paths.tma_on_chip);
  const Config& c = plan.choice()->config;
  EXPECT_EQ(c.family, "sm80");
  EXPECT_LE(cuda::sm80_smem_bytes(c), 166912);
  EXPECT_LE(cuda::sm80_smem_bytes(c), 163 * 1024);
  EXPECT_EQ(c.at("VEC_BYTES"), 16);
  EXPECT_EQ(c.at("COPY_AB"), 0);
  EXPECT_GE(c.at("BLOCK_M") * c.at("BLOCK_N"), 128 * 128);  // a large GEMM gets a large tile
  // The limit that bound the choice is named with its numbers, and the log covers all four layers.
  EXPECT_FALSE(plan.binding.empty());
  ASSERT_FALSE(plan.limits.empty());
  bool resource = false;
  for (const std::string& l : plan.limits) {
    resource = resource || l.find("registers") != std::string::npos || l.find("shared memory") != std::string::npos;
  }
  EXPECT_TRUE(resource);
  expect_all_layers(plan);
  // STAGES is explained with Little's law and the shared memory it takes.
  const auto pipeline = plan.log.in_layer("compute pipeline");
  ASSERT_FALSE(pipeline.empty());
  EXPECT_NE(pipeline.front()->decision.find("STAGES="), std::string::npos);
  EXPECT_NE(pipeline.front()->reason.find("Little's law"), std::string::npos);
}

TEST(Planner, SharedMemoryBindsStagesWhenTheTileIsDeep) {
  // With BLOCK_K=64 pinned on 128x128 tiles (32 KB per stage), 5 stages fit 163 KB and a 6th does not.
  PlanOptions o;
  o.pins = {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 64}, {"WARPS_M", 2}, {"WARPS_N", 4}};
  const Plan plan = plan_of(f16(4096, 4096, 4096), "a100-sxm", o);
  ASSERT_TRUE(plan.served);
  for (const Candidate& c : plan.ranked) EXPECT_LE(c.config.at("STAGES"), 5);
  bool named = false;
  for (const Neighbour& n : plan.neighbours) {
    if (n.param == "STAGES" && !n.legal) {
      EXPECT_NE(n.detail.find("B of shared memory per block on a100-sxm"), std::string::npos) << n.detail;
      named = true;
    }
  }
  if (plan.choice()->config.at("STAGES") == 5) {
    EXPECT_TRUE(named);
  }
}

TEST(Planner, GenericAvx2UsesTheAvx2FamilyAroundTheAnalyticChoice) {
  const Plan plan = plan_of(f16(4096, 4096, 4096), "generic-avx2");
  ASSERT_TRUE(plan.served) << plan.unserved;
  EXPECT_EQ(plan.family, "cpu-avx2");
  EXPECT_EQ(plan.backend, "cpu");
  EXPECT_EQ(plan.threads, 64);
  EXPECT_TRUE(plan.prediction);
  ASSERT_TRUE(plan.reference.has_value());
  EXPECT_GT(plan.reference_rank, 0);  // the analytic choice is one of the candidates
  EXPECT_EQ(plan.reference->at("MR"), 6);
  EXPECT_EQ(plan.reference->at("NR"), 16);
  // The grid scales KC, MC and NC around it.
  std::set<int64_t> kcs;
  for (const Candidate& c : plan.ranked) kcs.insert(c.config.at("KC"));
  EXPECT_GE(kcs.size(), 5u);
  EXPECT_TRUE(kcs.count(plan.reference->at("KC")));
  // Non-micro-kernel (MR, NR) pairs are rejected with the backend's constraint text.
  ASSERT_FALSE(plan.rejected.reasons.empty());
  EXPECT_EQ(plan.rejected.reasons[0], "(MR, NR) is a micro-kernel of cpu-avx2");
  EXPECT_FALSE(plan.binding.empty());
  expect_all_layers(plan);
}

TEST(Planner, GenericAvx512UsesTheAvx512Family) {
  const Plan plan = plan_of(testing::make_problem(4096, 4096, 4096), "generic-avx512");
  ASSERT_TRUE(plan.served) << plan.unserved;
  EXPECT_EQ(plan.family, "cpu-avx512");
  EXPECT_EQ(plan.threads, 56);
  const Config& c = plan.choice()->config;
  EXPECT_NE(cpu::find_microkernel("cpu-avx512", int(c.at("MR")), int(c.at("NR"))), nullptr);
  EXPECT_TRUE(cpu::family_space("cpu-avx512", plan.problem).check(c).ok());
  expect_all_layers(plan);
}

TEST(Planner, PlannerSpaceMatchesTheCpuBackendsOwnSpace) {
  // The planner plans with the family's declared space; for the host's family it must be the backend's own.
  Backend* cpu = find_backend("cpu");
  ASSERT_NE(cpu, nullptr);
  Device d;
  d.profile = hw::host_cpu_profile();
  for (const Problem& q : {testing::make_problem(64, 64, 64), f16(64, 64, 64)}) {
    const ParamSpace theirs = cpu->space(q, d);
    const ParamSpace ours = find_family(cpu::host_family())->candidates(q, d.profile, 1).space;
    EXPECT_EQ(ours.family, theirs.family);
    ASSERT_EQ(ours.params.size(), theirs.params.size());
    for (std::size_t i = 0; i < ours.params.size(); ++i) {
      EXPECT_EQ(ours.params[i].name, theirs.params[i].name);
      EXPECT_EQ(ours.params[i].values, theirs.params[i].values);
      EXPECT_EQ(ours.params[i].layer, theirs.params[i].layer);
    }
    ASSERT_EQ(ours.constraints.size(), theirs.constraints.size());
    for (std::size_t i = 0; i < ours.constraints.size(); ++i) EXPECT_EQ(ours.constraints[i].text, theirs.constraints[i].text);
  }
}

TEST(Planner, HostProfileIsTheRunningDevice) {
  PlanOptions o;
  o.running_profiles = {"a100-sxm"};
  const Plan plan = plan_of(f16(1024, 1024, 1024), "a100-sxm", o);
  EXPECT_FALSE(plan.prediction);
  EXPECT_EQ(plan.label, "running device (profile a100-sxm)");
}

TEST(Planner, LegalPinKeepsOnlyThatValue) {
  PlanOptions o;
  o.pins = {{"STAGES", 4}, {"GROUP_M", 1}};
  const Plan plan = plan_of(f16(2048, 2048, 2048), "a100-sxm", o);
  ASSERT_TRUE(plan.served);
  for (const Candidate& c : plan.ranked) {
    EXPECT_EQ(c.config.at("STAGES"), 4);
    EXPECT_EQ(c.config.at("GROUP_M"), 1);
  }
  ASSERT_GT(plan.rejected.stored(), 0u);
  for (std::size_t i = 0; i < plan.rejected.stored(); ++i) EXPECT_EQ(plan.rejected.config(i).at("STAGES"), 4);
  for (const Neighbour& n : plan.neighbours) EXPECT_NE(n.param, "STAGES");

  PlanOptions cpu;
  cpu.pins = {{"KC", 512}};
  const Plan cp = plan_of(testing::make_problem(1024, 1024, 1024), "generic-avx2", cpu);
  ASSERT_TRUE(cp.served);
  for (const Candidate& c : cp.ranked) EXPECT_EQ(c.config.at("KC"), 512);
}

TEST(Planner, IllegalPinsAreRefusedWithTheConstraint) {
  const Problem q = f16(4096, 4096, 4096);
  const hw::HwProfile a100 = profile("a100-sxm");
  PlanOptions o;
  o.pins = {{"BLOCK_K", 128}};
  auto bad_value = make_plan(q, a100, o);
  ASSERT_FALSE(bad_value.ok());
  EXPECT_EQ(bad_value.status().code(), Code::invalid_argument);
  EXPECT_NE(bad_value.status().message().find("allowed: 16, 32, 64"), std::string::npos) << bad_value.status().message();

  o.pins = {{"FOO", 1}};
  auto unknown = make_plan(q, a100, o);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("not a parameter of family sm80"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("BLOCK_M"), std::string::npos);

  o.pins = {{"BLOCK_M", 256}, {"BLOCK_K", 64}, {"STAGES", 6}};
  auto too_big = make_plan(q, a100, o);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("shared memory"), std::string::npos) << too_big.status().message();
  EXPECT_NE(too_big.status().message().find("166912 bytes per block"), std::string::npos);
  EXPECT_NE(too_big.status().message().find("--set BLOCK_M=256 BLOCK_K=64 STAGES=6"), std::string::npos);

  o.pins = {{"VEC_BYTES", 16}, {"COPY_AB", 0}};
  o.family = "sm80";
  auto unaligned = make_plan(f16(4095, 4097, 4093), profile("h200"), o);
  ASSERT_FALSE(unaligned.ok());
  EXPECT_NE(unaligned.status().message().find("VEC_BYTES <= 2"), std::string::npos) << unaligned.status().message();
  // The sm90 family (the h200's own): TMA needs the copy.
  o.pins = {{"COPY_AB", 0}};
  o.family.clear();
  auto uncopied = make_plan(f16(4095, 4097, 4093), profile("h200"), o);
  ASSERT_FALSE(uncopied.ok());
  EXPECT_NE(uncopied.status().message().find("COPY_AB in {1, 2} (A copied): lda = 4093"), std::string::npos)
      << uncopied.status().message();

  PlanOptions cpu;
  cpu.pins = {{"MR", 5}};
  auto mr = make_plan(testing::make_problem(256, 256, 256), profile("generic-avx2"), cpu);
  ASSERT_FALSE(mr.ok());
  EXPECT_NE(mr.status().message().find("allowed: 4, 6, 8"), std::string::npos) << mr.status().message();
}

TEST(Planner, UnservedChipsSayWhatWouldServeThem) {
  const Plan ascend = plan_of(f16(4096, 4096, 4096), "ascend-910b");
  EXPECT_FALSE(ascend.served);
  EXPECT_TRUE(ascend.ranked.empty());
  EXPECT_NE(ascend.unserved.find("no tileforge backend serves"), std::string::npos) << ascend.unserved;
  EXPECT_NE(ascend.needed.find("Ascend C or Triton-Ascend"), std::string::npos) << ascend.needed;
  EXPECT_GT(ascend.roofline.flops, 0);
  EXPECT_TRUE(ascend.roofline.ridge.has_value());
  EXPECT_TRUE(ascend.roofline.compute_bound);

  // The MI300X is served by the triton family (Triton compiles for gfx942), no CUDA family.
  const Plan amd = plan_of(f16(4096, 4096, 4096), "mi300x");
  EXPECT_TRUE(amd.served) << amd.unserved;
  EXPECT_EQ(amd.family, "triton");
  EXPECT_EQ(amd.nominal_waves.cores, 304);
  EXPECT_TRUE(amd.roofline.ridge.has_value());

  // Pins cannot be checked without a family, but they do not break the analysis.
  PlanOptions o;
  o.pins = {{"BLOCK_M", 128}};
  EXPECT_TRUE(make_plan(f16(64, 64, 64), profile("ascend-910b"), o).ok());
}

TEST(Planner, UnservedPrecisionSaysSo) {
  // No CUDA family takes f32 inputs: the refusal is the H200's first family's (sm90).
  const Plan f32 = plan_of(testing::make_problem(1024, 1024, 1024), "h200");
  EXPECT_FALSE(f32.served);
  EXPECT_EQ(f32.family, "sm90");
  EXPECT_NE(f32.unserved.find("f16 or bf16"), std::string::npos) << f32.unserved;
  EXPECT_NE(f32.needed.find("TF32"), std::string::npos);

  Problem acc16 = f16(64, 64, 64);
  acc16.precision.accum = DType::f16;
  const Plan cpu = plan_of(acc16, "generic-avx2");
  EXPECT_FALSE(cpu.served);
  EXPECT_NE(cpu.unserved.find("accumulates in f32 only"), std::string::npos);
  // An A100 has no f16-accumulating family (sm80 accumulates in f32); the H200's sm90 takes the policy and says so.
  const Plan a100 = plan_of(acc16, "a100-sxm");
  EXPECT_FALSE(a100.served);
  EXPECT_NE(a100.needed.find("f16 accumulators"), std::string::npos) << a100.needed;
  Problem big = f16(4096, 4096, 4096);
  big.precision.accum = DType::f16;
  const Plan h200 = plan_of(big, "h200");
  ASSERT_TRUE(h200.served) << h200.unserved;
  EXPECT_EQ(h200.family, "sm90");
  std::string decisions;
  for (const plan::Decision& d : h200.log.entries()) decisions += d.decision + "\n";
  EXPECT_NE(decisions.find("accumulate in f16"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("f16 accumulators in registers"), std::string::npos) << decisions;
}

TEST(Planner, FamilyOverridesAreChecked) {
  PlanOptions o;
  o.family = "sm80";
  auto wrong = make_plan(f16(64, 64, 64), profile("generic-avx2"), o);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("plans for NVIDIA GPUs"), std::string::npos);
  o.family = "cpu-avx512";
  auto lacking = make_plan(f16(64, 64, 64), profile("generic-avx2"), o);
  ASSERT_FALSE(lacking.ok());
  EXPECT_NE(lacking.status().message().find("AVX-512"), std::string::npos);
  o.family = "cpu-generic";
  auto generic = make_plan(f16(64, 64, 64), profile("generic-avx512"), o);
  ASSERT_TRUE(generic.ok());
  EXPECT_EQ(generic->family, "cpu-generic");
  o.family = "tpu";
  EXPECT_FALSE(make_plan(f16(64, 64, 64), profile("generic-avx2"), o).ok());
}

TEST(Planner, InvalidProblemsAreRefused) {
  Problem q = f16(64, 64, 64);
  q.lda = 3;
  auto p = make_plan(q, profile("h200"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::invalid_argument);
}

TEST(Planner, UnalignedShapesAvoidSixteenByteLoadsOrCopy) {
  PlanOptions sm80;
  sm80.family = "sm80";  // the sm90 family (the h200's own) always copies: its TMA loads need 16-byte rows
  const Plan plan = plan_of(f16(4095, 4097, 4093), "h200", sm80);
  ASSERT_TRUE(plan.served);
  EXPECT_FALSE(plan.paths.tma_legal);
  const Config& c = plan.choice()->config;
  EXPECT_TRUE(c.at("COPY_AB") == 1 || c.at("VEC_BYTES") <= 2) << c.describe();
  bool vec_reason = false;
  for (const std::string& r : plan.rejected.reasons) vec_reason = vec_reason || r.starts_with("VEC_BYTES <= 2");
  EXPECT_TRUE(vec_reason);
}

TEST(Planner, SkinnyShapesSpreadOverTheSms) {
  PlanOptions sm80;
  sm80.family = "sm80";  // 16-row tiles: the sm80 family's (sm90's wgmma blocks are 64 rows)
  const Plan plan = plan_of(f16(16, 4096, 4096), "h200", sm80);
  ASSERT_TRUE(plan.served);
  EXPECT_FALSE(plan.roofline.compute_bound);
  const Candidate& c = *plan.choice();
  EXPECT_EQ(c.config.at("BLOCK_M"), 16);  // no rows of padding work beyond the 16 there are
  EXPECT_GE(c.cost.waves.tiles, 64);      // enough tiles for a good share of the 132 SMs
  EXPECT_NE(c.cost.bound, "compute");
}

TEST(Planner, PlansAreDeterministic) {
  const Plan a = plan_of(f16(1000, 1000, 1000), "l40s");
  const Plan b = plan_of(f16(1000, 1000, 1000), "l40s");
  ASSERT_TRUE(a.served);
  EXPECT_EQ(a.choice()->config, b.choice()->config);
  EXPECT_EQ(a.ranked.size(), b.ranked.size());
  EXPECT_EQ(a.binding, b.binding);
}

}  // namespace
}  // namespace tileforge::plan
