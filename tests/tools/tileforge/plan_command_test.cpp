// The plan verb as a function: output forms, exit codes and error messages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tools/tileforge/plan_command.hpp"

namespace tileforge::cli {
namespace {

struct Outcome {
  int rc;
  std::string out, err;
};

Outcome run(const PlanCommandOptions& o) {
  std::ostringstream out, err;
  const int rc = plan_command(o, out, err);
  return {rc, out.str(), err.str()};
}

PlanCommandOptions seed() {
  PlanCommandOptions o;
  o.shapes = {"4096x4096x4096"};
  o.dtype = "f16";
  o.profile = "a100-sxm";
  return o;
}

TEST(PlanCommand, SummaryAndExplain) {
  const Outcome summary = run(seed());
  EXPECT_EQ(summary.rc, 0) << summary.err;
  EXPECT_NE(summary.out.find("on a100-sxm (prediction): sm80 BLOCK_M="), std::string::npos) << summary.out;
  PlanCommandOptions o = seed();
  o.explain = true;
  o.top = 3;
  const Outcome explain = run(o);
  EXPECT_EQ(explain.rc, 0);
  EXPECT_NE(explain.out.find("Top alternatives (3 of"), std::string::npos);
  EXPECT_NE(explain.out.find("Decisions"), std::string::npos);
  EXPECT_TRUE(explain.err.empty());
}

TEST(PlanCommand, JsonForEveryShapeAndLayout) {
  PlanCommandOptions o = seed();
  o.shapes = {"1024x1024x1024", "16x4096x4096"};
  o.layout = "all";
  o.format = "json";
  const Outcome r = run(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tool"], "tileforge");
  ASSERT_EQ(j["rows"].size(), 8u);
  EXPECT_EQ(j["rows"][0]["problem"]["layout"], "RR");
  EXPECT_EQ(j["rows"][3]["problem"]["layout"], "CC");
  EXPECT_EQ(j["rows"][4]["problem"]["m"], 16);
}

TEST(PlanCommand, PinsAndTheirRefusal) {
  PlanCommandOptions o = seed();
  o.sets = {"STAGES=4"};
  const Outcome ok = run(o);
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("STAGES=4"), std::string::npos);

  o.sets = {"BLOCK_M=256", "BLOCK_K=64", "STAGES=6"};
  const Outcome refused = run(o);
  EXPECT_EQ(refused.rc, 2);
  EXPECT_TRUE(refused.out.empty());
  EXPECT_NE(refused.err.find("tileforge plan: error: --set BLOCK_M=256 BLOCK_K=64 STAGES=6: no legal sm80 config"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("shared memory"), std::string::npos);

  o.sets = {"STAGES"};
  EXPECT_EQ(run(o).rc, 2);
}

TEST(PlanCommand, UnservedChipExitsOneWithTheAnalysis) {
  PlanCommandOptions o = seed();
  o.profile = "ascend-910b";
  o.explain = true;
  const Outcome r = run(o);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("Not served"), std::string::npos);
  EXPECT_NE(r.out.find("roofline"), std::string::npos);
  o.explain = false;
  const Outcome s = run(o);
  EXPECT_NE(s.out.find("needed: an Ascend C or Triton-Ascend backend"), std::string::npos) << s.out;
}

// --compile: a CPU family has nothing to compile; JSON output refuses the flag; with Triton installed, the
// MI300X's triton choice compiles for gfx942 on this GPU-less machine (the compiler's registers reported).
TEST(PlanCommand, CompileBuildsTheChoiceForTheChipsTarget) {
  PlanCommandOptions o = seed();
  o.profile = "generic-avx2";
  o.dtype = "f32";
  o.shapes = {"96x96x96"};
  o.compile = true;
  Outcome r = run(o);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("built into the library: nothing to compile"), std::string::npos) << r.out;
  o.format = "json";
  EXPECT_EQ(run(o).rc, 2);
#if defined(TILEFORGE_TRITON_PYTHON)
  if (!std::filesystem::exists(TILEFORGE_TRITON_PYTHON)) GTEST_SKIP() << "SKIPPED: no Triton in the build's venv";
  setenv("TILEFORGE_PYTHON", TILEFORGE_TRITON_PYTHON, 0);
  o.format = "text";
  o.profile = "mi300x";
  o.dtype = "f16";
  o.shapes = {"1000x1000x1000"};
  r = run(o);
  if (r.out.find("no CUDA toolkit") != std::string::npos) GTEST_SKIP() << "SKIPPED: " << r.out;
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("for hip:gfx942: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("registers per thread"), std::string::npos) << r.out;
#endif
}

TEST(PlanCommand, BadOptionsExitTwo) {
  PlanCommandOptions o = seed();
  o.dtype = "f64";
  Outcome r = run(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--dtype"), std::string::npos) << r.err;

  o = seed();
  o.shapes.clear();
  EXPECT_EQ(run(o).rc, 2);

  o = seed();
  o.profile = "no-such-chip";
  r = run(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("a100-sxm"), std::string::npos) << r.err;  // the known names are listed

  o = seed();
  o.format = "yaml";
  EXPECT_EQ(run(o).rc, 2);

  o = seed();
  o.lda = "100";
  r = run(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("lda"), std::string::npos) << r.err;

  o = seed();
  o.family = "cpu-avx2";
  EXPECT_EQ(run(o).rc, 2);

  // A thread count no chip has is refused before planning (it used to loop once per thread: issue 18).
  o = seed();
  o.profile = "generic-avx2";
  o.threads = "100000000";
  r = run(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--threads = 100000000 is out of range"), std::string::npos) << r.err;
}

TEST(PlanCommand, CpuProfileWithThreads) {
  PlanCommandOptions o;
  o.shapes = {"1024x1024x1024"};
  o.profile = "generic-avx512";
  o.threads = "8";
  o.format = "json";
  const Outcome r = run(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rows"][0]["family"], "cpu-avx512");
  EXPECT_EQ(j["rows"][0]["threads"], 8);
}

}  // namespace
}  // namespace tileforge::cli
