// A tuning DB that defends itself: implausible or unusable rows are refused when written, skipped (never dispatched,
// never blocking a new result) when read, reported by `db check` and removed by `db prune --invalid`; one bad row
// never hides the others; a read-only DB is read.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/db_fixtures.hpp"
#include "db/exchange.hpp"
#include "db/store.hpp"
#include "hw/hw.hpp"
#include "plan/kernel_family.hpp"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace tileforge::db {
namespace {

using namespace dbtest;
namespace fs = std::filesystem;

// Runs SQL on the file behind the store's back, as a hand edit or a broken tool would.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg << " in " << sql;
}

// A valid record of one shape with a chosen median (TFLOP/s to match).
Record record_with(std::mt19937_64& rng, const Fingerprint& f, const Signature& s, double median_ms) {
  Record r = random_record(rng, f, s);
  set_time(r, {median_ms, median_ms * 0.98, median_ms * 1.05, 40});
  return r;
}

// Installs record rules for one test and removes them after it.
struct RulesGuard {
  explicit RulesGuard(RecordRules rules) { set_record_rules(std::move(rules)); }
  ~RulesGuard() { set_record_rules(nullptr); }
};

LookupRequest request_for(const Fingerprint& f, const Signature& s) {
  return LookupRequest{f, "cuda", problem_of(s), {{"sm80", 1}}, nullptr};
}

TEST(DbDefense, ImplausibleMeasurementsAreRefusedWhenWritten) {
  std::mt19937_64 rng(test_seed());
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store) << store.status().to_string();
  const Signature s = sig(1024, 1024, 1024);
  struct Case {
    const char* what;
    std::function<void(Record&)> edit;
    const char* field;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"median 0", [](Record& r) { r.time = {0, 0, 0, 10}; }, "time_ms.median"},
      {"median -1", [](Record& r) { r.time = {-1, -1, -1, 10}; }, "time_ms.median"},
      {"median 1e-300", [](Record& r) { r.time = {1e-300, 1e-300, 1e-300, 10}; }, "time_ms.median"},
      {"median of days", [](Record& r) { set_time(r, {1e9, 1e9, 1e9, 10}); }, "time_ms.median"},
      {"TFLOP/s NaN", [nan](Record& r) { r.tflops = nan; }, "tflops"},
      {"TFLOP/s infinite", [](Record& r) { r.tflops = std::numeric_limits<double>::infinity(); }, "tflops"},
      {"TFLOP/s not the median's", [](Record& r) { r.tflops *= 3; }, "tflops"},
      {"TFLOP/s 0", [](Record& r) { r.tflops = 0; }, "tflops"},
      {"device kind", [](Record& r) { r.device.kind = "toaster"; }, "device.kind"},
  };
  for (const Case& c : cases) {
    Record r = record_with(rng, h200(), s, 0.5);
    c.edit(r);
    auto u = store->upsert(r);
    ASSERT_FALSE(u) << c.what << " was accepted";
    EXPECT_NE(u.status().message().find(c.field), std::string::npos) << c.what << ": " << u.status().message();
    // The import path refuses the same, naming the record and field.
    auto parsed = parse_export(export_json({r}), "team.json");
    ASSERT_FALSE(parsed) << c.what << " was imported";
    EXPECT_NE(parsed.status().message().find(fmt::format("records[0].{}", c.field)), std::string::npos)
        << parsed.status().message();
  }
  auto all = store->list();
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->empty());
}

