// Tuning DB store: schema creation and migration (v1 files upgraded to v2), refused files (newer, foreign,
// corrupted), best-median upsert, quartiles and host load stored and read back, list, show and prune.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "db/db_fixtures.hpp"
#include "db/sqlite.hpp"
#include "db/store.hpp"

namespace tileforge::db {
namespace {

using namespace dbtest;

// PRAGMA user_version lives in the file header at byte 60, big-endian (SQLite's file format).
void set_user_version(const std::string& path, uint32_t v) {
  std::string bytes = read_file(path);
  ASSERT_GE(bytes.size(), 100u);
  for (int i = 0; i < 4; ++i) bytes[60 + i] = char((v >> (24 - 8 * i)) & 0xff);
  write_file(path, bytes);
}

bool python_has_sqlite() {
  return access("/usr/bin/python3", X_OK) == 0 && std::system("/usr/bin/python3 -c 'import sqlite3' 2>/dev/null") == 0;
}

TEST(DbSchema, CreatesFileAndParentDirectoriesAtCurrentVersion) {
  ScratchDir dir;
  const std::string path = dir.file("a/b/c/tune.db");
  auto store = Store::open(path);
  ASSERT_TRUE(store) << store.status().to_string();
  EXPECT_EQ(store->version(), schema_version());
  EXPECT_EQ(schema_version(), migrations().back().to_version);
  EXPECT_EQ(store->path(), path);
  EXPECT_TRUE(std::filesystem::exists(path));
  auto all = store->list();
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->empty());
}

TEST(DbSchema, MigrationsAreConsecutiveFromOne) {
  int expect = 1;
  for (const Migration& m : migrations()) {
    EXPECT_EQ(m.to_version, expect++) << m.what;
    EXPECT_TRUE(bool(m.apply));
  }
}

TEST(DbSchema, EmptyFileIsMigratedFromVersionZero) {
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  write_file(path, "");
  auto store = Store::open(path);
  ASSERT_TRUE(store) << store.status().to_string();
  EXPECT_EQ(store->version(), schema_version());
}

// A step after the last real one that adds a table and a column, appended the way the next real version will be.
std::vector<Migration> with_next(std::string sql) {
  std::vector<Migration> steps = migrations();
  steps.push_back({schema_version() + 1, "test: notes", [sql](const SqlExec& exec) { return exec(sql); }});
  return steps;
}

TEST(DbSchema, OlderFileIsMigratedAndKeepsItsRecords) {
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  std::mt19937_64 rng(test_seed());
  const Record r = random_record(rng, h200(), sig(4096, 4096, 4096));
  {
    auto v1 = Store::open(path);
    ASSERT_TRUE(v1);
    ASSERT_TRUE(v1->upsert(r));
  }
  const auto steps = with_next("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);"
                             "ALTER TABLE records ADD COLUMN note TEXT;");
  OpenOptions o;
  o.migrations = &steps;
  {
    auto v2 = Store::open(path, o);
    ASSERT_TRUE(v2) << v2.status().to_string();
    EXPECT_EQ(v2->version(), schema_version() + 1);
    auto all = v2->list();
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 1u);
    expect_same(without_id((*all)[0]), r);
  }
  {
    // Opening again runs nothing twice (the ALTER TABLE would fail on a second run).
    auto again = Store::open(path, o);
    ASSERT_TRUE(again) << again.status().to_string();
  }
  // This build now sees a newer file and refuses it, naming both versions and what to do.
  auto old_build = Store::open(path);
  ASSERT_FALSE(old_build);
  const std::string msg = old_build.status().message();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("v" + std::to_string(schema_version() + 1)), std::string::npos) << msg;
  EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--no-db"), std::string::npos) << msg;
}

TEST(DbSchema, FailedMigrationLeavesTheFileAtItsVersion) {
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  ASSERT_TRUE(Store::open(path));
  const auto steps = with_next("CREATE TABLE notes (id INTEGER PRIMARY KEY); THIS IS NOT SQL;");
  OpenOptions o;
  o.migrations = &steps;
  auto bad = Store::open(path, o);
  ASSERT_FALSE(bad);
  const std::string step = fmt::format("migration to schema v{}", schema_version() + 1);
  EXPECT_NE(bad.status().message().find(step), std::string::npos) << bad.status().message();
  auto good = Store::open(path);
  ASSERT_TRUE(good) << good.status().to_string();
  EXPECT_EQ(good->version(), schema_version());
  // The half-applied step was rolled back: the test's step can still be applied later.
  const auto fixed = with_next("CREATE TABLE notes (id INTEGER PRIMARY KEY);");
  o.migrations = &fixed;
  EXPECT_TRUE(Store::open(path, o));
}

