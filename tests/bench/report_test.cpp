// Reports: JSON fields and nulls as the schema says, the table's marks, CSV shape.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/report.hpp"
#include "core/clock.hpp"
#include "dispatch/dispatch.hpp"

namespace tileforge::bench {
namespace {

Measured measured(std::string backend, std::vector<double> samples, double err) {
  Measured m;
  m.backend = std::move(backend);
  m.config = Config{m.backend == "cpu" ? "cpu-test" : m.backend, {}};
  if (m.backend == "cpu") m.config.params = {{"MR", 6}, {"NR", 16}};
  m.timing = summarize(std::move(samples));
  m.tflops = 2.0 * 64 * 64 * 64 / (m.timing.median_ms * 1e-3) / 1e12;
  m.error.rel_error = err;
  m.error.max_scaled_error = err / 10;
  return m;
}

Report sample_report() {
  Report rep;
  Environment& e = rep.environment;
  e.tool_version = "0.1.0";
  e.date = "2026-11-29T00:00:00Z";
  e.device = "cpu";
  e.device_kind = "cpu";
  e.profile = "host-cpu";
  e.host = "h (cpu)";
  e.compiler = dispatch::compiler_id();
  e.threads = 2;
  e.seed = 42;

  CaseResult a;  // ours and native, with a spread on ours
  a.plan.problem = Problem{};
  a.plan.problem.m = a.plan.problem.n = a.plan.problem.k = 64;
  a.plan.problem = a.plan.problem.normalized();
  a.plan.config_source = "pinned";
  a.ours = measured("cpu", {1.0, 1.0, 2.0}, 1e-7);  // quartiles 1.0 and 1.5: a spread of 0.5
  a.native = measured("openblas", {2.0, 2.0, 2.0}, 2e-7);
  a.peers.push_back(measured("onednn", {1.8, 1.8, 1.8}, 2e-7));
  a.peak_tflops = 1.0;
  a.threshold = 4e-7;

  CaseResult b = a;  // fallback: ours failed, no ratio
  b.ours.reset();
  b.fallback = true;
  b.ours_failure = "cpu: prepare failed";
  b.plan.config_source = "heuristic";

  CaseResult c = a;  // no native at all
  c.native.reset();
  c.native_missing = "no vendor library has an f16 GEMM";
  c.peers.clear();
  rep.rows = {a, b, c};
  return rep;
}

// A GPU run: 16x4096x4096 f16 (a skinny, memory-bound shape) with ours at 10 us and cuBLAS at 12.5 us, and the
// device's copy bandwidth measured at 4000 GB/s.
Report gpu_report() {
  Report rep = sample_report();
  Environment& e = rep.environment;
  e.device = "NVIDIA H200";
  e.device_kind = "cuda";
  e.profile = "h200";
  e.cache_state = "cold-l2";
  measure::CopyBandwidth bw;
  bw.method = "device-to-device copy (cuMemcpyDtoDAsync) of twice the L2, 120 MiB, read and write counted";
  bw.bytes = std::size_t(120) << 20;
  bw.timing = summarize({0.0629, 0.0629, 0.0630});
  bw.gbps = 4000;
  e.bandwidth = bw;

  CaseResult r;
  r.plan.problem = Problem{};
  r.plan.problem.m = 16;
  r.plan.problem.n = r.plan.problem.k = 4096;
  r.plan.problem.precision = {DType::f16, DType::f16, DType::f32};
  r.plan.problem = r.plan.problem.normalized();
  r.plan.config_source = "planner";
  r.ours = measured("cuda", {0.010, 0.010, 0.010}, 1e-4);
  r.ours->config = Config{"sm90", {{"BLOCK_M", 64}}};
  r.native = measured("cublas", {0.0125, 0.0125, 0.0125}, 1e-4);
  r.ours->tflops = r.plan.problem.flops() / 0.010e-3 / 1e12;
  r.native->tflops = r.plan.problem.flops() / 0.0125e-3 / 1e12;
  r.peak_tflops = 989;
  r.threshold = 2e-3;
  rep.rows = {r};
  return rep;
}

// A, B read and C written once: (16*4096 + 4096*4096 + 16*4096) f16 elements.
constexpr double kSkinnyBytes = (16.0 * 4096 + 4096.0 * 4096 + 16.0 * 4096) * 2;

TEST(Report, GpuRowsCarryTheirShareOfTheMeasuredBandwidth) {
  const Report rep = gpu_report();
  const auto doc = nlohmann::json::parse(to_json(rep));
  const auto& bw = doc["environment"]["device_bandwidth"];
  ASSERT_TRUE(bw.is_object()) << doc["environment"].dump();
  EXPECT_DOUBLE_EQ(bw["gbps"].get<double>(), 4000);
  EXPECT_EQ(bw["bytes"], std::size_t(120) << 20);
  EXPECT_EQ(bw["reps"], 3);
  EXPECT_DOUBLE_EQ(bw["median_ms"].get<double>(), 0.0629);
  EXPECT_NE(bw["method"].get<std::string>().find("read and write"), std::string::npos);
  EXPECT_FALSE(doc["environment"].contains("device_bandwidth_missing"));

  const auto& row = doc["rows"][0];
  const double ours_gbps = kSkinnyBytes / 0.010e-3 / 1e9;  // 3381.7 GB/s
  EXPECT_NEAR(row["gbps"].get<double>(), ours_gbps, 1e-9 * ours_gbps);
  EXPECT_NEAR(row["bandwidth_fraction"].get<double>(), ours_gbps / 4000, 1e-12);
  const double native_gbps = kSkinnyBytes / 0.0125e-3 / 1e9;
  EXPECT_NEAR(row["native"]["gbps"].get<double>(), native_gbps, 1e-9 * native_gbps);
  EXPECT_NEAR(row["native"]["bandwidth_fraction"].get<double>(), native_gbps / 4000, 1e-12);
}

TEST(Report, GpuTableShowsGbpsAndShareOfBandwidthBesideTflops) {
  const std::string t = to_table(gpu_report());
  EXPECT_NE(t.find("ours TFLOP/s  ours GB/s  of bw  native TFLOP/s"), std::string::npos) << t;
  EXPECT_NE(t.find("3381.7"), std::string::npos) << t;  // ours GB/s
  EXPECT_NE(t.find("84.5%"), std::string::npos) << t;   // 3381.7 / 4000
  EXPECT_NE(t.find("device bandwidth: 4000.0 GB/s measured in this run"), std::string::npos) << t;
  EXPECT_NE(t.find("3 reps, median 0.0629 ms"), std::string::npos) << t;
  // The CSV carries the same fraction.
  const std::string csv = to_csv(gpu_report());
  EXPECT_NE(csv.find(",gbps,bandwidth_fraction\n"), std::string::npos);
  EXPECT_NE(csv.find(",3381.66,0.8454\n"), std::string::npos) << csv;
}

// A GPU run whose bandwidth measurement failed: rows keep their GB/s, without a fraction, and the report says why.
TEST(Report, GpuRunWithoutBandwidthSaysWhy) {
  Report rep = gpu_report();
  rep.environment.bandwidth.reset();
  rep.environment.bandwidth_missing = "cuMemAlloc(251658240 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory";
  const auto doc = nlohmann::json::parse(to_json(rep));
  EXPECT_TRUE(doc["environment"]["device_bandwidth"].is_null());
  EXPECT_EQ(doc["environment"]["device_bandwidth_missing"], rep.environment.bandwidth_missing);
  EXPECT_TRUE(doc["rows"][0]["gbps"].is_number());
  EXPECT_TRUE(doc["rows"][0]["bandwidth_fraction"].is_null());
  const std::string t = to_table(rep);
  EXPECT_NE(t.find("3381.7"), std::string::npos) << t;
  EXPECT_NE(t.find("device bandwidth: not measured (cuMemAlloc"), std::string::npos) << t;
}

// CPU runs measure no bandwidth: null in JSON, and the table keeps its CPU columns.
TEST(Report, CpuRunsHaveNoBandwidthFraction) {
  const Report rep = sample_report();
  const auto doc = nlohmann::json::parse(to_json(rep));
  EXPECT_TRUE(doc["environment"]["device_bandwidth"].is_null());
  for (const auto& row : doc["rows"]) {
    EXPECT_TRUE(row["gbps"].is_number());
    EXPECT_TRUE(row["bandwidth_fraction"].is_null());
  }
  EXPECT_TRUE(doc["rows"][0]["native"]["bandwidth_fraction"].is_null());
  const std::string t = to_table(rep);
  EXPECT_EQ(t.find("GB/s"), std::string::npos) << t;
  EXPECT_EQ(t.find("of bw"), std::string::npos) << t;
}

TEST(Report, JsonHasTheSchemaFieldsAndNulls) {
  const auto doc = nlohmann::json::parse(to_json(sample_report()));
  for (const char* key : {"tool_version", "date", "device", "profile", "host", "compiler", "driver", "toolkit", "clocks",
                          "cache_state", "threads", "seed"}) {
    EXPECT_TRUE(doc["environment"].contains(key)) << key;
  }
  EXPECT_TRUE(doc["environment"]["driver"].is_null());
  EXPECT_EQ(doc["environment"]["cache_state"], "warm");
  ASSERT_EQ(doc["rows"].size(), 3u);
  const auto& a = doc["rows"][0];
  EXPECT_EQ(a["backend"], "cpu");
  EXPECT_EQ(a["config"]["family"], "cpu-test");
  EXPECT_EQ(a["config"]["MR"], 6);
  EXPECT_EQ(a["config_source"], "pinned");
  EXPECT_EQ(a["fallback"], false);
  EXPECT_DOUBLE_EQ(a["ratio"].get<double>(), 2.0);
  EXPECT_EQ(a["spread_flag"], true);
  EXPECT_EQ(a["reps"], 3);
  EXPECT_EQ(a["native"]["backend"], "openblas");
  EXPECT_EQ(a["peers"][0]["backend"], "onednn");
  EXPECT_NEAR(a["peak_fraction"].get<double>(), a["tflops"].get<double>(), 1e-12);
  EXPECT_EQ(a["shape"], nlohmann::json::array({64, 64, 64}));
  EXPECT_EQ(a["ld"], nlohmann::json::array({64, 64, 64}));

  const auto& b = doc["rows"][1];
  EXPECT_EQ(b["fallback"], true);
  EXPECT_EQ(b["backend"], "openblas");
  EXPECT_TRUE(b["ratio"].is_null());

  const auto& c = doc["rows"][2];
  EXPECT_TRUE(c["native"]["backend"].is_null());
  EXPECT_EQ(c["native"]["missing"], "no vendor library has an f16 GEMM");
  EXPECT_TRUE(c["ratio"].is_null());
}

TEST(Report, NonFiniteErrorsStayValidJson) {
  Report rep = sample_report();
  rep.rows[0].ours->error.rel_error = std::numeric_limits<double>::quiet_NaN();
  const auto doc = nlohmann::json::parse(to_json(rep));
  EXPECT_TRUE(doc["rows"][0]["rel_error"].is_number());
  EXPECT_GT(doc["rows"][0]["rel_error"].get<double>(), 1e200);
}

TEST(Report, TableMarksSpreadFallbackAndMissingNative) {
  const std::string t = to_table(sample_report());
  EXPECT_NE(t.find("GFLOP/s"), std::string::npos);
  EXPECT_NE(t.find("~"), std::string::npos);
  EXPECT_NE(t.find("spread"), std::string::npos);
  EXPECT_NE(t.find("fallback"), std::string::npos);
  EXPECT_NE(t.find("no-native"), std::string::npos);
  EXPECT_NE(t.find("2.00"), std::string::npos);  // the ratio
  EXPECT_NE(t.find("pinned"), std::string::npos);
  EXPECT_NE(t.find("ratio = native time / our time"), std::string::npos);
}

TEST(Report, CsvHasAHeaderAndOneLinePerRow) {
  const std::string csv = to_csv(sample_report());
  std::istringstream in(csv);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  const auto columns = [](const std::string& l) {
    int n = 1;
    bool quoted = false;
    for (char ch : l) {
      if (ch == '"') quoted = !quoted;
      if (ch == ',' && !quoted) ++n;
    }
    return n;
  };
  for (const auto& l : lines) EXPECT_EQ(columns(l), columns(lines[0])) << l;
  EXPECT_EQ(lines[0].rfind("m,n,k,", 0), 0u);
}

TEST(Report, CompilerAndDateAreFilled) {
  EXPECT_NE(dispatch::compiler_id(), "unknown");
  const std::string d = iso_date_now();
  ASSERT_EQ(d.size(), 20u);
  EXPECT_EQ(d[4], '-');
  EXPECT_EQ(d[10], 'T');
  EXPECT_EQ(d.back(), 'Z');
}

}  // namespace
}  // namespace tileforge::bench
