// The explain text and the JSON form of a plan, and the decision log's fixed layers.
#include <gtest/gtest.h>

#include <set>

#include <stdexcept>

#include "hw/hw.hpp"
#include "plan/explain.hpp"
#include "support/test_support.hpp"

namespace tileforge::plan {
namespace {

Plan plan_of(const Problem& q, const char* chip, PlanOptions o = {}) {
  auto prof = hw::load_profile(chip);
  EXPECT_TRUE(prof.ok());
  auto p = make_plan(q, *prof, o);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::move(p).value();
}

Problem f16(int64_t m, int64_t n, int64_t k) { return testing::make_problem(m, n, k, Layout::RR, DType::f16, DType::f16); }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PlanExplain, SeedScenarioText) {
  const Plan plan = plan_of(f16(4096, 4096, 4096), "a100-sxm");
  const std::string text = render_explain(plan);
  for (const char* part : {"tileforge plan: 4096x4096x4096 f16->f16 acc f32",
                           "prediction (profile a100-sxm is not the running device)", "Analysis", "compute-bound",
                           "ridge of 153", "roofline", "no TMA on a100-sxm", "Choice: sm80 BLOCK_M=", "predicted",
                           "binding", "limits", "Decisions", "hardware mapping", "data scheduling", "compute pipeline",
                           "parameter adaptation", "Top alternatives (5 of", "Rejected:", "shared memory STAGES *",
                           "e.g. sm80"}) {
    EXPECT_NE(text.find(part), std::string::npos) << "missing: " << part << "\n" << text;
  }
  // Layers appear in the fixed order, both in the decisions and in the rejected groups.
  const auto decisions = text.find("Decisions");
  EXPECT_LT(text.find("hardware mapping", decisions), text.find("data scheduling", decisions));
  EXPECT_LT(text.find("data scheduling", decisions), text.find("compute pipeline", decisions));
  EXPECT_LT(text.find("compute pipeline", decisions), text.find("parameter adaptation", decisions));
  // The explanation shows exactly top_n alternatives.
  ExplainOptions two;
  two.top_n = 2;
  const std::string short_text = render_explain(plan, two);
  EXPECT_NE(short_text.find("Top alternatives (2 of"), std::string::npos);
  EXPECT_EQ(count(short_text, "\n  #"), 2u);
}

TEST(PlanExplain, AllRejectedListsEveryOne) {
  PlanOptions kept;
  kept.rejected_examples = SIZE_MAX;  // as `plan --all-rejected` asks
  const Plan plan = plan_of(testing::make_problem(512, 512, 512), "generic-avx2", kept);
  ExplainOptions all;
  all.all_rejected = true;
  const std::string text = render_explain(plan, all);
  EXPECT_EQ(count(text, "             - cpu-avx2"), plan.rejected.size());
  const std::string few = render_explain(plan);
  EXPECT_EQ(count(few, "e.g. cpu-avx2"), 3u);  // one reason, three examples
  EXPECT_NE(few.find("--all-rejected lists all"), std::string::npos);
}

TEST(PlanExplain, UnservedChipShowsTheAnalysisAndWhatIsNeeded) {
  const Plan plan = plan_of(f16(4096, 4096, 4096), "ascend-910b");
  const std::string text = render_explain(plan);
  EXPECT_NE(text.find("Not served: no tileforge backend serves"), std::string::npos) << text;
  EXPECT_NE(text.find("Needed: an Ascend C or Triton-Ascend backend"), std::string::npos) << text;
  EXPECT_NE(text.find("compute-bound"), std::string::npos);
  EXPECT_NE(text.find("20 AI cores"), std::string::npos);
  EXPECT_EQ(text.find("Choice:"), std::string::npos);
  EXPECT_NE(render_summary(plan).find("not served"), std::string::npos);
}

TEST(PlanExplain, JsonHasTheFields) {
  const Plan plan = plan_of(f16(4096, 4096, 4096), "a100-sxm");
  const nlohmann::json j = to_json(plan);
  EXPECT_EQ(j["problem"]["m"], 4096);
  EXPECT_EQ(j["problem"]["input"], "f16");
  EXPECT_EQ(j["profile"]["name"], "a100-sxm");
  EXPECT_EQ(j["prediction"], true);
  EXPECT_EQ(j["label"], "prediction (profile a100-sxm is not the running device)");
  EXPECT_EQ(j["analysis"]["bound"], "compute");
  EXPECT_GT(j["analysis"]["ridge_flops_per_byte"].get<double>(), 100);
  EXPECT_GT(j["analysis"]["roofline_floor_s"].get<double>(), 0);
  EXPECT_EQ(j["analysis"]["tma_legal"], false);
  EXPECT_EQ(j["served"], true);
  EXPECT_EQ(j["family"], "sm80");
  EXPECT_EQ(j["backend"], "cuda");
  EXPECT_EQ(j["choice"]["config"]["family"], "sm80");
  EXPECT_TRUE(j["choice"]["config"].contains("BLOCK_M"));
  EXPECT_TRUE(j["choice"]["config"].contains("STAGES"));
  EXPECT_GT(j["choice"]["predicted_s"].get<double>(), j["analysis"]["roofline_floor_s"].get<double>());
  EXPECT_TRUE(j["choice"]["cost"].contains("levels"));
  EXPECT_TRUE(j["choice"]["cost"].contains("waves"));
  EXPECT_FALSE(j["choice"]["binding_limit"].get<std::string>().empty());
  EXPECT_EQ(j["alternatives"].size(), 5u);
  EXPECT_GE(j["alternatives"][0]["relative"].get<double>(), 1.0);
  EXPECT_EQ(j["candidates"]["legal"].get<std::size_t>() + j["candidates"]["rejected"].get<std::size_t>(),
            j["candidates"]["combinations"].get<std::size_t>());
  std::size_t rejected = 0;
  for (const auto& g : j["rejected"]) {
    EXPECT_TRUE(g.contains("reason"));
    EXPECT_TRUE(g.contains("layer"));
    EXPECT_LE(g["examples"].size(), 3u);
    rejected += g["count"].get<std::size_t>();
  }
  EXPECT_EQ(rejected, plan.rejected.size());
  std::set<std::string> layers;
  for (const auto& d : j["decisions"]) layers.insert(d["layer"].get<std::string>());
  EXPECT_EQ(layers.size(), 4u);
  EXPECT_GT(j["neighbours"].size(), 0u);
}

TEST(PlanExplain, JsonOfAnUnservedPlan) {
  const nlohmann::json j = to_json(plan_of(f16(1024, 1024, 1024), "ascend-910b"));
  EXPECT_EQ(j["served"], false);
  EXPECT_NE(j["needed"].get<std::string>().find("Ascend C"), std::string::npos);
  EXPECT_TRUE(j["family"].is_null());
  EXPECT_FALSE(j.contains("choice"));
  EXPECT_EQ(j["analysis"]["bound"], "compute");
}

TEST(PlanExplain, JsonWithAllRejectedListsConfigs) {
  PlanOptions kept;
  kept.rejected_examples = SIZE_MAX;  // as `plan --all-rejected` asks
  const Plan plan = plan_of(testing::make_problem(512, 512, 512), "generic-avx2", kept);
  ExplainOptions all;
  all.all_rejected = true;
  const nlohmann::json j = to_json(plan, all);
  std::size_t n = 0;
  for (const auto& g : j["rejected"]) n += g["configs"].size();
  EXPECT_EQ(n, plan.rejected.size());
}

TEST(PlanDecisionLog, OnlyTheFourLayers) {
  DecisionLog log;
  log.add("data scheduling", "BLOCK_M=128", "waves");
  EXPECT_THROW(log.add("tiling", "x", "y"), std::invalid_argument);
  EXPECT_EQ(log.entries().size(), 1u);
  EXPECT_EQ(log.in_layer("data scheduling").size(), 1u);
  EXPECT_TRUE(log.in_layer("compute pipeline").empty());
}

TEST(PlanDecisionLog, RejectionsCarryTheLayerTheirConstraintIsTaggedWith) {
  // Two constraints whose texts would read alike; only their tags tell the layers apart.
  FamilySpace f;
  f.space.family = "test";
  f.space.params = {{"A", {1, 2, 3, 4}, "data scheduling", ""}, {"B", {1, 2}, "compute pipeline", ""}};
  f.space.constraints = {
      {Layer::compute_pipeline, "A <= 3", [](const Config& c) { return c.at("A") <= 3; }},
      {Layer::hardware_mapping, "A * B <= 4", [](const Config& c) { return c.at("A") * c.at("B") <= 4; }},
  };
  for (const ParamDecl& d : f.space.params) f.grid.push_back(d.values);
  auto e = enumerate_candidates(f, {}, "test-chip");
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ASSERT_EQ(e->rejected.reasons.size(), 2u);
  ASSERT_EQ(e->rejected.reason_layers.size(), 2u);
  for (std::size_t i = 0; i < e->rejected.size(); ++i) {
    const Config c = e->rejected.config(i);
    const uint32_t r = e->rejected.reason[i];
    EXPECT_EQ(e->rejected.reason_layers[r], c.at("A") > 3 ? Layer::compute_pipeline : Layer::hardware_mapping)
        << c.describe();
  }
  // A listed config with an undeclared value takes its parameter's layer.
  f.list = {Config{"test", {{"A", 9}, {"B", 1}}}};
  e = enumerate_candidates(f, {}, "test-chip");
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->rejected.size(), 1u);
  EXPECT_EQ(e->rejected.reason_layers[0], Layer::data_scheduling);
}

}  // namespace
}  // namespace tileforge::plan