// Writes a record as a v1 build did: the v1 columns only.
void insert_as_v1(sqlite3* db, const Record& r) {
  sql::Stmt d(db, "INSERT OR IGNORE INTO devices (hash, key, kind, name, arch, cores, clock_mhz, driver, toolkit) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  d.bind_text(1, r.device.hash()).bind_text(2, r.device.key()).bind_text(3, r.device.kind);
  d.bind_text(4, r.device.name).bind_text(5, r.device.arch).bind_int(6, r.device.cores);
  d.bind_int(7, r.device.clock_mhz).bind_text(8, r.device.driver).bind_text(9, r.device.toolkit);
  d.run();
  const Signature& p = r.problem;
  const Signature b = p.bucket();
  sql::Stmt s(db, "INSERT INTO records (device, backend, family, family_version, m, n, k, batch, input, output, "
                  "accum, layout, align, bucket_m, bucket_n, bucket_k, bucket_batch, config, median_ms, min_ms, "
                  "max_ms, reps, tflops, rel_error, max_scaled_error, tool_version, created_at, source) VALUES "
                  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
                  "?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)");
  s.bind_text(1, r.device.hash()).bind_text(2, r.backend).bind_text(3, r.family()).bind_int(4, r.family_version);
  s.bind_int(5, p.m).bind_int(6, p.n).bind_int(7, p.k).bind_int(8, p.batch);
  s.bind_text(9, to_string(p.input)).bind_text(10, to_string(p.output)).bind_text(11, to_string(p.accum));
  s.bind_text(12, to_string(p.layout)).bind_int(13, p.align);
  s.bind_int(14, b.m).bind_int(15, b.n).bind_int(16, b.k).bind_int(17, b.batch);
  s.bind_text(18, config_to_json(r.config)).bind_double(19, r.time.median_ms).bind_double(20, r.time.min_ms);
  s.bind_double(21, r.time.max_ms).bind_int(22, r.time.reps).bind_double(23, r.tflops);
  s.bind_double(24, r.rel_error).bind_double(25, r.max_scaled_error).bind_text(26, r.tool_version);
  s.bind_text(27, r.created_at).bind_text(28, to_string(r.source));
  s.run();
}

// The records that match `r`'s key in `all` (device, backend, family, version, signature): one, or a failure.
const Record* find_key(const std::vector<Record>& all, const Record& r) {
  const Record* found = nullptr;
  for (const Record& x : all) {
    if (x.device == r.device && x.backend == r.backend && x.family() == r.family() &&
        x.family_version == r.family_version && x.problem == r.problem) {
      EXPECT_EQ(found, nullptr) << "two records of one key: " << r.problem.key();
      found = &x;
    }
  }
  EXPECT_NE(found, nullptr) << "no record of " << r.problem.key();
  return found;
}

TEST(DbSchema, V1FileIsUpgradedInPlaceAndItsRowsReadAsUnknownAndClean) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  // A file as a v1 build left it: the v1 schema, and rows written with the v1 columns.
  const std::vector<Migration> v1_only = {migrations().front()};
  ASSERT_EQ(v1_only[0].to_version, 1);
  {
    OpenOptions o;
    o.migrations = &v1_only;
    auto v1 = Store::open(path, o);
    ASSERT_TRUE(v1) << v1.status().to_string();
    ASSERT_EQ(v1->version(), 1);
  }
  const Fingerprint devs[] = {h200(), a100(), epyc()};
  std::vector<Record> old;
  for (int i = 0; i < 12; ++i) {
    const Fingerprint& f = devs[i % 3];
    const DType t = f.kind == "cpu" ? DType::f32 : DType::f16;
    old.push_back(random_record(rng, f, sig(16 * (1 + i) + int64_t(rng() % 16), 256, 128, t, t),
                                f.kind == "cpu" ? "cpu-avx2" : "sm80"));
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    try {
      for (const Record& r : old) insert_as_v1(db, r);
    } catch (const sql::Error& e) {
      ADD_FAILURE() << e.message;
    }
    sqlite3_close(db);
  }
  // Dispatch (read-only) never migrates, but reads the v1 file as it is: every row, the new fields unknown.
  OpenOptions ro;
  ro.access = Access::read_only;
  {
    auto as_is = Store::open(path, ro);
    ASSERT_TRUE(as_is) << as_is.status().to_string();
    EXPECT_EQ(as_is->version(), 1);
    auto rows = as_is->list();
    ASSERT_TRUE(rows) << rows.status().to_string();
    ASSERT_EQ(rows->size(), old.size());
    for (const Record& r : *rows) {
      EXPECT_FALSE(r.time.q1_ms.has_value());
      EXPECT_FALSE(r.time.others_cores.has_value());
      EXPECT_TRUE(r.time.quality().clean());
    }
  }

  auto store = Store::open(path);
  ASSERT_TRUE(store) << store.status().to_string();
  EXPECT_EQ(store->version(), schema_version());
  EXPECT_GE(schema_version(), 2);
  {
    // The v2 columns: REAL and nullable.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    std::map<std::string, std::pair<std::string, int64_t>> columns;
    {
      sql::Stmt info(db, "PRAGMA table_info(records)");
      while (info.step()) columns[info.text(1)] = {info.text(2), info.i64(3)};
    }
    sqlite3_close(db);
    for (const char* name : {"q1_ms", "q3_ms", "others_cores", "spare_cores"}) {
      ASSERT_TRUE(columns.count(name)) << name;
      EXPECT_EQ(columns[name].first, "REAL") << name;
      EXPECT_EQ(columns[name].second, 0) << name << " must be nullable";
    }
    // v4: the determinism in the key, every earlier row deterministic (expect_same below compares it).
    ASSERT_TRUE(columns.count("deterministic"));
    EXPECT_EQ(columns["deterministic"].first, "INTEGER");
    EXPECT_EQ(columns["deterministic"].second, 1) << "NOT NULL";
  }
  auto all = store->list();
  ASSERT_TRUE(all) << all.status().to_string();
  ASSERT_EQ(all->size(), old.size());
  for (const Record& r : old) {
    const Record* back = find_key(*all, r);
    ASSERT_NE(back, nullptr);
    expect_same(without_id(*back), r);  // the new fields unknown, every old value kept
    EXPECT_FALSE(back->time.iqr_share());
    EXPECT_TRUE(back->time.quality().clean()) << back->time.quality().why;
    EXPECT_TRUE(back->time.quality().why.empty());
  }
  // Now dispatch reads it, and new results go in beside the old rows with their quartiles and host load.
  ASSERT_TRUE(Store::open(path, ro));
  Record faster = old[std::size_t(rng() % old.size())];
  set_time(faster, {faster.time.median_ms / 2, faster.time.min_ms / 2, faster.time.max_ms / 2, faster.time.reps});
  add_quartiles(rng, faster);
  // Measured cleanly (a noisy result never replaces a clean row, and the legacy rows count as clean).
  faster.time.q1_ms = std::max(faster.time.min_ms, 0.98 * faster.time.median_ms);
  faster.time.q3_ms = std::min(faster.time.max_ms, 1.02 * faster.time.median_ms);
  faster.time.others_cores = 0.5 * *faster.time.spare_cores;
  ASSERT_TRUE(faster.time.quality().clean()) << faster.time.quality().why;
  EXPECT_EQ(*store->upsert(faster), Upsert::replaced);
  all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), old.size());
  const Record* back = find_key(*all, faster);
  ASSERT_NE(back, nullptr);
  expect_same(without_id(*back), faster);
}