TEST(DbDefense, AnImplausibleRowNeverWinsDispatchNorBlocksANewResult) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const Signature s = sig(2048, 2048, 2048);
  for (const char* median : {"0", "-1", "1e-300"}) {
    SCOPED_TRACE(median);
    ScratchDir dir;
    const std::string path = dir.file("tune.db");
    {
      auto store = Store::open(path);
      ASSERT_TRUE(store);
      ASSERT_TRUE(store->upsert(record_with(rng, h200(), s, 1.0)));
    }
    // A forged row: the same key with an impossible time (min and max too, so only the bounds can catch it).
    raw_sql(path, fmt::format("UPDATE records SET median_ms = {0}, min_ms = {0}, max_ms = {0}", median));
    auto store = Store::open(path);
    ASSERT_TRUE(store);
    auto found = store->lookup(request_for(h200(), s));
    ASSERT_TRUE(found) << found.status().to_string();
    EXPECT_EQ(found->source, Hit::planner) << found->reason;
    ASSERT_EQ(found->invalid.size(), 1u);
    EXPECT_NE(found->invalid[0].why.find("time_ms.median"), std::string::npos) << found->invalid[0].why;
    EXPECT_NE(found->reason.find("1 invalid"), std::string::npos) << found->reason;

    // A real result, slower than the forged median, replaces it; so does an import of one.
    const Record real = record_with(rng, h200(), s, 2.0);
    auto u = store->upsert(real);
    ASSERT_TRUE(u) << u.status().to_string();
    EXPECT_EQ(*u, Upsert::replaced);
    found = store->lookup(request_for(h200(), s));
    ASSERT_TRUE(found && found->record) << (found ? found->reason : found.status().to_string());
    EXPECT_EQ(found->source, Hit::exact);
    EXPECT_EQ(found->record->time.median_ms, 2.0);
    EXPECT_TRUE(store->check()->empty());

    raw_sql(path, fmt::format("UPDATE records SET median_ms = {0}, min_ms = {0}, max_ms = {0}", median));
    const Record imported = record_with(rng, h200(), s, 3.0);
    auto summary = import_json(*store, export_json({imported}), "team.json");
    ASSERT_TRUE(summary) << summary.status().to_string();
    EXPECT_EQ(summary->replaced, 1);
    EXPECT_EQ(summary->kept, 0);
    EXPECT_EQ(store->list()->at(0).time.median_ms, 3.0);
  }
}

TEST(DbDefense, ARowWithAnUnusableConfigDoesNotBlockANewResult) {
  std::mt19937_64 rng(test_seed());
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  const Signature s = sig(512, 512, 512);
  auto store = Store::open(path);
  ASSERT_TRUE(store);
  // Written before this build's rules knew better (an older build, or a hand edit): BLOCK_M = 999 and very fast.
  Record stale = record_with(rng, h200(), s, 0.01);
  stale.config.params["BLOCK_M"] = 999;
  ASSERT_TRUE(store->upsert(stale));
  RulesGuard rules([](const Record& r) -> std::optional<FieldError> {
    if (r.config.get("BLOCK_M") == 999) return FieldError{"config", "BLOCK_M = 999 is not legal (allowed: 64, 128)"};
    return std::nullopt;
  });
  // Never dispatched; listed as invalid; a legal, slower result replaces it.
  auto found = store->lookup(request_for(h200(), s));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->source, Hit::planner) << found->reason;
  auto bad = store->check();
  ASSERT_TRUE(bad);
  ASSERT_EQ(bad->size(), 1u);
  EXPECT_NE((*bad)[0].describe().find("BLOCK_M = 999"), std::string::npos) << (*bad)[0].describe();
  EXPECT_NE((*bad)[0].describe().find("512x512x512"), std::string::npos) << (*bad)[0].describe();
  Record legal = record_with(rng, h200(), s, 0.5);
  legal.config.params["BLOCK_M"] = 128;
  auto u = store->upsert(legal);
  ASSERT_TRUE(u) << u.status().to_string();
  EXPECT_EQ(*u, Upsert::replaced);
  // And the rules refuse such a config when written or imported.
  auto refused = store->upsert(stale, /*force=*/true);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.status().message().find("config BLOCK_M = 999"), std::string::npos) << refused.status().message();
  EXPECT_FALSE(parse_export(export_json({stale}), "team.json"));
}

