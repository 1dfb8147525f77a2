// The tileforge CLI as a user meets it: each bad input exits non-zero naming the argument and what is allowed,
// prints nothing on stdout and leaves no output file; good runs of each verb succeed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using tileforge::testing::run_cli;
using tileforge::testing::slurp;
using Result = tileforge::testing::CliResult;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = tileforge::testing::fresh_test_dir("tileforge_cli_");
    fs::create_directories(dir / "results");
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

const std::vector<std::string> kQuick = {"--min-reps", "2", "--min-time", "0", "--max-time", "0.02", "--quiet"};

struct BadInput {
  std::string label;
  std::vector<std::string> args;       // after the verb
  std::vector<std::string> mentions;   // each must appear in stderr
  int exit_code = 2;
};

void PrintTo(const BadInput& b, std::ostream* os) { *os << b.label; }

class CliBadInput : public Cli, public ::testing::WithParamInterface<BadInput> {};

TEST_P(CliBadInput, RefusedWithANamedErrorAndNoOutput) {
  const BadInput& b = GetParam();
  for (std::string verb : {"bench", "verify"}) {
    std::vector<std::string> args = {verb};
    args.insert(args.end(), b.args.begin(), b.args.end());
    // verify needs exactly one shape; give it one unless the case is about shapes.
    bool has_shape = false;
    for (const auto& a : b.args) has_shape = has_shape || a.rfind("--shape", 0) == 0 || a == "--suite";
    if (verb == "verify" && !has_shape) args.insert(args.end(), {"--shape", "8x8x8"});
    if (verb == "verify" && std::find(b.args.begin(), b.args.end(), "--suite") != b.args.end()) continue;
    if (verb == "bench") args.insert(args.end(), kQuick.begin(), kQuick.end());
    args.insert(args.end(), {"--quiet", "--out", (dir / "results" / "out.json").string()});
    const Result r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, b.exit_code) << verb << " " << b.label << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << verb << " " << b.label;
    for (const auto& m : b.mentions) EXPECT_NE(r.err.find(m), std::string::npos) << verb << " " << b.label << ": '" << m << "' not in: " << r.err;
    EXPECT_TRUE(fs::is_empty(dir / "results")) << verb << " " << b.label << ": output left behind";
  }
}