TEST(DbSchema, NewerVersionInHeaderIsRefused) {
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  ASSERT_TRUE(Store::open(path));  // closed at once: WAL checkpointed into the main file
  set_user_version(path, 99);
  for (Access a : {Access::read_write, Access::read_only}) {
    OpenOptions o;
    o.access = a;
    auto s = Store::open(path, o);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status().code(), Code::unsupported);
    EXPECT_NE(s.status().message().find("schema v99"), std::string::npos) << s.status().message();
  }
}

TEST(DbSchema, ReadOnlyNeverCreatesOrMigrates) {
  ScratchDir dir;
  const std::string path = dir.file("sub/tune.db");
  OpenOptions ro;
  ro.access = Access::read_only;
  auto missing = Store::open(path, ro);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), Code::not_available);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(dir.file("sub")));

  ASSERT_TRUE(Store::open(path));
  auto opened = Store::open(path, ro);
  ASSERT_TRUE(opened) << opened.status().to_string();
  std::mt19937_64 rng(test_seed());
  EXPECT_FALSE(opened->upsert(random_record(rng, h200(), sig(64, 64, 64))));
}

TEST(DbSchema, AnotherApplicationsDatabaseIsRefused) {
  if (!python_has_sqlite()) GTEST_SKIP() << "needs /usr/bin/python3 with sqlite3 to write a foreign database";
  ScratchDir dir;
  const std::string path = dir.file("other.db");
  const std::string cmd = "/usr/bin/python3 -c \"import sqlite3; c = sqlite3.connect('" + path +
                          "'); c.execute('CREATE TABLE t (x)'); c.execute('INSERT INTO t VALUES (1)'); c.commit()\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string before = read_file(path);
  auto s = Store::open(path);
  ASSERT_FALSE(s);
  EXPECT_NE(s.status().message().find("another application"), std::string::npos) << s.status().message();
  EXPECT_TRUE(read_file(path) == before) << "the foreign file was modified";
}

