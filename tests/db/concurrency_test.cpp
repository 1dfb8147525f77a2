// Tuning DB concurrency: four processes create one DB file and write into it at the same moment; every record
// of every writer must be there afterwards, with its values, and no writer may see an error.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "db/db_fixtures.hpp"
#include "db/store.hpp"

extern char** environ;

namespace tileforge::db {
namespace {

using namespace dbtest;

constexpr const char* kWriterEnv = "TILEFORGE_DB_TEST_WRITER";

// Writer `index`'s record `i`: a key no other writer uses (N carries the writer, M the record), values random
// from a seed both parent and writer derive, and two writers per fingerprint so that device rows race too.
Record writer_record(uint64_t seed, int index, int i) {
  std::mt19937_64 rng(seed * 1000003u + uint64_t(index) * 7919u + uint64_t(i));
  const Fingerprint f = index % 2 ? h200("560.28.03") : h200();
  return random_record(rng, f, sig(16 + i, 1000 + index, 64 + 8 * (i % 5)));
}

struct WriterArgs {
  std::string db, go;
  int index = 0, count = 0;
  uint64_t seed = 0;
};

// The writer's half, run in a child process started by the test below (disabled, so that a plain run skips it).
TEST(DbConcurrency, DISABLED_Writer) {
  const char* env = std::getenv(kWriterEnv);
  if (!env) GTEST_SKIP() << "run by DbConcurrency.FourProcessesWritingAtOnceLoseNothing";
  WriterArgs a;
  std::istringstream in(env);
  std::getline(in, a.db, '|');
  std::getline(in, a.go, '|');
  char bar;
  in >> a.index >> bar >> a.count >> bar >> a.seed;
  ASSERT_TRUE(in) << env;

  // Start together: wait for the parent's signal file.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(a.go)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no start signal";
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Every writer creates the file if it is not there yet: creation and migration race too.
  auto store = Store::open(a.db);
  ASSERT_TRUE(store) << store.status().to_string();

  // First half one transaction per record (the tuner's pattern), then batches of five (an import's).
  const int half = a.count / 2;
  for (int i = 0; i < half; ++i) {
    const Record r = writer_record(a.seed, a.index, i);
    auto u = store->upsert(r);
    ASSERT_TRUE(u) << "writer " << a.index << " record " << i << ": " << u.status().to_string();
    ASSERT_EQ(*u, Upsert::inserted);
    // Read back through the lookup while the others keep writing.
    auto found = store->lookup({r.device, r.backend, problem_of(r.problem), {{"sm80", 1}}, nullptr});
    ASSERT_TRUE(found) << found.status().to_string();
    ASSERT_EQ(found->source, Hit::exact) << found->reason;
    ASSERT_EQ(found->record->time.median_ms, r.time.median_ms);
  }
  for (int i = half; i < a.count; i += 5) {
    std::vector<Record> batch;
    for (int j = i; j < std::min(i + 5, a.count); ++j) batch.push_back(writer_record(a.seed, a.index, j));
    auto u = store->upsert_all(batch);
    ASSERT_TRUE(u) << "writer " << a.index << " batch at " << i << ": " << u.status().to_string();
  }
}

TEST(DbConcurrency, FourProcessesWritingAtOnceLoseNothing) {
  constexpr int kWriters = 4, kEach = 150;
  const uint64_t seed = test_seed();
  SCOPED_TRACE(::testing::Message() << "TILEFORGE_TEST_SEED=" << seed);
  ScratchDir dir;
  const std::string db = dir.file("shared/tune.db"), go = dir.file("go");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();

  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    std::vector<std::string> env_strings;
    // Not the sharding of the process that runs this test (ctest's unit shards): the writer runs its one test.
    auto dropped = [](std::string_view e) {
      return e.rfind(kWriterEnv, 0) == 0 || e.rfind("GTEST_TOTAL_SHARDS=", 0) == 0 ||
             e.rfind("GTEST_SHARD_INDEX=", 0) == 0;
    };
    for (char** e = environ; *e; ++e)
      if (!dropped(*e)) env_strings.emplace_back(*e);
    env_strings.push_back(fmt::format("{}={}|{}|{}|{}|{}", kWriterEnv, db, go, w, kEach, seed));
    std::vector<char*> envp;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string a0 = self, a1 = "--gtest_filter=DbConcurrency.DISABLED_Writer", a2 = "--gtest_also_run_disabled_tests";
    char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};

    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    const std::string log = dir.file(fmt::format("writer-{}.log", w));
    posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, self.c_str(), &files, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&files);
    ASSERT_EQ(rc, 0) << "posix_spawn: " << std::strerror(rc);
    pids.push_back(pid);
  }
  // Let every writer reach its wait loop, then release them together.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  write_file(go, "go");

  for (int w = 0; w < kWriters; ++w) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[w], &status, 0), pids[w]);
    const std::string log = read_file(dir.file(fmt::format("writer-{}.log", w)));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << w << " failed:\n" << log;
    // The writer really ran (a filter typo would pass silently otherwise).
    EXPECT_NE(log.find("[       OK ] DbConcurrency.DISABLED_Writer"), std::string::npos) << log;
  }

  auto store = Store::open(db);
  ASSERT_TRUE(store) << store.status().to_string();
  auto all = store->list();
  ASSERT_TRUE(all) << all.status().to_string();
  EXPECT_EQ(all->size(), std::size_t(kWriters * kEach));
  std::map<std::string, const Record*> by_key;
  for (const Record& r : *all) by_key[r.device.hash() + r.problem.key()] = &r;
  int missing = 0;
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kEach; ++i) {
      const Record want = writer_record(seed, w, i);
      auto it = by_key.find(want.device.hash() + want.problem.key());
      if (it == by_key.end()) {
        ++missing;
        continue;
      }
      expect_same(without_id(*it->second), want);
    }
  }
  EXPECT_EQ(missing, 0);
  auto devices = store->devices();
  ASSERT_TRUE(devices);
  EXPECT_EQ(devices->size(), 2u);
}

}  // namespace
}  // namespace tileforge::db
