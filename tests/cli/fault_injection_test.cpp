// Faults around the tool, as a user meets them (issue 18): a full disk under --out and under the tuning DB, a DB
// from a newer schema, and, on a GPU, kernels that do not compile. Each leaves the tool working, says what failed,
// and corrupts nothing. (The kernel cache's own faults: tests/jit/kernel_cache_test.cpp.)
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "db/db_fixtures.hpp"
#include "db/exchange.hpp"
#include "db/store.hpp"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CliResult;
using testing::EnvChanges;
using testing::run_cli;
using testing::run_cli_on_full_disk;

const std::vector<std::string> kQuick = {"--min-reps", "2", "--min-time", "0", "--max-time", "0.02", "--quiet"};

// No host-measurement cache: a test must not write into the user's home folder, nor count its size.
const EnvChanges kNoHostCache = {{"TILEFORGE_HOST_CACHE", "off"}, {"TILEFORGE_DB", std::nullopt}};

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// `n` valid records of distinct random shapes on one GPU fingerprint.
std::vector<db::Record> random_records(std::mt19937_64& rng, int n, int64_t first_m) {
  std::vector<db::Record> out;
  std::uniform_int_distribution<int64_t> size(1, 64);
  for (int i = 0; i < n; ++i) {
    const db::Signature s = db::dbtest::sig(first_m + 16 * i, 16 * size(rng), 16 * size(rng));
    out.push_back(db::dbtest::random_record(rng, db::dbtest::h200(), s));
  }
  return out;
}

// PRAGMA user_version lives in the file header at byte 60, big-endian (SQLite's file format).
void set_user_version(const std::string& path, uint32_t v) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const char bytes[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  f.seekp(60);
  f.write(bytes, 4);
}

class CliFaults : public ::testing::Test {
 protected:
  void SetUp() override { dir = testing::fresh_test_dir("tileforge_cli_faults_"); }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

// --out on a full disk: an error naming the option, the path and the cause, exit 2, and the file that was there
// keeps its contents (the result goes to a temporary file renamed over it only when whole), no temporary left.
TEST_F(CliFaults, FullDiskUnderOutKeepsTheOldFile) {
  const fs::path folder = dir / "results";
  fs::create_directories(folder);
  const fs::path target = folder / "verify.json";
  const std::vector<std::string> args = {"verify", "--shape", "24x16x40", "--format", "json", "--quiet", "--out",
                                         target.string()};
  // The whole output, to know that it does not fit under the limit.
  CliResult whole = run_cli(args, dir, kNoHostCache);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const uintmax_t size = fs::file_size(target);
  const uint64_t limit = 1024;
  ASSERT_GT(size, limit);
  std::mt19937_64 rng(std::random_device{}());
  const std::string old = "old results " + std::to_string(rng()) + "\n";
  { std::ofstream(target, std::ios::binary) << old; }

  const CliResult r = run_cli_on_full_disk(args, dir, kNoHostCache, limit);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("tileforge verify: error: --out '" + target.string() + "': write failed ("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(std::strerror(EFBIG)), std::string::npos) << r.err;
  EXPECT_EQ(testing::read_file(target), old) << "the old file was replaced by a partial one";
  EXPECT_EQ(names_in(folder), std::set<std::string>{"verify.json"}) << "a temporary file was left";

  // The disk has room again: the same command writes the whole result.
  const CliResult again = run_cli(args, dir, kNoHostCache);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  // Whole again: its size varies by a few bytes with the timings it holds, so it is parsed, not measured.
  const std::string written = testing::read_file(target);
  EXPECT_GT(written.size(), limit);
  EXPECT_TRUE(nlohmann::json::accept(written)) << written;
}

// A tuning DB on a full disk: an import that cannot be written fails naming the DB and the cause, and the DB keeps
// exactly the records it had (SQLite's journal rolls the import back whole), passes its checks and takes the same
// import once there is room.
TEST_F(CliFaults, FullDiskDuringDbImportKeepsTheDbAsItWas) {
  const uint64_t seed = db::dbtest::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::string db_path = (dir / "tune.db").string();
  const std::vector<db::Record> before = random_records(rng, 5, 4096);
  {
    auto store = db::Store::open(db_path);
    ASSERT_TRUE(store) << store.status().to_string();
    ASSERT_TRUE(store->upsert_all(before));
  }  // closed: the WAL is checkpointed into the file and removed
  // 300 records: over a hundred kB of pages, far more than the limit lets the journal grow.
  const std::vector<db::Record> incoming = random_records(rng, 300, 8192);  // none of them shares a key with those
  const fs::path file = dir / "export.json";
  { std::ofstream(file, std::ios::binary) << db::export_json(incoming); }

  // 64 KiB: room for SQLite's 32 KiB shared-memory index, not for the import's pages.
  const std::vector<std::string> args = {"db", "import", file.string(), "--db", db_path};
  const CliResult r = run_cli_on_full_disk(args, dir, kNoHostCache, 64 * 1024);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("tileforge db import: error: tuning DB " + db_path + " hit a disk error ("), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rolled back"), std::string::npos) << r.err;

  {
    db::OpenOptions ro;
    ro.access = db::Access::read_only;
    auto store = db::Store::open(db_path, ro);  // its quick_check passes, or it is refused as corrupted
    ASSERT_TRUE(store) << store.status().to_string();
    auto rows = store->list();
    ASSERT_TRUE(rows) << rows.status().to_string();
    ASSERT_EQ(rows->size(), before.size()) << "the failed import left records behind, or lost some";
    for (const db::Record& want : before) {
      bool found = false;
      for (const db::Record& got : *rows) {
        if (got.problem.key() != want.problem.key()) continue;
        found = true;
        db::dbtest::expect_same(db::dbtest::without_id(got), want);
      }
      EXPECT_TRUE(found) << want.problem.key();
    }
    auto invalid = store->check();
    ASSERT_TRUE(invalid);
    EXPECT_TRUE(invalid->empty());
  }
  const CliResult check = run_cli({"db", "check", "--db", db_path}, dir, kNoHostCache);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;

  // Room again: the same import goes in whole.
  const CliResult again = run_cli(args, dir, kNoHostCache);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("300 new"), std::string::npos) << again.out;
  auto store = db::Store::open(db_path);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->list()->size(), before.size() + incoming.size());
}