TEST(DbCorruption, GarbageFileIsRefusedAndLeftAlone) {
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  std::mt19937_64 rng(test_seed());
  std::string garbage(8192, '\0');
  for (char& c : garbage) c = char(rng());
  write_file(path, garbage);
  for (Access a : {Access::read_write, Access::read_only}) {
    OpenOptions o;
    o.access = a;
    auto s = Store::open(path, o);
    ASSERT_FALSE(s);
    const std::string msg = s.status().message();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("move it away or pass --no-db"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not a SQLite database"), std::string::npos) << msg;
  }
  EXPECT_TRUE(read_file(path) == garbage) << "the refused file was modified";

  // A short text file too.
  write_file(path, "this is a text file, not a tuning DB\n");
  auto t = Store::open(path);
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("--no-db"), std::string::npos);
}

TEST(DbCorruption, TruncatedDatabaseIsRefused) {
  ScratchDir dir;
  const std::string path = dir.file("tune.db");
  std::mt19937_64 rng(test_seed());
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store);
    std::vector<Record> many;
    for (int i = 0; i < 400; ++i) many.push_back(random_record(rng, h200(), sig(64 + i, 64, 64 + 3 * i)));
    ASSERT_TRUE(store->upsert_all(many));
  }
  const std::string full = read_file(path);
  ASSERT_GT(full.size(), 16u * 4096) << "too small to truncate meaningfully";
  write_file(path, full.substr(0, full.size() / 2));
  auto s = Store::open(path);
  ASSERT_FALSE(s) << "a half-truncated DB was accepted";
  const std::string msg = s.status().message();
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("move it away or pass --no-db"), std::string::npos) << msg;

  // Dispatch then plans, and says why.
  DispatchDb db = open_for_dispatch(path);
  EXPECT_FALSE(db.store);
  LookupRequest req{h200(), "cuda", problem_of(sig(64, 64, 64)), {{"sm80", 1}}, nullptr};
  LookupResult r = lookup_or_plan(db, req);
  EXPECT_EQ(r.source, Hit::planner);
  EXPECT_EQ(r.config_source(), "planner");
  EXPECT_FALSE(r.record);
  EXPECT_NE(r.reason.find(path), std::string::npos) << r.reason;
}

TEST(DbCorruption, DirectoryInsteadOfFileIsRefused) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.file("tune.db"));
  auto s = Store::open(dir.file("tune.db"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.status().message().find("is a directory"), std::string::npos);
}

