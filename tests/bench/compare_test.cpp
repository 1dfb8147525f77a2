// tileforge compare: rows paired by what was run, changes judged against the noise band, rows timed on a busy
// machine not judged; the CLI on a real bench report against scaled copies of it; bench's .partial file.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "bench/compare.hpp"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace tileforge::bench {
namespace {

RowTiming row(const std::string& key, double median, double iqr, double ratio) {
  RowTiming r;
  r.key = key;
  r.median_ms = median;
  r.iqr_ms = iqr;
  r.ratio = ratio;
  r.config = "cpu-avx512 MR=6";
  return r;
}

TEST(Compare, ChangesOutsideTheBandAreFlaggedBothWays) {
  const std::vector<RowTiming> a = {row("s1", 1.0, 0.02, 1.5), row("s2", 2.0, 0.04, 1.1), row("s3", 1.0, 0.01, 1.0),
                                    row("gone", 1.0, 0.0, 1.0)};
  const std::vector<RowTiming> b = {row("s1", 1.6, 0.02, 0.95), row("s2", 2.04, 0.04, 1.08), row("s3", 0.7, 0.01, 1.4),
                                    row("new", 1.0, 0.0, 1.0)};
  const auto c = compare_rows(a, b);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].verdict, "regression");
  EXPECT_NEAR(c[0].time_change, 0.6, 1e-12);
  EXPECT_NEAR(*c[0].ratio_change, 0.95 / 1.5 - 1, 1e-12);
  EXPECT_EQ(c[1].verdict, "within noise");  // +2% under the 5% floor
  EXPECT_EQ(c[2].verdict, "improvement");
  EXPECT_EQ(c[3].verdict, "only in A");
  EXPECT_EQ(c[4].verdict, "only in B");
}

// With native measured in both runs the ratio is judged: a machine that got slower moves ours and native alike.
TEST(Compare, WithNativeInBothRunsTheRatioIsJudged) {
  auto with_native = [](double ours, double native) {
    RowTiming r = row("s", ours, ours * 0.01, native / ours);
    r.native_median_ms = native;
    r.native_iqr_ms = native * 0.01;
    return r;
  };
  // Both 14% slower in B: the ratio holds, no regression though our time grew past the band.
  auto drift = compare_rows({with_native(1.0, 1.5)}, {with_native(1.14, 1.71)});
  EXPECT_TRUE(drift[0].by_ratio);
  EXPECT_EQ(drift[0].verdict, "within noise");
  EXPECT_NEAR(drift[0].time_change, 0.14, 1e-12);
  // Ours 50% slower, native unchanged: the ratio fell by a third.
  auto slowed = compare_rows({with_native(1.0, 1.5)}, {with_native(1.5, 1.5)});
  EXPECT_EQ(slowed[0].verdict, "regression");
  EXPECT_NEAR(*slowed[0].ratio_change, -1.0 / 3.0, 1e-12);
}

TEST(Compare, TheBandWidensWithTheRunsSpread) {
  // IQR / median 0.2 in both runs: band 2 * sqrt(0.08) = 0.566, so +40% is noise there.
  const auto c = compare_rows({row("s", 1.0, 0.2, 1.0)}, {row("s", 1.4, 0.28, 1.0)});
  EXPECT_NEAR(c[0].band, 2 * std::sqrt(0.2 * 0.2 + 0.2 * 0.2), 1e-12);
  EXPECT_EQ(c[0].verdict, "within noise");
}

TEST(Compare, FormatsNameEveryRowAndTheSummary) {
  const auto c = compare_rows({row("s1", 1.0, 0.01, 1.5)}, {row("s1", 1.6, 0.01, 0.9)});
  const std::string md = format_changes(c, "markdown", "a.json", "b.json");
  EXPECT_NE(md.find("| case |"), std::string::npos) << md;
  EXPECT_NE(md.find("|---|"), std::string::npos) << md;
  EXPECT_NE(md.find("REGRESSION"), std::string::npos) << md;
  EXPECT_NE(md.find("1 regression(s)"), std::string::npos) << md;
  const auto j = nlohmann::json::parse(format_changes(c, "json", "a.json", "b.json"));
  EXPECT_EQ(j["rows"][0]["verdict"], "regression");
  EXPECT_NEAR(j["rows"][0]["time_change"].get<double>(), 0.6, 1e-12);
}

