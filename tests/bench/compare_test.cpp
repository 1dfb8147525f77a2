// tileforge compare: rows paired by what was run, changes judged against the noise band; the CLI on real bench runs
// (two runs of one build show no regression, a deliberately slowed pinned config is flagged); bench's .partial file.
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

// Two runs of one build: no regression; a run whose config is pinned to a deliberately slow one: that row flagged.
// bench --out leaves no .partial file once the report is written whole.
TEST(CompareCli, SameBuildShowsNoRegressionAndASlowedConfigIsFlagged) {
  const auto dir = testing::fresh_test_dir("compare_cli");
  const std::vector<std::string> common = {"bench", "--device", "cpu", "--shape", "384x384x384", "--threads", "1",
                                           "--no-db", "--min-time", "0.5", "--min-reps", "50", "--format", "json",
                                           "-q"};
  auto bench = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--out", (dir / out).string()});
    return testing::run_cli(args, dir);
  };
  ASSERT_EQ(bench("a.json", {}).exit_code, 0);
  ASSERT_EQ(bench("b.json", {}).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "a.json.partial"));
  // KC = the smallest legal depth with MC and NC at their smallest: many more passes over C.
  auto slow = bench("slow.json", {"--set", "KC=8", "--set", "MC=12"});
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  auto same = testing::run_cli({"compare", (dir / "a.json").string(), (dir / "b.json").string(),
                                "--fail-on-regression"}, dir);
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("0 regression(s)"), std::string::npos) << same.out;
  auto slowed = testing::run_cli({"compare", (dir / "a.json").string(), (dir / "slow.json").string(),
                                  "--fail-on-regression"}, dir);
  EXPECT_EQ(slowed.exit_code, 1) << slowed.out << slowed.err;
  EXPECT_NE(slowed.out.find("REGRESSION"), std::string::npos) << slowed.out;
  auto bad = testing::run_cli({"compare", (dir / "a.json").string()}, dir);
  EXPECT_EQ(bad.exit_code, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tileforge::bench