TEST(DbUpsert, KeepsTheBestMedianPerKey) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  const Signature s = sig(4096, 4096, 4096);
  double best = 1e300;
  Record best_record;
  for (int i = 0; i < 40; ++i) {
    Record r = random_record(rng, h200(), s);
    auto u = store->upsert(r);
    ASSERT_TRUE(u) << u.status().to_string();
    const Upsert expect = i == 0 ? Upsert::inserted : (r.time.median_ms < best ? Upsert::replaced : Upsert::kept);
    EXPECT_EQ(*u, expect) << i;
    if (r.time.median_ms < best) {
      best = r.time.median_ms;
      best_record = r;
    }
  }
  auto all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  expect_same(without_id((*all)[0]), best_record);

  // An equal median keeps the stored record; force replaces even a slower one.
  Record same = random_record(rng, h200(), s);
  set_time(same, best_record.time);
  EXPECT_EQ(*store->upsert(same), Upsert::kept);
  Record slower = random_record(rng, h200(), s);
  set_time(slower, {best * 3, best * 2, best * 4, 50});
  EXPECT_EQ(*store->upsert(slower, /*force=*/true), Upsert::replaced);
  expect_same(without_id((*store->list())[0]), slower);
}

TEST(DbUpsert, ACleanResultReplacesANoisyRowAndANoisyOneNeverReplacesACleanRow) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  const Signature s = sig(2048, 1024, 512);
  const double unit = std::uniform_real_distribution<double>(0.1, 10.0)(rng);
  // Quartiles 6% apart (clean) or 50% apart (noisy: over the 0.30 limit).
  auto make = [&](double median, bool clean) {
    Record r = random_record(rng, h200(), s);
    set_time(r, {median * unit, 0.8 * median * unit, 1.6 * median * unit, 50});
    r.time.q1_ms = (clean ? 0.97 : 0.8) * median * unit;
    r.time.q3_ms = (clean ? 1.03 : 1.3) * median * unit;
    EXPECT_EQ(r.time.quality().clean(), clean);
    return r;
  };
  EXPECT_EQ(*store->upsert(make(1.0, false)), Upsert::inserted);
  EXPECT_EQ(*store->upsert(make(2.0, true)), Upsert::replaced);  // slower, but measured cleanly
  EXPECT_EQ(*store->upsert(make(0.5, false)), Upsert::kept);     // faster, but disturbed
  const Record best = make(1.5, true);
  EXPECT_EQ(*store->upsert(best), Upsert::replaced);             // clean and faster
  EXPECT_EQ(*store->upsert(make(1.8, true)), Upsert::kept);      // clean and slower
  auto all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  expect_same(without_id((*all)[0]), best);
}

TEST(DbUpsert, EveryKeyPartSeparatesRecords) {
  std::mt19937_64 rng(test_seed());
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  const Record base = random_record(rng, h200(), sig(1024, 1024, 1024));
  std::vector<Record> variants(9, base);
  variants[1].device = h200("560.28.03");
  variants[2].backend = "cuda-other";
  variants[3].config.family = "sm90";
  variants[4].family_version = 2;
  variants[5].problem.m = 1000;
  variants[6].problem.layout = Layout::RC;
  variants[7].problem.align = 8;
  variants[8].problem.batch = 2;
  for (Record& v : variants) set_time(v, v.time);  // the TFLOP/s of the changed shapes
  for (const Record& v : variants) EXPECT_EQ(*store->upsert(v), Upsert::inserted) << v.problem.key();
  EXPECT_EQ(store->list()->size(), variants.size());
  // The same nine again, slower: all kept.
  for (Record v : variants) {
    set_time(v, {v.time.median_ms * 2, v.time.min_ms, v.time.max_ms * 2, v.time.reps});
    EXPECT_EQ(*store->upsert(v), Upsert::kept);
  }
}

TEST(DbUpsert, InvalidRecordIsRefusedWithTheFieldNamed) {
  std::mt19937_64 rng(test_seed());
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  Record r = random_record(rng, h200(), sig(64, 64, 64));
  r.time.min_ms = r.time.median_ms * 2;
  auto u = store->upsert(r);
  ASSERT_FALSE(u);
  EXPECT_NE(u.status().message().find("time_ms"), std::string::npos) << u.status().message();
  r = random_record(rng, h200(), sig(64, 64, 64, DType::f32, DType::f32));
  r.problem.align = 2;  // impossible with 4-byte elements
  u = store->upsert(r);
  ASSERT_FALSE(u);
  EXPECT_NE(u.status().message().find("problem.align"), std::string::npos) << u.status().message();
  // upsert_all is all or nothing.
  std::vector<Record> batch = {random_record(rng, h200(), sig(64, 64, 64)), r};
  EXPECT_FALSE(store->upsert_all(batch));
  EXPECT_TRUE(store->list()->empty());
}