TEST(Compare, AFileThatIsNotABenchReportIsRefusedByName) {
  const auto dir = testing::fresh_test_dir("compare");
  std::ofstream(dir / "x.json") << "{\"plans\": []}";
  auto r = read_bench_rows((dir / "x.json").string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("x.json is not a bench JSON report"), std::string::npos);
  EXPECT_EQ(read_bench_rows((dir / "missing.json").string()).status().code(), Code::io_error);
  std::filesystem::remove_all(dir);
}

// Writes `report` with each row's times (ours and native) scaled: ours by `ours`, native by `native`; the row's
// ratio follows, and `busy` sets its busy_flag. The quartiles are set 2% apart around each median, so that the noise
// band comes from the file and not from how disturbed the measured run was (tests run beside other tests).
void write_scaled(const nlohmann::json& report, const std::filesystem::path& out, double ours, double native,
                  bool busy = false) {
  nlohmann::json r = report;
  auto scale = [](nlohmann::json& m, double by) {
    for (const char* k : {"median_ms", "min_ms", "max_ms"}) m[k] = m[k].get<double>() * by;
    m["q1_ms"] = 0.99 * m["median_ms"].get<double>();
    m["q3_ms"] = 1.01 * m["median_ms"].get<double>();
  };
  for (auto& row : r["rows"]) {
    scale(row, ours);
    scale(row["native"], native);
    row["ratio"] = row["ratio"].get<double>() * native / ours;
    row["busy_flag"] = busy;
  }
  std::ofstream(out) << r.dump(1);
}

// The CLI on a real bench report: the verdicts come from the files alone (B is A's report with its times scaled),
// so the test does not depend on how quiet the machine is.
TEST(CompareCli, UnchangedRowsPassAndASlowedKernelIsFlagged) {
  const auto dir = testing::fresh_test_dir("compare_cli");
  auto bench = testing::run_cli({"bench", "--device", "cpu", "--shape", "384x384x384", "--threads", "1", "--no-db",
                                 "--format", "json", "-q", "--out", (dir / "a.json").string()},
                                dir);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "a.json.partial"));
  nlohmann::json a;
  std::ifstream(dir / "a.json") >> a;
  ASSERT_FALSE(a["rows"].empty());
  ASSERT_TRUE(a["rows"][0]["native"].is_object()) << "the CPU bench has a native library (OpenBLAS)";
  // The baseline: the run as measured, marked quiet (tests beside this one may have made it busy).
  write_scaled(a, dir / "base.json", 1.0, 1.0);
  auto compare = [&](const std::string& b) {
    return testing::run_cli({"compare", (dir / "base.json").string(), (dir / b).string(), "--fail-on-regression"}, dir);
  };
  // Unchanged, and a drift that moves ours and native alike: no regression.
  write_scaled(a, dir / "same.json", 1.0, 1.0);
  write_scaled(a, dir / "drift.json", 1.3, 1.3);
  for (const char* b : {"same.json", "drift.json"}) {
    auto same = compare(b);
    EXPECT_EQ(same.exit_code, 0) << b << ": " << same.out << same.err;
    EXPECT_NE(same.out.find("0 regression(s)"), std::string::npos) << same.out;
  }
  // Ours twice as slow against an unchanged native: flagged, and --fail-on-regression says so in the exit status.
  write_scaled(a, dir / "slow.json", 2.0, 1.0);
  auto slowed = compare("slow.json");
  EXPECT_EQ(slowed.exit_code, 1) << slowed.out << slowed.err;
  EXPECT_NE(slowed.out.find("REGRESSION"), std::string::npos) << slowed.out;
  // The same slowdown timed while the machine was busy is not judged.
  write_scaled(a, dir / "busy.json", 2.0, 1.0, true);
  auto busy = compare("busy.json");
  EXPECT_EQ(busy.exit_code, 0) << busy.out << busy.err;
  EXPECT_NE(busy.out.find("not judged: machine busy in B"), std::string::npos) << busy.out;
  auto bad = testing::run_cli({"compare", (dir / "a.json").string()}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tileforge::bench
