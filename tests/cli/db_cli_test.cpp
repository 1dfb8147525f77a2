// The tuning DB from the command line: bench rows name the config's source (--db, TILEFORGE_DB, --no-db, a corrupted
// file), the db verbs list, show, export, import and prune, refusing bad input with the argument named, and plan
// reports the DB's record beside its choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dispatch/dispatch.hpp"
#include "db/exchange.hpp"
#include "db/store.hpp"
#include "support/cli_runner.hpp"
#include "support/test_support.hpp"

namespace tileforge {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::run_cli;
using testing::slurp;
using Result = testing::CliResult;

const Device& cpu_device() {
  static const Device device = [] {
    auto d = open_device("cpu");
    if (!d) throw std::runtime_error(d.status().to_string());
    return *d;
  }();
  return device;
}

Problem shape(int64_t m, int64_t n, int64_t k) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

class CliDb : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = testing::fresh_test_dir("tileforge_cli_db_");  // one folder per parameterized case too
    db_path = (dir / "tune.db").string();
    fp = dispatch::running_fingerprint(cpu_device());
    // A legal config that differs from the planner's pick, so that a row shows which one ran.
    dispatch::DispatchOptions off;
    off.db.disabled = true;
    Backend& cpu = *own_backend("cpu");
    auto planned = dispatch::choose_config(shape(24, 16, 40), cpu_device(), cpu, off);
    ASSERT_TRUE(planned) << planned.status().to_string();
    planned_config = planned->config;
    const ParamSpace space = cpu.space(shape(24, 16, 40), cpu_device());
    for (int64_t kc : {64, 128, 256, 32}) {
      Config c = planned_config;
      c.params["KC"] = kc;
      if (c != planned_config && space.check(c) && cpu.space(shape(20, 16, 48), cpu_device()).check(c)) {
        tuned_config = c;
        break;
      }
    }
    ASSERT_FALSE(tuned_config.family.empty());
  }
  void TearDown() override { fs::remove_all(dir); }

  // Two records of this CPU (tuned and planned configs) and an older one of another CPU, whose fingerprint it returns.
  db::Fingerprint put_three_records() {
    db::Fingerprint elsewhere = fp;
    elsewhere.name = "A Different CPU";
    put(db_path, record(fp, shape(24, 16, 40), tuned_config, 0.01));
    put(db_path, record(fp, shape(64, 64, 64), planned_config, 0.02));
    put(db_path, record(elsewhere, shape(24, 16, 40), planned_config, 0.03, "2020-01-01T00:00:00Z"));
    return elsewhere;
  }

  db::Record record(const db::Fingerprint& device, const Problem& p, const Config& config, double median_ms,
                    std::string created_at = "2024-05-06T07:08:09Z") {
    db::Record r;
    r.device = device;
    r.backend = "cpu";
    r.family_version = own_backend("cpu")->space(p, cpu_device()).version;
    r.problem = db::signature_of(p);
    r.config = config;
    r.time = {median_ms, median_ms, median_ms * 1.01, 30};
    r.tflops = p.flops() / (median_ms * 1e-3) / 1e12;
    r.rel_error = 1e-7;
    r.max_scaled_error = 1e-6;
    r.tool_version = "0.1.0";
    r.created_at = std::move(created_at);
    return r;
  }
  void put(const std::string& path, const db::Record& r) {
    auto store = db::Store::open(path);
    ASSERT_TRUE(store) << store.status().to_string();
    ASSERT_TRUE(store->upsert(r));
  }

  json bench_row(std::vector<std::string> extra, const std::map<std::string, std::optional<std::string>>& env = {},
                 std::string* err = nullptr) {
    std::vector<std::string> args = {"bench", "--device", "cpu", "--format", "json", "--min-reps", "1",
                                     "--min-time", "0", "--max-time", "0.01", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run_cli(args, dir, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (err) *err = r.err;
    if (r.exit_code != 0) return json::object();
    return json::parse(r.out)["rows"][0];
  }

  static Config config_of(const json& j) {
    Config c;
    for (const auto& [name, value] : j.items()) {
      if (name == "family") c.family = value.get<std::string>();
      else c.params[name] = value.get<int64_t>();
    }
    return c;
  }

  fs::path dir;
  std::string db_path;
  db::Fingerprint fp;
  Config planned_config, tuned_config;
};

TEST_F(CliDb, BenchRowsNameTheConfigSource) {
  put(db_path, record(fp, shape(24, 16, 40), tuned_config, 0.01));

  json row = bench_row({"--shape", "24x16x40", "--db", db_path});
  EXPECT_EQ(row["config_source"], "db-exact") << row["config_reason"];
  EXPECT_EQ(config_of(row["config"]), tuned_config);
  EXPECT_NE(row["config_reason"].get<std::string>().find("db-exact"), std::string::npos);

  row = bench_row({"--shape", "20x16x48", "--db", db_path});
  EXPECT_EQ(row["config_source"], "db-bucket") << row["config_reason"];
  EXPECT_EQ(config_of(row["config"]), tuned_config);

  // TILEFORGE_DB when --db is not given.
  row = bench_row({"--shape", "24x16x40"}, {{"TILEFORGE_DB", db_path}});
  EXPECT_EQ(row["config_source"], "db-exact") << row["config_reason"];

  // --no-db ignores it, wherever it comes from.
  row = bench_row({"--shape", "24x16x40", "--no-db"}, {{"TILEFORGE_DB", db_path}});
  EXPECT_EQ(row["config_source"], "planner") << row["config_reason"];
  // (Not compared with this process's planner pick: the cost model uses the CPU peak each process measures, and
  // near-ties may rank differently from one process to the next.)
  EXPECT_NE(row["config_reason"].get<std::string>().find("disabled"), std::string::npos) << row["config_reason"];

  // A pin on top of the record.
  row = bench_row({"--shape", "24x16x40", "--db", db_path, "--set", "KC=" + std::to_string(planned_config.at("KC"))});
  EXPECT_EQ(row["config_source"], "pinned") << row["config_reason"];
  EXPECT_EQ(config_of(row["config"]).at("KC"), planned_config.at("KC"));

  // verify names the source too.
  const Result v = run_cli({"verify", "--device", "cpu", "--shape", "24x16x40", "--layout", "RR", "--db", db_path,
                            "--format", "json", "--quiet"},
                           dir);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(json::parse(v.out)["rows"][0]["config_source"], "db-exact");
}

TEST_F(CliDb, AnotherMachineOfTheSameArchIsDbArchAndAnotherArchIsNeverUsed) {
  db::Fingerprint elsewhere = fp;
  elsewhere.name = "A Different CPU";
  elsewhere.cores += 3;
  db::Fingerprint foreign = fp;
  foreign.arch = "aarch64";
  Config fast_foreign = planned_config;
  fast_foreign.params["KC"] = tuned_config.at("KC") == 64 ? 128 : 64;
  put(db_path, record(foreign, shape(24, 16, 40), fast_foreign, 1e-6));
  json row = bench_row({"--shape", "24x16x40", "--db", db_path});
  EXPECT_EQ(row["config_source"], "planner") << row["config_reason"];
  put(db_path, record(elsewhere, shape(24, 16, 40), tuned_config, 0.5));
  row = bench_row({"--shape", "24x16x40", "--db", db_path});
  EXPECT_EQ(row["config_source"], "db-arch") << row["config_reason"];
  EXPECT_EQ(config_of(row["config"]), tuned_config);
}

TEST_F(CliDb, CorruptedDbWarnsAndPlans) {
  { std::ofstream(db_path) << std::string(4096, 'z'); }
  std::string err;
  const json row = bench_row({"--shape", "24x16x40", "--db", db_path}, {}, &err);
  EXPECT_EQ(row["config_source"], "planner");
  EXPECT_NE(err.find("tileforge: warning: tuning DB " + db_path + " is unreadable"), std::string::npos) << err;
  EXPECT_NE(err.find("--no-db"), std::string::npos) << err;
  // --no-db: no warning at all.
  bench_row({"--shape", "24x16x40", "--db", db_path}, {}, &err);
  bench_row({"--shape", "24x16x40", "--no-db"}, {{"TILEFORGE_DB", db_path}}, &err);
  EXPECT_EQ(err.find("warning: tuning DB"), std::string::npos) << err;
}

TEST_F(CliDb, ExportImportRoundTrip) {
  const db::Fingerprint elsewhere = put_three_records();

  Result r = run_cli({"db", "list", "--db", db_path}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 records on 2 devices"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fp.hash()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("24x16x40 f32->f32 acc f32 RR align 16"), std::string::npos) << r.out;

  r = run_cli({"db", "list", "--db", db_path, "--format", "json", "--device", fp.hash().substr(0, 6)}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json listed = json::parse(r.out);
  ASSERT_EQ(listed["rows"].size(), 2u);
  const int64_t id = listed["rows"][0]["id"].get<int64_t>();
  EXPECT_EQ(listed["rows"][0]["device_hash"], fp.hash());

  r = run_cli({"db", "show", std::to_string(id), "--db", db_path}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("record #" + std::to_string(id)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(current)"), std::string::npos) << r.out;
  r = run_cli({"db", "show", std::to_string(id), "--db", db_path, "--format", "json"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["rows"][0]["id"], id);

  // Export to a file, import into a new DB (TILEFORGE_DB this time), export again: the same records.
  const std::string exported = (dir / "team.json").string();
  r = run_cli({"db", "export", "--db", db_path, "--out", exported}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string second = (dir / "sub" / "second.db").string();
  r = run_cli({"db", "import", exported}, dir, {{"TILEFORGE_DB", second}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 new, 0 replaced, 0 kept"), std::string::npos) << r.out;
  r = run_cli({"db", "import", exported, "--db", second}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 new, 0 replaced, 3 kept"), std::string::npos) << r.out;
  r = run_cli({"db", "export", "--db", second}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto original = db::parse_export(slurp(exported), "team.json");
  auto again = db::parse_export(r.out, "second");
  ASSERT_TRUE(original) << original.status().to_string();
  ASSERT_TRUE(again) << again.status().to_string();
  ASSERT_EQ(original->size(), again->size());
  for (std::size_t i = 0; i < original->size(); ++i) {
    db::Record a = (*original)[i], b = (*again)[i];
    EXPECT_EQ(b.source, db::Source::imported);
    b.source = a.source;
    EXPECT_EQ(db::describe(a), db::describe(b));
  }

  // The imported DB dispatches like the original.
  const json row = bench_row({"--shape", "24x16x40", "--db", second});
  EXPECT_EQ(row["config_source"], "db-exact");

  // Triton: CPU families have no Triton equivalent, so every record is a skipped comment.
  r = run_cli({"db", "export", "--db", db_path, "--format", "triton", "--family", tuned_config.family}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("configs = ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped"), std::string::npos) << r.out;

  // Prune: one device by prefix, then what is older than a day (records of 2024), then nothing is left.
  r = run_cli({"db", "prune", "--db", second, "--device", elsewhere.hash().substr(0, 8)}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pruned 1 record "), std::string::npos) << r.out;
  r = run_cli({"db", "prune", "--db", second, "--stale-versions"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pruned 0 records"), std::string::npos) << r.out;
  r = run_cli({"db", "prune", "--db", second, "--older-than", "1d"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pruned 2 records"), std::string::npos) << r.out;
  r = run_cli({"db", "list", "--db", second, "--format", "json"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out)["rows"].empty());
}

// --dry-run names every record the criteria select, as db list shows them, and deletes none of them.
TEST_F(CliDb, PruneDryRunNamesWhatWouldGoAndDeletesNothing) {
  const db::Fingerprint elsewhere = put_three_records();
  auto ids = [&] {
    Result l = run_cli({"db", "list", "--db", db_path, "--format", "json"}, dir);
    EXPECT_EQ(l.exit_code, 0) << l.err;
    std::map<std::string, int64_t> by;  // created_at + shape -> id
    const json listed = json::parse(l.out);
    for (const auto& row : listed["rows"]) {
      by[row["created_at"].get<std::string>() + " " + row["device_hash"].get<std::string>().substr(0, 8) + " " +
         std::to_string(row["problem"]["m"].get<int64_t>())] = row["id"].get<int64_t>();
    }
    return by;
  };
  const auto before = ids();
  ASSERT_EQ(before.size(), 3u);
  const int64_t old_id = before.at("2020-01-01T00:00:00Z " + elsewhere.hash().substr(0, 8) + " 24");

  Result r = run_cli({"db", "prune", "--db", db_path, "--older-than", "2022-01-01T00:00:00Z", "--dry-run"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt::format("would prune #{} {} cpu", old_id, elsewhere.hash().substr(0, 8))), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("24x16x40 f32->f32 acc f32 RR align 16 created 2020-01-01T00:00:00Z"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("would prune 1 record from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing was deleted"), std::string::npos) << r.out;
  for (const auto& [what, id] : before) {
    if (id != old_id) {
      EXPECT_EQ(r.out.find(fmt::format("#{} ", id)), std::string::npos) << what << "\n" << r.out;
    }
  }

  // Every record selected: each named, still none deleted.
  r = run_cli({"db", "prune", "--db", db_path, "--older-than", "1d", "--dry-run"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [what, id] : before) {
    EXPECT_NE(r.out.find(fmt::format("would prune #{} ", id)), std::string::npos) << what << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("would prune 3 records from"), std::string::npos) << r.out;
  EXPECT_EQ(ids(), before);

  // The real prune then removes exactly what the dry run named.
  r = run_cli({"db", "prune", "--db", db_path, "--older-than", "2022-01-01T00:00:00Z"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pruned 1 record "), std::string::npos) << r.out;
  auto after = before;
  after.erase("2020-01-01T00:00:00Z " + elsewhere.hash().substr(0, 8) + " 24");
  EXPECT_EQ(ids(), after);
}

// import and prune take the shared --out, --format and --quiet: their reports as text, a table or the JSON envelope.
TEST_F(CliDb, ImportAndPruneReportAsTextTableOrJson) {
  put_three_records();
  const std::string exported = (dir / "team.json").string();
  Result r = run_cli({"db", "export", "--db", db_path, "--out", exported, "--quiet"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string second = (dir / "second.db").string();

  // --out x.json: JSON without --format; --quiet: nothing on stdout or stderr.
  const std::string report = (dir / "import.json").string();
  r = run_cli({"db", "import", exported, "--db", second, "--out", report, "--quiet"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  json doc = json::parse(slurp(report));
  EXPECT_EQ(doc["verb"], "db import");
  EXPECT_EQ(doc["environment"]["db"], second);
  ASSERT_EQ(doc["rows"].size(), 3u) << doc.dump();
  EXPECT_EQ(doc["rows"][0]["outcome"], "new");
  EXPECT_EQ(doc["rows"][0]["records"], 3);
  EXPECT_EQ(doc["rows"][2]["outcome"], "kept");
  EXPECT_EQ(doc["rows"][2]["records"], 0);
  EXPECT_FALSE(doc["rows"][2]["why"].get<std::string>().empty());
  // Again: every record kept, said in a table.
  r = run_cli({"db", "import", exported, "--db", second, "--format", "table"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("OUTCOME"), std::string::npos) << r.out;
  const std::size_t kept = r.out.find("\nkept ");
  ASSERT_NE(kept, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(kept, r.out.find('\n', kept + 1) - kept).find(" 3  "), std::string::npos) << r.out;

  // prune --dry-run as JSON: each record that would go, with TFLOP/s; nothing deleted.
  r = run_cli({"db", "prune", "--db", second, "--older-than", "1d", "--dry-run", "--format", "json"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  doc = json::parse(r.out);
  EXPECT_EQ(doc["verb"], "db prune");
  EXPECT_TRUE(doc["dry_run"].get<bool>());
  EXPECT_EQ(doc["would_remove"], 3);
  ASSERT_EQ(doc["rows"].size(), 3u);
  EXPECT_GT(doc["rows"][0]["tflops"].get<double>(), 0);
  EXPECT_EQ(r.out.find("gflop"), std::string::npos);
  // A table, then the real prune with its report in a file.
  r = run_cli({"db", "prune", "--db", second, "--older-than", "1d", "--dry-run", "--format", "table"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("would prune 3 records"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TFLOP/s"), std::string::npos) << r.out;
  const std::string pruned = (dir / "pruned.json").string();
  r = run_cli({"db", "prune", "--db", second, "--older-than", "1d", "--out", pruned}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("pruned 3 records"), std::string::npos) << r.err;  // without --quiet: one line on stderr
  doc = json::parse(slurp(pruned));
  EXPECT_FALSE(doc["dry_run"].get<bool>());
  EXPECT_EQ(doc["removed"], 3);
  EXPECT_EQ(doc["rows"].size(), 3u);
  r = run_cli({"db", "list", "--db", second, "--format", "json"}, dir);
  EXPECT_TRUE(json::parse(r.out)["rows"].empty());

  // An unwritable --out is refused before anything is deleted.
  r = run_cli({"db", "prune", "--db", db_path, "--older-than", "1d", "--out", (dir / "no" / "p.json").string()}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  r = run_cli({"db", "list", "--db", db_path, "--format", "json"}, dir);
  EXPECT_EQ(json::parse(r.out)["rows"].size(), 3u);
}

// plan --db: the DB's record for the problem beside the plan, read-only.
TEST_F(CliDb, PlanReportsTheTunedRecord) {
  put(db_path, record(fp, shape(24, 16, 40), tuned_config, 0.01));
  Result r = run_cli({"plan", "--device", "cpu", "--shape", "24x16x40", "--db", db_path}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tuning DB: db-exact record #"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(tuned_config.describe()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measured/predicted"), std::string::npos) << r.out;

  r = run_cli({"plan", "--device", "cpu", "--shape", "24x16x40", "--shape", "300x300x300", "--db", db_path,
               "--format", "json"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["environment"]["db"], db_path);
  const json& tuned = doc["rows"][0]["tuned"];
  ASSERT_TRUE(tuned["found"].get<bool>()) << tuned.dump();
  EXPECT_EQ(tuned["source"], "db-exact");
  EXPECT_EQ(config_of(tuned["config"]), tuned_config);
  EXPECT_DOUBLE_EQ(tuned["median_ms"].get<double>(), 0.01);
  EXPECT_GT(tuned["tflops"].get<double>(), 0);
  EXPECT_EQ(tuned["created_at"], "2024-05-06T07:08:09Z");
  const double predicted = tuned["predicted_ms"].get<double>();
  EXPECT_GT(predicted, 0);
  EXPECT_NEAR(tuned["measured_over_predicted"].get<double>(), 0.01 / predicted, 1e-9);
  const bool same = config_of(doc["rows"][0]["choice"]["config"]) == tuned_config;
  EXPECT_EQ(tuned["same_as_choice"].get<bool>(), same) << doc["rows"][0].dump();
  // Another bucket: no record, and why.
  EXPECT_FALSE(doc["rows"][1]["tuned"]["found"].get<bool>()) << doc["rows"][1]["tuned"].dump();
  EXPECT_FALSE(doc["rows"][1]["tuned"]["reason"].get<std::string>().empty());

  // --no-db: no report.
  r = run_cli({"plan", "--device", "cpu", "--shape", "24x16x40", "--no-db"}, dir, {{"TILEFORGE_DB", db_path}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("tuning DB"), std::string::npos) << r.out;
}

TEST_F(CliDb, PlanNeverCreatesADb) {
  const std::string missing = (dir / "nowhere" / "tune.db").string();
  // Named with --db: an error naming the path.
  Result r = run_cli({"plan", "--device", "cpu", "--shape", "64x64x64", "--db", missing}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--db " + missing + ": no such file"), std::string::npos) << r.err;
  // Only the default: the plan without a DB report.
  r = run_cli({"plan", "--device", "cpu", "--shape", "64x64x64"}, dir, {{"TILEFORGE_DB", missing}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find("tuning DB"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
}

TEST_F(CliDb, MissingDbIsSaidAndNeverCreated) {
  const std::string missing = (dir / "nowhere" / "tune.db").string();
  Result r = run_cli({"db", "list"}, dir, {{"TILEFORGE_DB", missing}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no tuning DB at " + missing + " yet"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(no records)"), std::string::npos) << r.out;
  r = run_cli({"db", "list", "--db", missing, "--format", "json"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(json::parse(r.out)["environment"]["exists"].get<bool>());
  r = run_cli({"db", "show", "1", "--db", missing}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no tuning DB at " + missing + " yet"), std::string::npos) << r.err;
  r = run_cli({"db", "export", "--db", missing}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no tuning DB at " + missing + " yet"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  r = run_cli({"db", "prune", "--older-than", "30d", "--db", missing}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nothing to prune"), std::string::npos) << r.out;
  // Bench with the missing DB plans and does not create it.
  const json row = bench_row({"--shape", "8x8x8", "--db", missing});
  EXPECT_EQ(row["config_source"], "planner");
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(fs::exists(dir / "nowhere"));
}

struct BadDbInput {
  std::string label;
  std::vector<std::string> args;      // after "tileforge"; DB is replaced by the fixture's DB path
  std::vector<std::string> mentions;  // each must appear in stderr
  int exit_code = 2;
};

void PrintTo(const BadDbInput& b, std::ostream* os) { *os << b.label; }

class CliDbBadInput : public CliDb, public ::testing::WithParamInterface<BadDbInput> {};

TEST_P(CliDbBadInput, RefusedNamingTheArgument) {
  put(db_path, record(fp, shape(24, 16, 40), tuned_config, 0.01));
  { std::ofstream(dir / "bad.json") << R"({"format": "tileforge-tuning-db", "format_version": 1, "records": [})"; }
  {
    // A well-formed export with one bad value.
    auto store = db::Store::open(db_path);
    ASSERT_TRUE(store);
    auto all = store->list();
    ASSERT_TRUE(all);
    json doc = json::parse(db::export_json(*all));
    doc["records"][0]["time_ms"]["median"] = -1;
    std::ofstream(dir / "negative.json") << doc.dump();
  }
  const std::string before = slurp(db_path);
  const BadDbInput& b = GetParam();
  std::vector<std::string> args;
  for (const std::string& a : b.args) {
    if (a == "DB") args.push_back(db_path);
    else if (a.starts_with("DIR/")) args.push_back((dir / a.substr(4)).string());
    else args.push_back(a);
  }
  const Result r = run_cli(args, dir);
  EXPECT_EQ(r.exit_code, b.exit_code) << b.label << "\nstderr: " << r.err << "\nstdout: " << r.out;
  EXPECT_EQ(r.out, "") << b.label;
  for (const auto& m : b.mentions) EXPECT_NE(r.err.find(m), std::string::npos) << b.label << ": '" << m << "' not in: " << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.json")) << b.label << ": output left behind";
  auto store = db::Store::open(db_path);
  ASSERT_TRUE(store);
  EXPECT_EQ(store->list()->size(), 1u) << b.label << ": the DB changed";
  EXPECT_FALSE(fs::exists(dir / "created.db")) << b.label << ": a DB was created";
}

std::vector<BadDbInput> bad_db_inputs() {
  return {
      {"no subcommand", {"db"}, {"db"}},
      {"unknown subcommand", {"db", "frobnicate"}, {"frobnicate"}},
      {"show without an id", {"db", "show", "--db", "DB"}, {"ID"}},
      {"show a non-number", {"db", "show", "abc", "--db", "DB"}, {"ID", "abc", "allowed"}},
      {"show id 0", {"db", "show", "0", "--db", "DB"}, {"ID", "allowed"}},
      {"show a missing id", {"db", "show", "999", "--db", "DB"}, {"ID 999", "db list"}},
      {"show unknown format", {"db", "show", "1", "--format", "xml", "--db", "DB"}, {"--format", "xml", "text, json"}},
      {"list device not hex", {"db", "list", "--device", "xyz", "--db", "DB"}, {"--device", "xyz", "hex"}},
      {"list device too long", {"db", "list", "--device", "0123456789abcdef0", "--db", "DB"}, {"--device"}},
      {"list unknown backend", {"db", "list", "--backend", "tpu", "--db", "DB"}, {"--backend", "tpu", "cpu"}},
      {"list unknown family", {"db", "list", "--family", "sm81", "--db", "DB"}, {"--family", "sm81", "sm80"}},
      {"list unknown format", {"db", "list", "--format", "xml", "--db", "DB"}, {"--format", "xml", "table, json"}},
      {"list empty --db", {"db", "list", "--db", ""}, {"--db"}},
      {"list a directory", {"db", "list", "--db", "DIR/"}, {"is a directory"}},
      {"export unknown format", {"db", "export", "--format", "csv", "--db", "DB", "--out", "DIR/out.json"},
       {"--format", "csv", "json, triton"}},
      {"export to an unwritable folder", {"db", "export", "--db", "DB", "--out", "/nonexistent/folder/x.json"},
       {"--out"}},
      {"import without a file", {"db", "import", "--db", "DB"}, {"FILE"}},
      {"import a missing file", {"db", "import", "DIR/missing.json", "--db", "DB"}, {"missing.json"}},
      {"import malformed JSON", {"db", "import", "DIR/bad.json", "--db", "DB"}, {"bad.json"}},
      {"import a bad value", {"db", "import", "DIR/negative.json", "--db", "DB"},
       {"negative.json", "records[0].time_ms.median"}},
      {"import a bad file creates no DB", {"db", "import", "DIR/negative.json", "--db", "DIR/created.db"},
       {"records[0]"}},
      {"prune without criteria", {"db", "prune", "--db", "DB"}, {"--older-than", "--device", "--stale-versions"}},
      {"prune a bad time", {"db", "prune", "--older-than", "yesterday", "--db", "DB"}, {"--older-than", "yesterday"}},
      {"prune an unknown device", {"db", "prune", "--device", "ffffffff", "--db", "DB"}, {"--device", "matches no"}},
      {"--no-db is not a db option", {"db", "list", "--no-db", "--db", "DB"}, {"--no-db"}},
      {"bench --db with --no-db", {"bench", "--shape", "8x8x8", "--db", "DB", "--no-db"}, {"--no-db"}},
      {"bench empty --db", {"bench", "--shape", "8x8x8", "--db", ""}, {"--db"}},
      {"verify empty --db", {"verify", "--shape", "8x8x8", "--db", ""}, {"--db"}},
  };
}

INSTANTIATE_TEST_SUITE_P(Each, CliDbBadInput, ::testing::ValuesIn(bad_db_inputs()), [](const auto& info) {
  std::string name;
  for (char c : info.param.label) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
});

}  // namespace
}  // namespace tileforge