// Quartiles and host load, each known or not, go in and come back exactly through upsert, list and get; a
// replacing record replaces them too, unknown ones included.
TEST(DbUpsert, QuartilesAndHostLoadAreStoredAndReadBack) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  const Fingerprint devs[] = {h200(), h200("560.28.03"), a100()};
  std::vector<Record> recs;
  int noisy = 0, busy = 0;
  for (int i = 0; i < 48; ++i) {
    Record r = random_record(rng, devs[i % 3], sig(32 + 16 * i, 128 + 8 * (i % 5), 64));
    r.time.max_ms = r.time.median_ms * (1.05 + u(rng));  // wide enough for some quartiles to spread past the limit
    switch (i % 4) {
      case 0: break;  // nothing known, as a v1 row
      case 1: add_quartiles(rng, r, /*host=*/false); break;
      case 2: add_quartiles(rng, r); break;
      case 3:
        r.time.others_cores = 4 * u(rng);
        if (u(rng) < 0.5) r.time.spare_cores = double(rng() % 8);
        break;
    }
    noisy += r.time.quality().noisy;
    busy += r.time.quality().busy;
    recs.push_back(r);
  }
  ASSERT_TRUE(store->upsert_all(recs));
  auto all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), recs.size());
  for (const Record& r : recs) {
    const Record* back = find_key(*all, r);
    ASSERT_NE(back, nullptr);
    expect_same(without_id(*back), r);
    const Quality want = r.time.quality(), got = back->time.quality();
    EXPECT_EQ(got.noisy, want.noisy);
    EXPECT_EQ(got.busy, want.busy);
    EXPECT_EQ(got.why, want.why);
    auto shown = store->get(back->id);
    ASSERT_TRUE(shown && *shown);
    expect_same(without_id(**shown), r);
  }
  // The random values covered both verdicts (a failure here is the test's, not the store's).
  EXPECT_GT(noisy, 0);
  EXPECT_GT(busy, 0);
  EXPECT_LT(noisy + busy, int(recs.size()));

  // A faster result without them replaces a record with them: the old quartiles described another run.
  Record full = recs[2];
  ASSERT_TRUE(full.time.q1_ms && full.time.others_cores);
  Record bare = full;
  set_time(bare, {full.time.median_ms / 2, full.time.min_ms / 2, full.time.max_ms / 2, full.time.reps});
  ASSERT_FALSE(bare.time.q1_ms);
  EXPECT_EQ(*store->upsert(bare), Upsert::replaced);
  auto after = store->list();
  ASSERT_TRUE(after);
  const Record* back = find_key(*after, bare);
  ASSERT_NE(back, nullptr);
  expect_same(without_id(*back), bare);
  // And forced back: they return.
  EXPECT_EQ(*store->upsert(full, /*force=*/true), Upsert::replaced);
  auto again = store->list();
  ASSERT_TRUE(again);
  back = find_key(*again, full);
  ASSERT_NE(back, nullptr);
  expect_same(without_id(*back), full);
}

