// The options every verb shares, as a user meets them: typed values refused by CLI11 with the option and the rule,
// --out with the format its extension says, --quiet everywhere, and plan's default lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using tileforge::testing::run_cli;
using tileforge::testing::slurp;
using Result = tileforge::testing::CliResult;

const std::vector<std::string> kQuick = {"--min-reps", "2", "--min-time", "0", "--max-time", "0.02"};

class CliSharedOptions : public ::testing::Test {
 protected:
  void SetUp() override { dir = tileforge::testing::fresh_test_dir("tileforge_shared_options_"); }
  void TearDown() override { fs::remove_all(dir); }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  fs::path dir;
};

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += a + " ";
  return s;
}

// ---- typed refusals ------------------------------------------------------------------------------------------

struct Refusal {
  std::string label;
  std::vector<std::string> args;      // the whole command line after the program
  std::vector<std::string> mentions;  // each must appear in stderr
};

void PrintTo(const Refusal& r, std::ostream* os) { *os << r.label; }

class CliSharedOptionsRefusal : public CliSharedOptions, public ::testing::WithParamInterface<Refusal> {};

TEST_P(CliSharedOptionsRefusal, RefusedByNameWithTheRuleAndNothingWritten) {
  const Refusal& c = GetParam();
  std::vector<std::string> args = c.args;
  args.insert(args.end(), {"--out", path("out.json")});
  const Result r = run_cli(args, dir);
  EXPECT_EQ(r.exit_code, 2) << joined(args) << "\nstderr: " << r.err;
  EXPECT_EQ(r.out, "") << joined(args);
  for (const auto& m : c.mentions) EXPECT_NE(r.err.find(m), std::string::npos) << "'" << m << "' not in: " << r.err;
  // One line naming the option, then the pointer to --help: no wall of text.
  EXPECT_LT(r.err.size(), 600u) << r.err;
  EXPECT_FALSE(fs::exists(path("out.json"))) << joined(args) << ": output left behind";
}

const std::vector<Refusal> kRefusals = {
    // A word where a number goes.
    {"bench --min-reps many", {"bench", "--shape", "8x8x8", "--min-reps", "many"}, {"--min-reps", "'many'", "1 to 1000000"}},
    {"plan --top lots", {"plan", "--shape", "8x8x8", "--top", "lots"}, {"--top", "'lots'", "not an integer"}},
    {"tune --leaders x", {"tune", "--shape", "8x8x8", "--no-db", "--leaders", "x"}, {"--leaders", "'x'", "1 to 1000"}},
    {"verify --alpha one", {"verify", "--shape", "8x8x8", "--alpha", "one"}, {"--alpha", "'one'", "finite number"}},
    {"bench --min-time soon", {"bench", "--shape", "8x8x8", "--min-time", "soon"}, {"--min-time", "seconds >= 0"}},
    // A number out of its range.
    {"bench --threads -3", {"bench", "--shape", "8x8x8", "--threads", "-3"}, {"--threads", "out of range", "allowed: 0"}},
    {"ladder --candidates 99", {"ladder", "--shape", "8x8x8", "--candidates", "99"}, {"--candidates", "99", "1 to 32"}},
    {"plan --threads 100000000", {"plan", "--shape", "8x8x8", "--threads", "100000000"}, {"--threads", "1 to 65536"}},
    {"tune --budget 0", {"tune", "--shape", "8x8x8", "--no-db", "--budget", "0"}, {"--budget", "seconds > 0"}},
    {"verify --batch 0", {"verify", "--shape", "8x8x8", "--batch", "0"}, {"--batch", "an integer >= 1"}},
    // An unknown name.
    {"plan --dtype int8", {"plan", "--shape", "8x8x8", "--dtype", "int8"}, {"--dtype", "'int8'", "f32, f16, bf16"}},
    {"plan --layout XY", {"plan", "--shape", "8x8x8", "--layout", "XY"}, {"--layout", "'XY'", "RR, RC, CR, CC, all"}},
    {"plan --family nope", {"plan", "--shape", "8x8x8", "--family", "nope"}, {"--family", "'nope'", "auto, "}},
    {"plan --profile nosuch", {"plan", "--shape", "8x8x8", "--profile", "nosuch"}, {"--profile", "'nosuch'", "h200"}},
    {"bench --device tpu", {"bench", "--shape", "8x8x8", "--device", "tpu"}, {"--device", "'tpu'", "cpu, cuda, cuda:N, auto"}},
    {"devices --format xml", {"devices", "--format", "xml"}, {"--format", "'xml'", "table, json"}},
    {"banks --family sm70", {"banks", "--family", "sm70"}, {"--family", "'sm70'", "sm80"}},
    {"banks --instruction ld.x9", {"banks", "--raw-row-bytes", "64", "--instruction", "ld.x9"}, {"--instruction", "ldmatrix.x4"}},
    {"db list --format csv", {"db", "list", "--db", "unused.db", "--format", "csv"}, {"--format", "'csv'", "table, json"}},
    {"bench --set KC", {"bench", "--shape", "8x8x8", "--set", "KC"}, {"--set", "'KC'", "NAME=VALUE"}},
    {"plan --shape 8x8", {"plan", "--shape", "8x8"}, {"--shape", "'8x8'", "MxNxK"}},
    // A file that must exist.
    {"compare missing files", {"compare", "missing_a.json", "missing_b.json"}, {"missing_a.json", "does not exist"}},
    {"report a missing file", {"report", "missing.json"}, {"missing.json", "does not exist"}},
    // An empty value: not the default in disguise.
    {"plan --dtype ''", {"plan", "--shape", "8x8x8", "--dtype", ""}, {"--dtype", "is empty"}},
    {"bench --threads ''", {"bench", "--shape", "8x8x8", "--threads", ""}, {"--threads", "is empty"}},
    {"devices --format ''", {"devices", "--format", ""}, {"--format", "is empty"}},
    {"tune --family ''", {"tune", "--shape", "8x8x8", "--no-db", "--family", ""}, {"--family", "is empty"}},
    {"db check --db ''", {"db", "check", "--db", ""}, {"--db", "is empty"}},
    {"verify --shape ''", {"verify", "--shape", ""}, {"--shape", "is empty"}},
};