TEST(DbDefense, OneBadRowDoesNotHideTheOthers) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::vector<std::pair<std::string, std::string>> damage = {
      {"input = 'f99'", "problem.input"},
      {"config = 'not json'", "config"},
      {"config = '{\"family\": \"sm80\", \"BLOCK_M\": \"big\"}'", "config"},
      {"median_ms = 0", "time_ms.median"},
      {"tflops = 1e30", "tflops"},
      {"created_at = 'yesterday'", "created_at"},
  };
  for (const auto& [set, field] : damage) {
    SCOPED_TRACE(set);
    ScratchDir dir;
    const std::string path = dir.file("tune.db");
    std::vector<Record> recs;
    for (int64_t m : {256, 512, 768, 1024, 1280}) recs.push_back(record_with(rng, h200(), sig(m, 512, 512), 1.0));
    {
      auto store = Store::open(path);
      ASSERT_TRUE(store);
      ASSERT_TRUE(store->upsert_all(recs));
    }
    raw_sql(path, "UPDATE records SET " + set + " WHERE m = 768");
    auto store = Store::open(path);
    ASSERT_TRUE(store) << store.status().to_string();
    std::vector<InvalidRow> skipped;
    auto all = store->list({}, &skipped);
    ASSERT_TRUE(all) << all.status().to_string();
    EXPECT_EQ(all->size(), 4u);
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_NE(skipped[0].key.find("768x512x512"), std::string::npos) << skipped[0].key;
    EXPECT_EQ(skipped[0].why.rfind(field + ":", 0), 0u) << skipped[0].why;
    // show: refused naming why, or read as far as it goes when asked.
    auto plain = store->get(skipped[0].id);
    ASSERT_FALSE(plain);
    EXPECT_NE(plain.status().message().find("prune --invalid"), std::string::npos) << plain.status().message();
    std::optional<InvalidRow> why;
    auto shown = store->get(skipped[0].id, &why);
    ASSERT_TRUE(shown && *shown);
    ASSERT_TRUE(why);
    EXPECT_EQ(why->why, skipped[0].why);
    // The other shapes are still found.
    auto found = store->lookup(request_for(h200(), sig(1024, 512, 512)));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->source, Hit::exact) << found->reason;
    // prune --invalid: a dry run lists it and deletes nothing; the real one removes only it.
    auto would = store->prune_invalid(/*dry_run=*/true);
    ASSERT_TRUE(would);
    ASSERT_EQ(would->size(), 1u);
    EXPECT_EQ((*would)[0].id, skipped[0].id);
    EXPECT_EQ(store->check()->size(), 1u);
    auto pruned = store->prune_invalid();
    ASSERT_TRUE(pruned) << pruned.status().to_string();
    EXPECT_EQ(pruned->size(), 1u);
    EXPECT_TRUE(store->check()->empty());
    EXPECT_EQ(store->list()->size(), 4u);
  }
}

TEST(DbDefense, PruneDryRunCountsAndDeletesNothing) {
  std::mt19937_64 rng(test_seed());
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->upsert(record_with(rng, h200(), sig(256, 256, 256), 1.0)));
  ASSERT_TRUE(store->upsert(record_with(rng, a100(), sig(256, 256, 256), 1.0)));
  PruneFilter f;
  f.device = h200().hash();
  f.dry_run = true;
  EXPECT_EQ(*store->prune(f), 1);
  EXPECT_EQ(store->list()->size(), 2u);
  f.dry_run = false;
  EXPECT_EQ(*store->prune(f), 1);
  EXPECT_EQ(store->list()->size(), 1u);
}