// A DB written by a newer tileforge: bench and verify run by planning and say why, the writers (tune, import,
// prune) refuse it before doing anything, and no verb changes a byte of it.
TEST_F(CliFaults, NewerSchemaDbIsUsedByNoVerbAndLeftUntouched) {
  std::mt19937_64 rng(db::dbtest::test_seed());
  const std::string db_path = (dir / "tune.db").string();
  {
    auto store = db::Store::open(db_path);
    ASSERT_TRUE(store) << store.status().to_string();
    ASSERT_TRUE(store->upsert_all(random_records(rng, 3, 64)));
  }
  set_user_version(db_path, 99);
  const std::string bytes = testing::read_file(db_path);
  const fs::path file = dir / "export.json";
  { std::ofstream(file, std::ios::binary) << db::export_json(random_records(rng, 2, 4096)); }
  const std::string newer = "has schema v99, newer than this tileforge knows (v" + std::to_string(db::schema_version()) + ")";

  for (std::string verb : {"bench", "verify"}) {
    std::vector<std::string> args = {verb, "--shape", "24x16x40", "--layout", "RR", "--format", "json", "--db", db_path};
    if (verb == "bench") args.insert(args.end(), kQuick.begin(), kQuick.end());
    const CliResult r = run_cli(args, dir, kNoHostCache);
    EXPECT_EQ(r.exit_code, 0) << verb << ": " << r.err;
    EXPECT_NE(r.err.find("tileforge: warning: tuning DB " + db_path + " is unreadable ("), std::string::npos)
        << verb << ": " << r.err;
    EXPECT_NE(r.err.find(newer), std::string::npos) << verb << ": " << r.err;
    EXPECT_NE(r.out.find("\"config_source\": \"planner\""), std::string::npos) << verb << ": " << r.out;
  }
  const std::vector<std::vector<std::string>> refused = {
      {"tune", "--shape", "24x16x40", "--top", "2", "--quiet"},
      {"db", "import", file.string()},
      {"db", "prune", "--older-than", "2000-01-01T00:00:00Z"},
      {"db", "list"},
      {"db", "check"},
  };
  for (std::vector<std::string> args : refused) {
    args.insert(args.end(), {"--db", db_path});
    const CliResult r = run_cli(args, dir, kNoHostCache);
    EXPECT_NE(r.exit_code, 0) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find("tuning DB " + db_path + " " + newer), std::string::npos) << args[1] << ": " << r.err;
    // Refused before any work: tune used to measure for its whole budget and only then fail to record the winner.
    EXPECT_EQ(r.out, "") << args[0] << " " << args[1];
  }
  EXPECT_EQ(testing::read_file(db_path), bytes) << "a verb changed the newer DB";
}

// ---- on a GPU: kernels that do not compile (TILEFORGE_JIT_FAULT, docs/JIT.md) ------------------------------------