std::vector<BadInput> bad_inputs() {
  const std::string bad_suite = (fs::path(::testing::TempDir()) / "tileforge_bad_suite.json").string();
  {
    // Every test process writes it (ctest runs each case in its own, two at a time): written under a name of its
    // own, then renamed over the shared one, so that no process reads it half written.
    const std::string mine = bad_suite + "." + std::to_string(::getpid());
    std::ofstream(mine) << R"({"name": "b", "dtype": "f64", "out_dtype": "f32", "accum": "f32", "layout": "RR",
                             "shapes": [[1,1,1]]})";
    fs::rename(mine, bad_suite);
  }
  return {
      {"negative size", {"--shape", "-5x4x4"}, {"--shape", "-5x4x4", "allowed"}},
      {"negative size (= form)", {"--shape=8x-4x4"}, {"--shape", "allowed"}},
      {"size overflowing 64 bits", {"--shape", "99999999999999999999x4x4"}, {"--shape", "64-bit", "allowed"}},
      {"sizes overflowing offsets", {"--shape", "4611686018427387904x4611686018427387904x2"}, {"--shape", "overflow"}},
      {"shape 12x", {"--shape", "12x"}, {"--shape", "'12x'", "MxNxK"}},
      {"shape 4096x4096", {"--shape", "4096x4096"}, {"--shape", "'4096x4096'", "MxNxK"}},
      {"shape with letters", {"--shape", "8x8xK"}, {"--shape", "MxNxK"}},
      {"lda below the row length", {"--shape", "8x8x8", "--lda", "4"}, {"--lda", "allowed", ">= 8"}},
      {"ldb below the row length", {"--shape", "8x9x8", "--ldb", "3"}, {"--ldb", "allowed"}},
      {"ldc below the row length", {"--shape", "8x9x8", "--ldc", "-1"}, {"--ldc", "allowed"}},
      {"lda not a number", {"--shape", "8x8x8", "--lda", "big"}, {"--lda", "big"}},
      {"negative batch", {"--shape", "8x8x8", "--batch", "-2"}, {"--batch", "allowed"}},
      {"unknown dtype", {"--dtype", "f64"}, {"--dtype", "f64", "f32, f16, bf16"}},
      {"unknown out dtype", {"--out-dtype", "int8"}, {"--out-dtype", "int8", "f32, f16, bf16"}},
      {"unknown accum", {"--accum", "f8"}, {"--accum", "f8", "f32, f16, bf16"}},
      {"illegal precision", {"--dtype", "f32", "--accum", "f16"}, {"accum", "allowed"}},
      {"unknown layout", {"--layout", "RT"}, {"--layout", "RT", "RR, RC, CR, CC"}},
      {"unknown device", {"--device", "tpu"}, {"device", "tpu", "cpu"}},
      {"unknown profile", {"--profile", "no-such-chip"}, {"profile", "no-such-chip", "h200"}},
      {"unreadable profile file", {"--profile", "/nonexistent/chip.json"}, {"/nonexistent/chip.json"}},
      {"unknown --set parameter", {"--set", "NO_SUCH_PARAMETER=4"}, {"--set", "NO_SUCH_PARAMETER", "allowed"}},
      {"illegal --set value", {"--set", "MR=999999"}, {"--set", "MR", "allowed"}},
      {"--set without a value", {"--set", "MR"}, {"--set", "NAME=VALUE"}},
      {"--set with a non-integer", {"--set", "MR=six"}, {"--set", "six"}},
      {"unreadable suite file", {"--suite", "/nonexistent/suite.json"}, {"--suite", "/nonexistent/suite.json"}},
      {"malformed suite file", {"--suite", bad_suite}, {bad_suite, "dtype", "allowed"}},
      {"unknown format", {"--format", "xml"}, {"--format", "xml", "table"}},
      {"negative threads", {"--threads", "-3"}, {"--threads", "allowed"}},
      {"unknown option", {"--frobnicate"}, {"--frobnicate"}},
      {"max memory not a size", {"--shape", "8x8x8", "--max-memory", "lots"}, {"--max-memory", "lots", "allowed"}},
      {"max memory of zero", {"--shape", "8x8x8", "--max-memory", "0"}, {"--max-memory", "allowed"}},
  };
}

INSTANTIATE_TEST_SUITE_P(Each, CliBadInput, ::testing::ValuesIn(bad_inputs()), [](const auto& info) {
  std::string name;
  for (char c : info.param.label) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
});