// Runs `body` in a child process that cannot write what root could (uid nobody when this runs as root), and
// returns its exit status: 0 when every check in it held. Messages go to stderr.
int as_unprivileged(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(DbDefense, ReadOnlyDbIsReadAndWritesAreRefusedClearly) {
  std::mt19937_64 rng(test_seed());
  for (const bool folder_read_only : {true, false}) {
    SCOPED_TRACE(folder_read_only ? "read-only file in a read-only folder" : "read-only file");
    ScratchDir dir;
    const std::string path = dir.file("tune.db");
    {
      auto store = Store::open(path);
      ASSERT_TRUE(store);
      ASSERT_TRUE(store->upsert(record_with(rng, h200(), sig(256, 256, 256), 1.0)));
    }
    // A clean close leaves no -wal or -shm file: what a shared, read-only copy looks like.
    ASSERT_FALSE(fs::exists(path + "-wal"));
    const std::string folder = fs::path(path).parent_path().string();
    ASSERT_EQ(chmod(path.c_str(), 0444), 0);
    ASSERT_EQ(chmod(folder.c_str(), folder_read_only ? 0555 : 0777), 0);
    const int status = as_unprivileged([&] {
      OpenOptions ro;
      ro.access = Access::read_only;
      auto reader = Store::open(path, ro);
      if (!reader) {
        std::fprintf(stderr, "read-only open failed: %s\n", reader.status().to_string().c_str());
        return 1;
      }
      auto all = reader->list();
      if (!all || all->size() != 1) {
        std::fprintf(stderr, "read-only list failed\n");
        return 2;
      }
      auto found = reader->lookup(request_for(h200(), sig(256, 256, 256)));
      if (!found || found->source != Hit::exact) {
        std::fprintf(stderr, "read-only lookup failed\n");
        return 3;
      }
      auto writer = Store::open(path);
      if (writer) {
        std::fprintf(stderr, "a read-write open of a read-only DB succeeded\n");
        return 4;
      }
      if (writer.status().message().find("is read-only") == std::string::npos) {
        std::fprintf(stderr, "unclear refusal: %s\n", writer.status().message().c_str());
        return 5;
      }
      return 0;
    });
    chmod(folder.c_str(), 0700);
    chmod(path.c_str(), 0644);
    EXPECT_EQ(status, 0) << "see stderr for the failed step";
  }
}

// ---- the command line -------------------------------------------------------------------------------------------

class DbDefenseCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tileforge::testing::fresh_test_dir("tileforge_db_defense_");
    db_ = (dir_ / "tune.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A CPU record this build judges valid everywhere: cpu-avx2 on an x86-64-v3 fingerprint (the compiled-in
  // generic-avx2 profile stands for it), with the family's own pick for the shape.
  Record cpu_record(int64_t m, double median_ms) {
    const plan::KernelFamily* family = plan::find_family("cpu-avx2");
    EXPECT_NE(family, nullptr);
    auto profile = hw::load_profile("generic-avx2");
    EXPECT_TRUE(profile);
    Record r;
    r.device = {"cpu", "Test CPU", "x86-64-v3", 2, 0, "", "GNU 12.2.0"};
    r.backend = "cpu";
    r.family_version = family->version();
    r.problem = sig(m, 64, 64, DType::f32, DType::f32);
    r.config = *family->candidates(problem_of(r.problem), *profile, 2).reference;
    set_time(r, {median_ms, median_ms, median_ms * 1.01, 30});
    r.rel_error = 1e-7;
    r.max_scaled_error = 1e-6;
    r.tool_version = "0.1.0";
    r.created_at = "2024-05-06T07:08:09Z";
    return r;
  }
  tileforge::testing::CliResult cli(std::vector<std::string> args) {
    args.push_back("--db");
    args.push_back(db_);
    return tileforge::testing::run_cli(args, dir_);
  }

  fs::path dir_;
  std::string db_;
};

TEST_F(DbDefenseCli, ImportRefusesIllegalConfigsUnknownBackendsAndKinds) {
  const std::string valid = export_json({cpu_record(64, 0.01)});
  const std::string file = (dir_ / "team.json").string();
  {
    write_file(file, valid);
    auto r = cli({"db", "import", file});
    ASSERT_EQ(r.exit_code, 0) << r.err;  // the untouched file is fine
    fs::remove(db_);
  }
  using J = nlohmann::json;
  struct Case {
    const char* what;
    std::function<void(J&)> edit;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"unknown backend", [](J& r) { r["backend"] = "tpu"; }, "records[0].backend:"},
      {"vendor library as backend", [](J& r) { r["backend"] = "openblas"; }, "records[0].backend:"},
      {"unknown kind", [](J& r) { r["device"]["kind"] = "fpga"; }, "records[0].device.kind:"},
      {"kind of another backend", [](J& r) { r["device"]["kind"] = "gpu"; }, "records[0].device.kind:"},
      {"unknown family", [](J& r) { r["config"]["family"] = "cpu-avx9000"; }, "records[0].config.family:"},
      {"family of another backend", [](J& r) { r["config"]["family"] = "sm80"; }, "records[0].config.family:"},
      {"illegal parameter value", [](J& r) { r["config"]["MR"] = 7777; }, "records[0].config:"},
      {"unknown parameter", [](J& r) { r["config"]["WARP_SPEED"] = 9; }, "records[0].config:"},
      {"missing parameter", [](J& r) { r["config"].erase("KC"); }, "records[0].config:"},
      {"median 1e-300",
       [](J& r) { r["time_ms"] = {{"median", 1e-300}, {"min", 1e-300}, {"max", 1e-300}, {"reps", 3}}; },
       "records[0].time_ms.median:"},
  };
  for (const Case& c : cases) {
    J j = J::parse(valid);
    c.edit(j["records"][0]);
    write_file(file, j.dump());
    auto r = cli({"db", "import", file});
    EXPECT_EQ(r.exit_code, 2) << c.what << " was imported: " << r.out << r.err;
    EXPECT_NE(r.err.find(c.field), std::string::npos) << c.what << ": " << r.err;
    EXPECT_FALSE(fs::exists(db_)) << c.what << ": a refused file must leave no DB behind";
  }
}