class CliFaultsGpu : public CliFaults {
 protected:
  void SetUp() override {
    CliFaults::SetUp();
    auto d = open_device("cuda");
    if (!d.ok()) GTEST_SKIP() << "SKIPPED: no CUDA device (" << d.status().message() << ")";
    env = kNoHostCache;
    env["TILEFORGE_CACHE_DIR"] = (dir / "kernels").string();  // empty: every kernel is compiled in the run
  }
  EnvChanges env;
};

// An sm90 kernel that ptxas refuses: the sm80 family runs the problem instead, correctly, and the run says so.
TEST_F(CliFaultsGpu, Sm90KernelThatPtxasRefusesFallsBackToSm80AndSaysSo) {
  env["TILEFORGE_JIT_FAULT"] = "ptxas:sm90_gemm";
  const CliResult r = run_cli({"verify", "--device", "cuda", "--shape", "2048x2048x2048", "--dtype", "f16",
                               "--layout", "RR", "--format", "json", "--quiet"},
                              dir, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("could not be prepared (ptxas (NVRTC's assembler step) could not assemble 'sm90_gemm_"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("running the sm80 family's"), std::string::npos) << r.err;
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  EXPECT_NE(r.out.find("\"config\": \"sm80 "), std::string::npos) << "the row names the family that ran: " << r.out;
  EXPECT_EQ(r.out.find("\"pass\": false"), std::string::npos) << r.out;
}

// Every GEMM kernel of ours fails to compile: the row shows the native library, marked as a fallback that never
// counts as ours, and the warning names the compile error.
TEST_F(CliFaultsGpu, GemmKernelsThatDoNotCompileGiveAFallbackRowAndSaySo) {
  env["TILEFORGE_JIT_FAULT"] = "nvrtc:_gemm_";
  std::vector<std::string> args = {"bench", "--device", "cuda", "--shape", "1024x1024x1024", "--dtype", "f16",
                                   "--format", "json"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  const CliResult r = run_cli(args, dir, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("NVRTC could not compile '"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("TILEFORGE_JIT_FAULT=nvrtc"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fallback, not counted as ours"), std::string::npos) << r.err;
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  ASSERT_EQ(out["rows"].size(), 1u);
  EXPECT_TRUE(out["rows"][0]["fallback"].get<bool>());
}

// A kernel that faults (TILEFORGE_JIT_FAULT=trap) loses the CUDA context for the rest of the process. Each verb
// stops its GPU work there with one error that says so and where it was first seen, instead of failing every later
// case or candidate as if each had faulted; it exits 1, not by a signal, and --out holds a whole report.
TEST_F(CliFaultsGpu, AKernelThatFaultsStopsTheRunWithOneClearError) {
  const std::string lost = "a GPU kernel faulted (first reported as \"";
  {
    env["TILEFORGE_JIT_FAULT"] = "trap:sm90_gemm";
    const std::string file = (dir / "verify.json").string();
    const CliResult r = run_cli({"verify", "--device", "cuda", "--shape", "512x512x512", "--dtype", "f16", "--no-db",
                                 "--format", "json", "--out", file, "--quiet"},
                                dir, env);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("tileforge verify: error: " + lost), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("case(s) left not run"), std::string::npos) << r.err;
    const json out = json::parse(testing::read_file(file), nullptr, false);
    EXPECT_FALSE(out.is_discarded()) << "--out holds a whole report";
  }
  {
    env["TILEFORGE_JIT_FAULT"] = "trap:tf_reference";
    std::vector<std::string> args = {"bench", "--device", "cuda", "--shape", "256x256x256", "--shape", "384x384x384",
                                     "--dtype", "f16", "--no-db", "--format", "json"};
    args.insert(args.end(), kQuick.begin(), kQuick.end());
    const CliResult r = run_cli(args, dir, env);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("tileforge bench: error: " + lost), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("1 case(s) left not run"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("the device bandwidth was not measured"), std::string::npos) << r.err;
    EXPECT_FALSE(json::parse(r.out, nullptr, false).is_discarded()) << r.out;
  }
  {
    env["TILEFORGE_JIT_FAULT"] = "trap:sm90_gemm";
    const CliResult r = run_cli({"tune", "--device", "cuda", "--shape", "512x512x512", "--dtype", "f16", "--top", "4",
                                 "--db", (dir / "tune.db").string()},
                                dir, env);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("the GPU's context was lost while rank "), std::string::npos) << r.err;
    const std::size_t first = r.err.find("run-failed");
    ASSERT_NE(first, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("run-failed", first + 1), std::string::npos) << "a candidate after the fault ran: " << r.err;
  }
}

}  // namespace
}  // namespace tileforge
