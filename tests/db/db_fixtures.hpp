// Shared by the tuning DB tests: scratch directories, sample fingerprints and random records.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "db/keys.hpp"
#include "db/record.hpp"

namespace tileforge::db {
// Readable failure messages for signatures and fingerprints.
inline void PrintTo(const Signature& s, std::ostream* os) { *os << s.key(); }
inline void PrintTo(const Fingerprint& f, std::ostream* os) { *os << f.describe(); }
}  // namespace tileforge::db

namespace tileforge::db::dbtest {

// A fresh directory under the system's temporary directory, removed with everything in it at the end.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tileforge-db-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Two fingerprints of one architecture (driver differs), one of the same arch but another chip, and one of
// another architecture.
inline Fingerprint h200(std::string driver = "550.54.15") {
  return {"gpu", "NVIDIA H200", "sm_90a", 132, 1980, std::move(driver), "12.4"};
}
inline Fingerprint h100() { return {"gpu", "NVIDIA H100 80GB HBM3", "sm_90a", 132, 1980, "550.54.15", "12.4"}; }
inline Fingerprint a100() { return {"gpu", "NVIDIA A100-SXM4-80GB", "sm_80", 108, 1410, "550.54.15", "12.4"}; }
inline Fingerprint epyc() { return {"cpu", "AMD EPYC 7B13", "x86-64-v3", 2, 0, "", "g++ 12.2"}; }

// A signature of a tightly stored problem; align 0 = the class such a problem has (its alignment_class).
inline Signature sig(int64_t m, int64_t n, int64_t k, DType in = DType::f16, DType out = DType::f16,
                     Layout layout = Layout::RR, int align = 0, int64_t batch = 1) {
  Signature s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.batch = batch;
  s.input = in;
  s.output = out;
  s.accum = DType::f32;
  s.layout = layout;
  s.align = align ? align : alignment_class(problem_of(s));
  return s;
}


// Sets the timing and the TFLOP/s its median implies (validation requires the two to agree).
inline void set_time(Record& r, Timing t) {
  r.time = t;
  r.tflops = 2.0 * double(r.problem.m) * double(r.problem.n) * double(r.problem.k) * double(r.problem.batch) /
             (t.median_ms * 1e-3) / 1e12;
}

// A fast but plausible median for a signature: 10 PFLOP/s, and at least 10 ns.
inline double fast_ms(const Signature& s) {
  return std::max(1e-5, 2.0 * double(s.m) * double(s.n) * double(s.k) * double(s.batch) / 1e16 * 1e3);
}

// A valid record with random config and measurements; median in [0.01, 10) ms above the time 1 PFLOP/s takes.
inline Record random_record(std::mt19937_64& rng, const Fingerprint& device, const Signature& problem,
                            std::string family = "sm80", int64_t family_version = 1) {
  std::uniform_real_distribution<double> u(0, 1);
  auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng));
  };
  Record r;
  r.device = device;
  r.backend = device.kind == "cpu" ? "cpu" : "cuda";
  r.family_version = family_version;
  r.problem = problem;
  r.config.family = std::move(family);
  r.config.params = {{"BLOCK_M", pick({64, 128, 256})}, {"BLOCK_N", pick({64, 128, 256})},
                     {"BLOCK_K", pick({32, 64})},       {"GROUP_M", pick({1, 4, 8})},
                     {"STAGES", pick({2, 3, 4, 5})},    {"WARPS_M", pick({1, 2, 4})},
                     {"WARPS_N", pick({1, 2})},         {"VEC_BYTES", pick({4, 8, 16})}};
  r.time.median_ms = 2.0 * double(problem.m) * double(problem.n) * double(problem.k) * double(problem.batch) / 1e15 *
                         1e3 + 0.01 + 10 * u(rng);
  r.time.min_ms = r.time.median_ms * (1 - 0.05 * u(rng));
  r.time.max_ms = r.time.median_ms * (1 + 0.2 * u(rng));
  r.time.reps = std::uniform_int_distribution<int64_t>(30, 500)(rng);
  r.tflops = 2.0 * double(problem.m) * double(problem.n) * double(problem.k) * double(problem.batch) /
             (r.time.median_ms * 1e-3) / 1e12;
  r.rel_error = 1e-4 * u(rng);
  r.max_scaled_error = 1e-3 * u(rng);
  r.tool_version = "0.1.0";
  r.created_at = iso_time(1700000000 + std::uniform_int_distribution<int64_t>(0, 50'000'000)(rng));
  r.source = Source::tuned;
  return r;
}

// Random quartiles around the record's median (q1 in [min, median], q3 in [median, max]) and, with `host`, a random
// host load: what a v2 tuner stores. The spread is whatever the random quartiles make it.
inline void add_quartiles(std::mt19937_64& rng, Record& r, bool host = true) {
  std::uniform_real_distribution<double> u(0, 1);
  r.time.q1_ms = r.time.min_ms + u(rng) * (r.time.median_ms - r.time.min_ms);
  r.time.q3_ms = r.time.median_ms + u(rng) * (r.time.max_ms - r.time.median_ms);
  if (host) {
    r.time.others_cores = 3 * u(rng);
    r.time.spare_cores = double(std::uniform_int_distribution<int>(0, 63)(rng));
  }
}

// The same record with the id cleared, for comparing what was stored with what was written.
inline Record without_id(Record r) {
  r.id = 0;
  return r;
}

inline void expect_same(const Record& a, const Record& b) {
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.family_version, b.family_version);
  EXPECT_EQ(a.problem, b.problem) << a.problem.key() << " vs " << b.problem.key();
  EXPECT_EQ(a.config, b.config) << a.config.describe() << " vs " << b.config.describe();
  EXPECT_EQ(a.time.median_ms, b.time.median_ms);
  EXPECT_EQ(a.time.min_ms, b.time.min_ms);
  EXPECT_EQ(a.time.max_ms, b.time.max_ms);
  EXPECT_EQ(a.time.reps, b.time.reps);
  EXPECT_EQ(a.time.q1_ms, b.time.q1_ms);
  EXPECT_EQ(a.time.q3_ms, b.time.q3_ms);
  EXPECT_EQ(a.time.others_cores, b.time.others_cores);
  EXPECT_EQ(a.time.spare_cores, b.time.spare_cores);
  EXPECT_EQ(a.tflops, b.tflops);
  EXPECT_EQ(a.rel_error, b.rel_error);
  EXPECT_EQ(a.max_scaled_error, b.max_scaled_error);
  EXPECT_EQ(a.tool_version, b.tool_version);
  EXPECT_EQ(a.created_at, b.created_at);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.deterministic, b.deterministic);
}

// A seed that differs per run, printed so that a failure can be replayed (TILEFORGE_TEST_SEED fixes it).
inline uint64_t test_seed() {
  if (const char* s = std::getenv("TILEFORGE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

}  // namespace tileforge::db::dbtest