INSTANTIATE_TEST_SUITE_P(Typed, CliSharedOptionsRefusal, ::testing::ValuesIn(kRefusals),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST_F(CliSharedOptions, AnEmptyOutIsRefusedByEveryVerb) {
  std::ofstream(dir / "x.json") << "{}";  // report's input exists: the refusal is --out's
  const std::vector<std::vector<std::string>> runs = {
      {"devices"}, {"plan", "--shape", "8x8x8"}, {"banks", "--family", "sm80"}, {"db", "list", "--db", "x.db"},
      {"db", "prune", "--db", "x.db", "--older-than", "1d"}, {"db", "import", (dir / "x.json").string()},
      {"bench", "--shape", "8x8x8"}, {"verify", "--shape", "8x8x8"}, {"report", (dir / "x.json").string()}};
  for (std::vector<std::string> args : runs) {
    args.insert(args.end(), {"--out", ""});
    const Result r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, 2) << joined(args) << r.err;
    EXPECT_EQ(r.out, "") << joined(args);
    EXPECT_NE(r.err.find("--out"), std::string::npos) << joined(args) << r.err;
  }
}

// A parameter's legal values are stated as the rule, not listed one by one (a CPU family's KC has 512 of them).
TEST_F(CliSharedOptions, AnIllegalParameterValueStatesTheRule) {
  const std::vector<std::vector<std::string>> runs = {
      {"plan", "--device", "cpu", "--shape", "64x64x64", "--set", "KC=7"},
      {"bench", "--device", "cpu", "--shape", "64x64x64", "--set", "KC=7", "--quiet"},
      {"tune", "--device", "cpu", "--shape", "64x64x64", "--set", "KC=7", "--no-db", "--quiet"}};
  for (const auto& args : runs) {
    const Result r = run_cli(args, dir);
    EXPECT_EQ(r.exit_code, 2) << joined(args) << r.err;
    EXPECT_EQ(r.out, "") << joined(args);
    EXPECT_NE(r.err.find("KC"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("8 to 4096 in steps of 8"), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 400u) << r.err;
  }
}

// ---- --out, its extension's format, and --quiet on every verb --------------------------------------------------

struct Written {
  std::vector<std::string> args;
  std::string file;                                // under the test's folder
  std::function<bool(const std::string&)> is_ok;   // the file's content is the inferred format
  bool measures = false;                           // bench, verify, ladder, tune: may warn on stderr (a noisy host)
  bool table_on_stdout = false;                    // tune prints its table on stdout even with --quiet
};

bool json_of(const std::string& text, const std::string& verb) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  return !doc.is_discarded() && doc.is_object() && doc.value("verb", "") == verb;
}

void expect_written(const fs::path& dir, const Written& w) {
  std::vector<std::string> args = w.args;
  const std::string file = (dir / w.file).string();
  args.insert(args.end(), {"--quiet", "--out", file});
  const Result r = run_cli(args, dir);
  EXPECT_EQ(r.exit_code, 0) << joined(args) << "\nstderr: " << r.err;
  const std::string text = slurp(file);
  EXPECT_TRUE(w.is_ok(text)) << joined(args) << ": " << text.substr(0, 300);
  // With --out and --quiet the report is in the file alone (tune keeps its table on stdout); the verbs that
  // measure may warn, the others have nothing to say.
  if (w.table_on_stdout) {
    EXPECT_NE(r.out, "") << joined(args);
  } else {
    EXPECT_EQ(r.out, "") << joined(args);
  }
  if (!w.measures) {
    EXPECT_EQ(r.err, "") << joined(args) << ": --quiet";
  }
}