TEST_F(DbDefenseCli, ReadingVerbsSkipBadRowsCheckReportsThemPruneRemovesThem) {
  {
    auto store = Store::open(db_);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->upsert_all({cpu_record(64, 0.01), cpu_record(128, 0.02), cpu_record(192, 0.03)}));
  }
  raw_sql(db_, "UPDATE records SET median_ms = 0, min_ms = 0 WHERE m = 128");
  raw_sql(db_, "UPDATE records SET input = 'f99' WHERE m = 192");

  auto list = cli({"db", "list", "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out)["rows"].size(), 1u) << list.out;
  EXPECT_NE(list.err.find("skipped invalid record #2"), std::string::npos) << list.err;
  EXPECT_NE(list.err.find("time_ms.median"), std::string::npos) << list.err;
  EXPECT_NE(list.err.find("skipped invalid record #3"), std::string::npos) << list.err;
  EXPECT_NE(list.err.find("problem.input"), std::string::npos) << list.err;

  auto exported = cli({"db", "export"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto parsed = parse_export(exported.out, "export");
  ASSERT_TRUE(parsed) << parsed.status().to_string();
  EXPECT_EQ(parsed->size(), 1u);

  auto show = cli({"db", "show", "2"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("INVALID"), std::string::npos) << show.out;

  auto check = cli({"db", "check"});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.out.find("1 valid record, 2 invalid"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("record #2 (cpu cpu-avx2"), std::string::npos) << check.out;
  auto check_json = cli({"db", "check", "--format", "json"});
  EXPECT_EQ(check_json.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(check_json.out)["rows"].size(), 2u) << check_json.out;

  auto dry = cli({"db", "prune", "--invalid", "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("would prune 2 invalid records"), std::string::npos) << dry.out;
  EXPECT_EQ(cli({"db", "check"}).exit_code, 1) << "a dry run deleted something";

  auto both = cli({"db", "prune", "--invalid", "--stale-versions"});
  EXPECT_EQ(both.exit_code, 2) << both.err;

  auto prune = cli({"db", "prune", "--invalid"});
  ASSERT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_NE(prune.out.find("pruned 2 invalid records"), std::string::npos) << prune.out;
  auto clean = cli({"db", "check"});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_NE(clean.out.find("1 valid record, 0 invalid"), std::string::npos) << clean.out;
}

}  // namespace
}  // namespace tileforge::db