// Without --format, --out's extension says what the file is: .json JSON, .md a Markdown table, anything else the
// table; an explicit --format wins.
TEST_F(Cli, OutExtensionChoosesTheFormat) {
  std::vector<std::string> base = {"bench", "--device", "cpu", "--shape", "32x24x16", "--no-db"};
  base.insert(base.end(), kQuick.begin(), kQuick.end());
  auto run_to = [&](const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--out", (dir / name).string()});
    const Result r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return slurp(dir / name);
  };
  const auto doc = nlohmann::json::parse(run_to("r.json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["rows"].size(), 1u);
  EXPECT_NE(run_to("r.md").find("| shape |"), std::string::npos);
  EXPECT_EQ(run_to("r.txt").rfind("tileforge ", 0), 0u);
  EXPECT_EQ(run_to("t.json", {"--format", "table"}).rfind("tileforge ", 0), 0u);
}

// A chip record of another kind than the device is refused by name, before anything runs, for every verb that
// opens a device.
TEST_F(Cli, ProfileOfAnotherDeviceKindIsRefused) {
  for (const std::string verb : {"bench", "verify", "tune"}) {
    const Result r = run_cli({verb, "--device", "cpu", "--profile", "h200", "--shape", "64x64x64", "--no-db"}, dir);
    EXPECT_EQ(r.exit_code, 2) << verb << ": " << r.err;
    EXPECT_EQ(r.out, "") << verb;
    for (const char* word : {"--profile", "h200", "gpu", "--device", "cpu", "tileforge plan"}) {
      EXPECT_NE(r.err.find(word), std::string::npos) << verb << " should name " << word << ": " << r.err;
    }
  }
}

// A problem with M, N or K of 0 has no multiply-adds: verified (K = 0 still writes C) but not timed, so the
// row has no rate and no ratio, and says why.
TEST_F(Cli, EmptyProblemsAreVerifiedNotTimed) {
  std::vector<std::string> args = {"bench", "--device", "cpu", "--shape", "16x24x0", "--shape", "0x8x8",
                                   "--shape", "8x8x8", "--no-db", "--format", "json"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  const Result r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  ASSERT_EQ(doc["rows"].size(), 3u);
  for (int i = 0; i < 2; ++i) {
    const auto& row = doc["rows"][i];
    EXPECT_TRUE(row["ratio"].is_null()) << row.dump();
    EXPECT_EQ(row["tflops"], 0.0) << row.dump();
    EXPECT_TRUE(row["verified"].get<bool>()) << row.dump();
    EXPECT_NE(row["warnings"].dump().find("empty problem"), std::string::npos) << row.dump();
  }
  EXPECT_GT(doc["rows"][2]["tflops"].get<double>(), 0.0);  // the non-empty one is timed as before
  EXPECT_EQ(doc["rows"][2]["warnings"].dump().find("empty problem"), std::string::npos);
  EXPECT_NE(r.err.find("empty problem"), std::string::npos) << r.err;
}

TEST_F(Cli, UnwritableOutFolderIsRefusedBeforeRunning) {
  const Result r = run_cli({"bench", "--shape", "8x8x8", "--out", "/nonexistent/folder/r.json", "--quiet"}, dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

TEST_F(Cli, TimingOptionsAreChecked) {
  for (std::vector<std::string> bad : {std::vector<std::string>{"--min-reps", "0"}, {"--max-time", "0"},
                                       {"--max-time", "soon"}, {"--min-time", "-1"}, {"--seed", "-1"}}) {
    std::vector<std::string> args = {"bench", "--shape", "8x8x8"};
    args.insert(args.end(), bad.begin(), bad.end());
    const Result r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1];
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
  }
}

TEST_F(Cli, VerifyWantsExactlyOneShape) {
  Result r = run_cli({"verify"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--shape"), std::string::npos) << r.err;
  r = run_cli({"verify", "--shape", "8x8x8", "--shape", "9x9x9"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--shape"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(Cli, NoVerbIsAUsageError) {
  const Result r = run_cli({}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
}

TEST_F(Cli, HelpAndVersionGoToStdout) {
  Result r = run_cli({"--help"}, dir);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("bench"), std::string::npos);
  r = run_cli({"bench", "--help"}, dir);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--shape"), std::string::npos);
  r = run_cli({"--version"}, dir);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("0.1.0"), std::string::npos);
  // And the tree it was built from, as "(<commit>[-dirty])" or "(unknown)" outside a git checkout.
  EXPECT_NE(r.out.find(" ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(")"), std::string::npos) << r.out;
}

TEST_F(Cli, BenchPrintsTheComparisonTable) {
  std::vector<std::string> args = {"bench", "--shape", "24x16x40", "--layout", "all"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  const Result r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GFLOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ratio"), std::string::npos);
  for (const char* l : {"RR", "RC", "CR", "CC"}) EXPECT_NE(r.out.find(std::string("  ") + l), std::string::npos) << l;
  EXPECT_NE(r.out.find("planner"), std::string::npos);  // no tuning DB in tests: the planner chooses
}

// Issue 18: a case larger than the memory it may take is refused before anything is allocated (it used to be killed
// for memory after a minute and a half), the run exits 1 and says what it needs; a small case still runs.
TEST_F(Cli, CaseOverTheMemoryLimitIsRefusedBeforeAllocating) {
  for (std::string verb : {"bench", "verify"}) {
    std::vector<std::string> args = {verb, "--shape", "64x64x64", "--layout", "RR", "--lda", "100000000",
                                     "--max-memory", "1G", "--quiet"};
    if (verb == "bench") args.insert(args.end(), kQuick.begin(), kQuick.end());
    const Result r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, 1) << verb << ": " << r.err;
    EXPECT_NE(r.err.find("tileforge " + verb + ": error: 64x64x64"), std::string::npos) << r.err;
    // A counted once: the operands are generated in place in the memory the CPU backends read.
    EXPECT_NE(r.err.find("needs 25.2 GB of host memory (A 25.2 GB, B 16.4 kB, C in 16.4 kB, C x"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("more than the 1 GB available (--max-memory) — reduce the problem or raise --max-memory"),
              std::string::npos)
        << r.err;
  }
  // Without --max-memory the host's available memory is the limit: 252 PB of A is more than any host has.
  std::vector<std::string> args = {"bench", "--shape", "64x64x64", "--lda", "1000000000000000"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  const Result r = run_cli(args, dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("available (MemAvailable)"), std::string::npos) << r.err;
}

TEST_F(Cli, CaseWithinTheMemoryLimitRuns) {
  std::vector<std::string> args = {"bench", "--shape", "16x16x16", "--max-memory", "100M"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  Result r = run_cli(args, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GFLOP/s"), std::string::npos) << r.out;
  r = run_cli({"verify", "--shape", "16x16x16", "--max-memory", "100M", "--quiet"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Cli, BenchWritesCsvAtomicallyAndTheTableToStdout) {
  const fs::path out = dir / "results" / "r.csv";
  std::vector<std::string> args = {"bench", "--shape", "16x16x16", "--shape", "7x5x3", "--format", "csv", "--out",
                                   out.string(), "--min-reps", "2", "--min-time", "0", "--max-time", "0.02"};
  const Result r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GFLOP/s"), std::string::npos);
  const std::string csv = slurp(out);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;
  EXPECT_EQ(csv.rfind("m,n,k,", 0), 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "results"), fs::directory_iterator()), 1);
}

TEST_F(Cli, BenchPinnedConfigSaysSo) {
  // Pin the first parameter of our kernel to the value the planner chose (always legal).
  std::vector<std::string> args = {"bench", "--shape", "32x32x32", "--format", "json"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  Result r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  EXPECT_EQ(row["config_source"], "planner");
  std::string pin;
  for (const auto& [name, value] : row["config"].items()) {
    if (name != "family") {
      pin = name + "=" + std::to_string(value.get<int64_t>());
      break;
    }
  }
  if (pin.empty()) GTEST_SKIP() << "our config has no parameters";
  args.insert(args.end(), {"--set", pin});
  r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["rows"][0]["config_source"], "pinned");
}

TEST_F(Cli, VerifyReportsEveryLayout) {
  Result r = run_cli({"verify", "--shape", "23x17x31", "--quiet"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  for (const char* l : {"RR", "RC", "CR", "CC"}) EXPECT_NE(r.out.find(l), std::string::npos);
  EXPECT_NE(r.out.find("pass"), std::string::npos);
  r = run_cli({"verify", "--shape", "23x17x31", "--dtype", "bf16", "--beta", "0.5", "--alpha", "2", "--format", "json"},
              dir);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["verb"], "verify");
  ASSERT_EQ(doc["rows"].size(), 4u);
  for (const auto& c : doc["rows"]) {
    EXPECT_TRUE(c["pass"].get<bool>()) << c.dump();
    EXPECT_EQ(c["dtype"], "bf16");
    EXPECT_LT(c["ours"]["rel_error"].get<double>(), 1.6e-2);
  }
}

TEST_F(Cli, DevicesDescribesTheHost) {
  Result r = run_cli({"devices"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile"), std::string::npos);
  EXPECT_NE(r.out.find("cores"), std::string::npos);
  r = run_cli({"devices", "--format", "json"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["device"]["kind"], "cpu");
  EXPECT_FALSE(doc["rows"].empty());
  EXPECT_FALSE(doc["builtin_profiles"].empty());
  r = run_cli({"devices", "--device", "tpu"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
}

}  // namespace
