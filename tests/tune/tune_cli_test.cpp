// `tileforge tune` as a user meets it: bad input exits 2 naming the argument with nothing on stdout and no file left
// behind; a good run prints the report, progress on stderr, and records the winner in the DB it was given.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace {

namespace fs = std::filesystem;
using tileforge::testing::run_cli;
using tileforge::testing::slurp;
using tileforge::testing::spawn_cli;
using tileforge::testing::wait_cli;
using Result = tileforge::testing::CliResult;
using Spawned = tileforge::testing::CliProcess;

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = tileforge::testing::fresh_test_dir("tileforge_tune_cli_");
    fs::create_directories(dir / "results");
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

// Few reps: the rules are the same. One thread: the tests that record a winner run beside each other (and other
// tests) on two cores, where a kernel's threads wait on each other and the guard on noisy winners would keep it out.
const std::vector<std::string> kQuick = {"--device", "cpu", "--threads", "1", "--min-reps", "3", "--min-time", "0",
                                         "--max-time", "0.02"};

TEST_F(TuneCli, BadInputExitsTwoNamingTheArgument) {
  struct Bad {
    std::vector<std::string> args;
    std::string mention;
  };
  const std::vector<Bad> cases = {
      {{"--shape", "64x48x32", "--top", "0"}, "--top"},
      {{"--shape", "64x48x32", "--top", "many"}, "--top"},
      {{"--shape", "64x48x32", "--budget", "-1"}, "--budget"},
      {{"--shape", "64x48x32", "--budget", "0"}, "--budget"},
      {{"--shape", "64x48x32", "--budget", "soon"}, "--budget"},
      {{"--shape", "64x48x32", "--leaders", "0"}, "--leaders"},
      {{"--shape", "64x48x32", "--screen-reps", "0"}, "--screen-reps"},
      {{"--shape", "64x48x32", "--top", "4", "--exhaustive"}, "--exhaustive"},
      {{"--shape", "64x48x32", "--db", "x.db", "--no-db"}, "--no-db"},
      {{"--shape", "64x48"}, "--shape"},
      {{}, "--shape"},
      {{"--shape", "64x48x32", "--set", "NO_SUCH=4"}, "NO_SUCH"},
      {{"--shape", "64x48x32", "--family", "sm80"}, "sm80"},
      {{"--shape", "64x48x32", "--family", "tpu"}, "tpu"},
      {{"--shape", "64x48x32", "--format", "xml"}, "--format"},
      {{"--shape", "64x48x32", "--min-reps", "0"}, "--min-reps"},
      {{"--shape", "64x48x32", "--ranks", "0"}, "--ranks"},
      {{"--shape", "64x48x32", "--ranks", "1,two"}, "--ranks"},
      {{"--shape", "64x48x32", "--ranks", "1,,3"}, "--ranks"},
      {{"--shape", "64x48x32", "--ranks", "2", "--top", "4"}, "--ranks"},
      {{"--shape", "64x48x32", "--ranks", "2", "--exhaustive"}, "--ranks"},
      {{"--shape", "64x48x32", "--ranks", "99999"}, "--ranks"},
  };
  for (const Bad& b : cases) {
    // The case's own arguments last: a repeated option takes the last value.
    std::vector<std::string> args = {"tune"};
    args.insert(args.end(), kQuick.begin(), kQuick.end());
    args.insert(args.end(), b.args.begin(), b.args.end());
    args.insert(args.end(), {"--out", (dir / "results" / "r.json").string()});
    // A DB in the results folder, so that a DB created by mistake shows up as output left behind.
    if (std::find(b.args.begin(), b.args.end(), "--db") == b.args.end()) {
      args.insert(args.end(), {"--db", (dir / "results" / "t.db").string()});
    }
    const Result r = run_cli(args, dir);
    std::string label;
    for (const auto& a : b.args) label += a + " ";
    EXPECT_EQ(r.exit_code, 2) << label << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << label;
    EXPECT_NE(r.err.find(b.mention), std::string::npos) << label << ": '" << b.mention << "' not in: " << r.err;
    EXPECT_TRUE(fs::is_empty(dir / "results")) << label << ": output left behind";
  }
}

