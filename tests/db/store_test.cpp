// Tuning DB store: schema creation and migration, refused files (newer, foreign, corrupted), best-median upsert,
// list, show and prune.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "db/db_fixtures.hpp"
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

// A v2 that adds a table and a column, appended the way the next real version will be.
std::vector<Migration> with_v2(std::string v2_sql) {
  std::vector<Migration> steps = migrations();
  steps.push_back({schema_version() + 1, "test: notes", [v2_sql](const SqlExec& exec) { return exec(v2_sql); }});
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
  const auto steps = with_v2("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);"
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
  // This build (v1) now sees a newer file and refuses it, naming both versions and what to do.
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
  const auto steps = with_v2("CREATE TABLE notes (id INTEGER PRIMARY KEY); THIS IS NOT SQL;");
  OpenOptions o;
  o.migrations = &steps;
  auto bad = Store::open(path, o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("migration to schema v2"), std::string::npos) << bad.status().message();
  auto good = Store::open(path);
  ASSERT_TRUE(good) << good.status().to_string();
  EXPECT_EQ(good->version(), schema_version());
  // The half-applied step was rolled back: v2 can still be applied later.
  const auto fixed = with_v2("CREATE TABLE notes (id INTEGER PRIMARY KEY);");
  o.migrations = &fixed;
  EXPECT_TRUE(Store::open(path, o));
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