TEST_F(CliSharedOptions, TheOutExtensionSaysTheFormatForEveryVerb) {
  std::vector<std::string> bench = {"bench", "--device", "cpu", "--shape", "16x16x16", "--no-db"};
  bench.insert(bench.end(), kQuick.begin(), kQuick.end());
  std::vector<std::string> tune = {"tune", "--device", "cpu", "--shape", "16x16x16", "--top", "1", "--no-db"};
  tune.insert(tune.end(), kQuick.begin(), kQuick.end());
  std::vector<std::string> ladder = {"ladder", "--device", "cpu", "--shape", "16x16x16", "--candidates", "1", "--no-db"};
  ladder.insert(ladder.end(), kQuick.begin(), kQuick.end());
  auto json = [](std::string verb) { return [verb](const std::string& t) { return json_of(t, verb); }; };
  const std::vector<Written> runs = {
      {bench, "a.json", json("bench"), true},
      {bench, "b.json", json("bench"), true},
      {bench, "b.csv", [](const std::string& t) { return t.find(',') != std::string::npos && t[0] != '{'; }, true},
      {bench, "b.md", [](const std::string& t) { return t.find("| ") != std::string::npos; }, true},
      {bench, "b.txt", [](const std::string& t) { return t.rfind("tileforge ", 0) == 0; }, true},
      {{"verify", "--device", "cpu", "--shape", "8x8x8", "--no-db"}, "v.json", json("verify"), true},
      {tune, "t.json", json("tune"), true, true},
      {ladder, "l.json", json("ladder"), true},
      {{"compare", (dir / "a.json").string(), (dir / "b.json").string()}, "c.json", json("compare")},
      {{"compare", (dir / "a.json").string(), (dir / "b.json").string()}, "c.md",
       [](const std::string& t) { return t.find("| ") != std::string::npos; }},
      {{"devices", "--device", "cpu"}, "d.json", json("devices")},
      {{"plan", "--profile", "h200", "--shape", "256x256x256", "--dtype", "f16"}, "p.json", json("plan")},
      {{"plan", "--profile", "h200", "--shape", "256x256x256", "--dtype", "f16"}, "p.txt",
       [](const std::string& t) { return t.find("runner-up") != std::string::npos; }},
      {{"banks", "--family", "sm80"}, "k.json",
       [](const std::string& t) { return !nlohmann::json::parse(t, nullptr, false).is_discarded(); }},
      {{"db", "list", "--db", (dir / "none.db").string()}, "dl.json", json("db list")},
      {{"db", "check", "--db", (dir / "none.db").string()}, "dc.json", json("db check")},
      {{"db", "prune", "--db", (dir / "none.db").string(), "--older-than", "1d"}, "dp.json", json("db prune")},
      {{"report", (dir / "a.json").string()}, "r.html",
       [](const std::string& t) { return t.find("<html") != std::string::npos; }},
  };
  for (const Written& w : runs) expect_written(dir, w);
}

// ---- plan's default output -----------------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST_F(CliSharedOptions, PlanPrintsTheAnalysisChoiceRunnerUpAndBindingLimit) {
  const Result r = run_cli({"plan", "--profile", "h200", "--shape", "1000x1000x1000", "--dtype", "f16"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  // The choice, its predicted time and bound.
  EXPECT_NE(lines[0].find("on h200 (prediction): sm90 BLOCK_M="), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("predicted"), std::string::npos) << lines[0];
  // The analysis: intensity against the ridge and the roofline floor.
  EXPECT_EQ(lines[1].rfind("  analysis ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("compute-bound"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("roofline floor"), std::string::npos) << lines[1];
  // The runner-up: another config, with its distance from the choice.
  EXPECT_EQ(lines[2].rfind("  runner-up ", 0), 0u) << lines[2];
  const std::string choice = lines[0].substr(lines[0].find("sm90 "), lines[0].find(" predicted") - lines[0].find("sm90 "));
  const std::string runner_up = lines[2].substr(lines[2].find("sm90 "));
  EXPECT_NE(runner_up, choice);
  EXPECT_NE(lines[2].find('%'), std::string::npos) << lines[2];
  // The binding limit, as --explain words it.
  EXPECT_EQ(lines[3].rfind("  binding ", 0), 0u) << lines[3];
  const Result explain =
      run_cli({"plan", "--profile", "h200", "--shape", "1000x1000x1000", "--dtype", "f16", "--explain"}, dir);
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  const std::string binding = lines[3].substr(std::string("  binding ").size());
  EXPECT_NE(explain.out.find(binding.substr(binding.find_first_not_of(' '))), std::string::npos);
  EXPECT_NE(explain.out.find("Decisions"), std::string::npos);
  EXPECT_NE(explain.out.find("Top alternatives"), std::string::npos);
}

}  // namespace