TEST(DbList, FiltersAndShow) {
  std::mt19937_64 rng(test_seed());
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  std::vector<Record> rs = {random_record(rng, h200(), sig(512, 512, 512)),
                            random_record(rng, h200(), sig(1024, 1024, 1024), "sm90"),
                            random_record(rng, a100(), sig(512, 512, 512)),
                            random_record(rng, epyc(), sig(512, 512, 512, DType::f32, DType::f32), "cpu-avx2")};
  ASSERT_TRUE(store->upsert_all(rs));
  EXPECT_EQ(store->list()->size(), 4u);
  EXPECT_EQ(store->list({h200().hash(), "", "", ""})->size(), 2u);
  EXPECT_EQ(store->list({h200().hash().substr(0, 6), "", "", ""})->size(), 2u);
  EXPECT_EQ(store->list({"", "cpu", "", ""})->size(), 1u);
  EXPECT_EQ(store->list({"", "", "sm80", ""})->size(), 2u);
  EXPECT_EQ(store->list({"", "", "", "sm_80"})->size(), 1u);
  EXPECT_EQ(store->list({"", "cuda", "sm80", "sm_90a"})->size(), 1u);

  const auto listed = store->list();
  ASSERT_TRUE(listed);
  for (const Record& r : *listed) {
    auto shown = store->get(r.id);
    ASSERT_TRUE(shown);
    ASSERT_TRUE(shown->has_value());
    EXPECT_EQ((*shown)->id, r.id);
    expect_same(**shown, r);
  }
  EXPECT_FALSE(store->get(123456)->has_value());

  // The one-line form names the id, key and measurement.
  const Record& first = listed->front();
  const std::string line = describe(first);
  EXPECT_EQ(line.rfind(fmt::format("#{} {} {} v{} {} on {}: ", first.id, first.backend, first.family(),
                                   first.family_version, first.problem.key(), first.device.describe()),
                       0),
            0u)
      << line;
  EXPECT_NE(line.find(fmt::format("BLOCK_M={}", first.config.at("BLOCK_M"))), std::string::npos) << line;
  EXPECT_NE(line.find(fmt::format("{} reps", first.time.reps)), std::string::npos) << line;

  auto devices = store->devices();
  ASSERT_TRUE(devices);
  ASSERT_EQ(devices->size(), 3u);
  for (const DeviceSummary& d : *devices) {
    EXPECT_EQ(d.hash, d.device.hash());
    EXPECT_EQ(d.records, d.device == h200() ? 2 : 1);
  }
}

TEST(DbPrune, ByAgeDeviceAndFamilyVersion) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  auto store = Store::open(dir.file("tune.db"));
  ASSERT_TRUE(store);
  std::vector<Record> rs;
  const Fingerprint devs[] = {h200(), h200("560.28.03"), a100()};
  for (int i = 0; i < 120; ++i) {
    Record r = random_record(rng, devs[i % 3], sig(64 + 16 * i, 256, 256), i % 2 ? "sm80" : "sm90", 1 + i % 3);
    rs.push_back(r);
  }
  ASSERT_TRUE(store->upsert_all(rs));
  EXPECT_FALSE(store->prune({}));  // refused: nothing selected
  EXPECT_EQ(store->list()->size(), rs.size());
  EXPECT_FALSE(store->prune({"2024-13-01", "", {}}));

  // By age: a cut at a random record's time.
  const std::string cut = rs[std::uniform_int_distribution<std::size_t>(0, rs.size() - 1)(rng)].created_at;
  const auto older = std::count_if(rs.begin(), rs.end(), [&](const Record& r) { return r.created_at < cut; });
  auto n = store->prune({cut, "", {}});
  ASSERT_TRUE(n) << n.status().to_string();
  EXPECT_EQ(*n, older);
  std::erase_if(rs, [&](const Record& r) { return r.created_at < cut; });
  EXPECT_EQ(store->list()->size(), rs.size());

  // By family version older than current: sm80 now at v3, sm90 at v2.
  n = store->prune({"", "", {{"sm80", 3}, {"sm90", 2}}});
  ASSERT_TRUE(n);
  const auto stale = [](const Record& r) {
    return (r.family() == "sm80" && r.family_version < 3) || (r.family() == "sm90" && r.family_version < 2);
  };
  EXPECT_EQ(*n, std::count_if(rs.begin(), rs.end(), stale));
  std::erase_if(rs, stale);
  EXPECT_EQ(store->list()->size(), rs.size());

  // By device: the A100's records go, and so does its fingerprint.
  n = store->prune({"", a100().hash(), {}});
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, std::count_if(rs.begin(), rs.end(), [](const Record& r) { return r.device == a100(); }));
  std::erase_if(rs, [](const Record& r) { return r.device == a100(); });
  auto left = store->list();
  ASSERT_EQ(left->size(), rs.size());
  const auto devices = store->devices();
  ASSERT_TRUE(devices);
  for (const DeviceSummary& d : *devices) EXPECT_NE(d.device, a100());
  std::set<std::string> expected, got;
  for (const Record& r : rs) expected.insert(r.device.hash() + r.problem.key() + r.family());
  for (const Record& r : *left) got.insert(r.device.hash() + r.problem.key() + r.family());
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace tileforge::db