TEST_F(TuneCli, TunesPrintsProgressAndRecordsTheWinner) {
  const std::string db = (dir / "t.db").string();
  // --store-noisy: this test is about what gets recorded, and tests running beside it may disturb the reps (the
  // guard that keeps such winners out has its own tests).
  std::vector<std::string> args = {"tune", "--shape", "64x48x32", "--top", "3", "--db", db, "--format", "json",
                                   "--store-noisy"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  Result r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("] screening cpu-"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("winner:"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& res = j["rows"][0];
  // The top 3, and the backend's own pick when the model ranks it lower.
  EXPECT_GE(res["candidates"].size(), 3u);
  EXPECT_LE(res["candidates"].size(), 4u);
  ASSERT_FALSE(res["winner"].is_null());
  EXPECT_EQ(res["db"]["outcome"], "inserted");
  auto store = tileforge::db::Store::open(db);
  ASSERT_TRUE(store);
  auto records = store->list();
  ASSERT_TRUE(records);
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].source, tileforge::db::Source::tuned);

  // --no-db writes nothing; --quiet prints no progress; the table names the winner.
  args = {"tune", "--shape", "64x48x32", "--top", "2", "--no-db", "--quiet"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No progress at all; a warning about the measurement's own quality (a noisy winner on a loaded machine) may
  // still be printed, since --quiet silences progress, not warnings.
  std::string progress;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("tileforge tune: warning:", 0) != 0) progress += line + "\n";
  }
  EXPECT_EQ(progress, "") << r.err;
  EXPECT_NE(r.out.find("WINNER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("db: disabled"), std::string::npos) << r.out;

  // --out gets the JSON; the table still goes to stdout.
  const fs::path out = dir / "results" / "tune.json";
  args = {"tune", "--shape", "64x48x32", "--top", "2", "--no-db", "--quiet", "--format", "json", "--out", out.string()};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  r = run_cli(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("WINNER"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(slurp(out))["rows"].size(), 1u);
}

TEST_F(TuneCli, FourProcessesTuningIntoOneDbLoseNothing) {
  // Four tuners at once, each on its own shape, all writing their winner into one DB (WAL, transactions and a busy
  // timeout: docs/TUNING-DB.md). Every process succeeds and every winner it stored is there, readable by a fifth
  // process. Four processes on a small machine disturb each other's timing, so the noisy-winner guard may keep a
  // winner out (docs/TUNING.md); such a process says so and its shape is not expected in the DB.
  const std::string db = (dir / "shared.db").string();
  const std::vector<std::string> shapes = {"40x24x16", "48x32x24", "56x40x32", "64x48x40"};
  std::vector<Spawned> procs;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::vector<std::string> args = {"tune", "--shape", shapes[i], "--top", "3", "--db", db, "--quiet",
                                     "--format", "json"};
    args.insert(args.end(), kQuick.begin(), kQuick.end());
    procs.push_back(spawn_cli(args, dir, {}, "tuner" + std::to_string(i)));
  }
  std::map<std::string, nlohmann::json> winners;
  for (std::size_t i = 0; i < procs.size(); ++i) {
    const Result r = wait_cli(procs[i]);
    ASSERT_EQ(r.exit_code, 0) << shapes[i] << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    const auto& res = j["rows"][0];
    ASSERT_FALSE(res["winner"].is_null()) << shapes[i];
    const std::string outcome = res["db"]["outcome"];
    if (outcome == "inserted") {
      winners[shapes[i]] = res["winner"]["config"];
    } else {
      EXPECT_TRUE(outcome.starts_with("not stored:")) << shapes[i] << ": " << outcome;
    }
  }
  auto store = tileforge::db::Store::open(db);
  ASSERT_TRUE(store) << store.status().to_string();
  auto records = store->list();
  ASSERT_TRUE(records);
  ASSERT_EQ(records->size(), winners.size());
  for (const auto& rec : *records) {
    const std::string shape = std::to_string(rec.problem.m) + "x" + std::to_string(rec.problem.n) + "x" +
                              std::to_string(rec.problem.k);
    ASSERT_TRUE(winners.count(shape)) << shape;
    EXPECT_EQ(rec.source, tileforge::db::Source::tuned);
    for (const auto& [name, value] : rec.config.params) EXPECT_EQ(winners[shape][name], value) << shape << " " << name;
  }
  // And `db list` in another process sees all four.
  const Result list = run_cli({"db", "list", "--db", db, "--format", "json"}, dir);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out)["rows"].size(), winners.size()) << list.out;
}

}  // namespace
