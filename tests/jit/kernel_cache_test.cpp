// The kernel cache: what the key covers, hits without NVRTC, damaged entries, several processes at once, dumps, and
// faults: compiles that fail (TILEFORGE_JIT_FAULT) and a full disk while an entry is written.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <optional>
#include <filesystem>
#include <random>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "jit/kernel_cache.hpp"
#include "support/child_process.hpp"
#include "jit_test_util.hpp"

extern char** environ;

namespace tileforge::jit {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// When this binary is started as a helper of CacheProcesses.FourProcessesLeaveOneValidEntry, it compiles one
// kernel into the given cache before main() runs and exits: 0 compiled, 1 cache hit, 2 failed. With
// TILEFORGE_TEST_CACHE_CHILD_FSIZE (KernelCacheFaults.FullDisk...) its files are held to that many bytes, as on a
// full disk, and it compiles two kernels: 3 when both compiled and neither was stored.
int run_cache_child_if_asked() {
  const char* dir = std::getenv("TILEFORGE_TEST_CACHE_CHILD_DIR");
  if (!dir) return 0;
  if (const char* fd = std::getenv("TILEFORGE_TEST_CACHE_CHILD_FD")) {
    char c;
    while (::read(std::atoi(fd), &c, 1) > 0) {
    }  // EOF when the parent closes its end: every child starts at once
  }
  const char* full = std::getenv("TILEFORGE_TEST_CACHE_CHILD_FSIZE");
  if (full) {
    if (!tileforge::testing::hold_files_to(std::strtoull(full, nullptr, 10))) ::_exit(4);
  }
  KernelCache cache(dir);
  auto k = cache.get(testing::scale_request("sm_90a"));
  if (!k) {
    std::fprintf(stderr, "child %d: %s\n", int(::getpid()), k.status().to_string().c_str());
    ::_exit(2);
  }
  if (full) {
    auto second = cache.get(testing::scale_request("sm_80"));
    if (!second) ::_exit(2);
    std::printf("%s\n%s\n", k->note.c_str(), second->note.c_str());
    std::fflush(stdout);  // _exit does not flush
    const bool stored = !k->entry_path.empty() || !second->entry_path.empty();
    ::_exit(!stored && !k->cubin.empty() && !second->cubin.empty() ? 3 : 0);
  }
  ::_exit(k->cache_hit ? 1 : 0);
}
const int g_cache_child = run_cache_child_if_asked();

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) v.push_back(e.path());
  return v;
}

int count_entries(const fs::path& dir) {
  int n = 0;
  for (const auto& p : files_in(dir)) n += p.extension() == ".tfk" ? 1 : 0;
  return n;
}

int count_temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& p : files_in(dir)) n += p.filename().string().find(".tmp.") != std::string::npos ? 1 : 0;
  return n;
}

// Sets an environment variable for a scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value, 1); else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CacheKey, ChangesWithEverythingThatChangesTheCubin) {
  TF_REQUIRE_NVRTC();
  const Nvrtc& n = **Nvrtc::get();
  CompileRequest base = testing::scale_request("sm_90a");
  std::string k0 = cache_key(base, n);
  EXPECT_EQ(k0.size(), 32u) << "XXH3-128 as hex";
  EXPECT_EQ(cache_key(base, n), k0) << "deterministic";

  std::vector<CompileRequest> variants;
  auto v = base; v.source += "\n// changed\n"; variants.push_back(v);
  v = base; v.headers[0].content += "\n"; variants.push_back(v);
  v = base; v.headers[0].name = "tf_test/other.cuh"; variants.push_back(v);
  v = base; v.headers.push_back({"extra.cuh", ""}); variants.push_back(v);
  v = base; v.options.push_back("-DTF_EXTRA=1"); variants.push_back(v);
  v = base; v.options.push_back("-maxrregcount=64"); variants.push_back(v);
  v = base; v.arch = "sm_80"; variants.push_back(v);
  v = base; v.line_info = true; variants.push_back(v);
  v = base; v.fast_math = true; variants.push_back(v);
  v = base; v.name_expressions.push_back("scale_kernel<3>"); variants.push_back(v);
  std::set<std::string> keys = {k0};
  for (const auto& x : variants) keys.insert(cache_key(x, n));
  EXPECT_EQ(keys.size(), variants.size() + 1) << "every variant has its own key";

  // Neither the listing order of headers nor the human-readable name changes the cubin.
  v = base;
  v.headers = {{"b.cuh", "1"}, {"a.cuh", "2"}};
  auto w = v;
  w.headers = {{"a.cuh", "2"}, {"b.cuh", "1"}};
  w.name = "another name";
  EXPECT_EQ(cache_key(v, n), cache_key(w, n));
}

TEST(KernelCache, SecondCompileIsAHitWithoutNvrtc) {
  TF_REQUIRE_NVRTC();
  TempDir dir;
  CompileRequest r = testing::scale_request("sm_90a");
  KernelCache first(dir.str());
  auto a = first.get(r);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_FALSE(a->cache_hit);
  EXPECT_GT(a->compile_seconds, 0);
  EXPECT_EQ(a->entry_path, first.entry_path(a->key));
  EXPECT_TRUE(fs::exists(a->entry_path));
  EXPECT_TRUE(a->note.empty()) << a->note;
  std::printf("[ info ] miss: lookup %.4f s, compile %.3f s, store %.4f s\n", a->lookup_seconds, a->compile_seconds,
              a->store_seconds);

  // A new cache object on the same directory stands for a new process.
  uint64_t compiles = nvrtc_compile_count();
  KernelCache second(dir.str());
  auto b = second.get(r);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_TRUE(b->cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), compiles) << "a hit runs no NVRTC compile";
  EXPECT_EQ(b->compile_seconds, 0);
  EXPECT_NEAR(b->first_compile_seconds, a->compile_seconds, 1e-6);
  std::printf("[ info ] hit: lookup %.4f s\n", b->lookup_seconds);
  EXPECT_EQ(b->cubin, a->cubin);
  EXPECT_EQ(b->log, a->log);
  EXPECT_EQ(b->lowered_names, a->lowered_names);
  EXPECT_TRUE(b->ptx.empty());
  std::string sym = b->symbol("scale_kernel<2>");
  EXPECT_EQ(sym, a->symbol("scale_kernel<2>"));
  ASSERT_NE(b->resources("scale_kernel<2>"), nullptr) << "a hit still knows registers and spills";
  EXPECT_EQ(b->resources("scale_kernel<2>")->registers, a->resources("scale_kernel<2>")->registers);
  EXPECT_EQ(b->resources("add_one")->spill_store_bytes, 0);
  EXPECT_EQ(second.counters().hits, 1u);
  EXPECT_EQ(second.counters().misses, 0u);
  EXPECT_EQ(count_entries(dir.path()), 1);
}

TEST(KernelCache, DamagedEntriesAreDetectedRemovedAndRebuilt) {
  TF_REQUIRE_NVRTC();
  TempDir dir;
  CompileRequest r = testing::scale_request("sm_80");
  KernelCache cache(dir.str());
  auto good = cache.get(r);
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  const std::string path = good->entry_path;
  const auto size = fs::file_size(path);  // the cubin is the file's tail: size - 10 is inside it

  auto damage_and_reload = [&](const char* what, auto damage) {
    damage();
    uint64_t compiles = nvrtc_compile_count();
    KernelCache again(dir.str());
    auto k = again.get(r);
    ASSERT_TRUE(k.ok()) << what << ": " << k.status().to_string();
    EXPECT_FALSE(k->cache_hit) << what;
    EXPECT_EQ(nvrtc_compile_count(), compiles + 1) << what;
    EXPECT_EQ(again.counters().corrupt_entries, 1u) << what;
    EXPECT_NE(k->note.find("damaged"), std::string::npos) << what << ": " << k->note;
    EXPECT_EQ(k->cubin, good->cubin) << what;
    EXPECT_GT(fs::file_size(path), k->cubin.size()) << what << ": the entry is whole again";
    KernelCache third(dir.str());
    auto h = third.get(r);
    ASSERT_TRUE(h.ok());
    EXPECT_TRUE(h->cache_hit) << what;
  };
  damage_and_reload("truncated", [&] { fs::resize_file(path, size / 2); });
  damage_and_reload("empty", [&] { fs::resize_file(path, 0); });
  damage_and_reload("bad header", [&] {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.write("XXXX", 4);
  });
  damage_and_reload("flipped cubin byte", [&] {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(size - 10));
    char c = 0;
    f.read(&c, 1);
    f.seekp(std::streamoff(size - 10));
    c = char(c ^ 0x5a);
    f.write(&c, 1);
  });
  damage_and_reload("longer than recorded", [&] {
    std::ofstream f(path, std::ios::app | std::ios::binary);
    f << "trailing";
  });
  EXPECT_EQ(count_entries(dir.path()), 1);
  EXPECT_EQ(count_temporaries(dir.path()), 0);
}

TEST(KernelCache, ThreadsAskingForOneKernelCompileItOnce) {
  TF_REQUIRE_NVRTC();
  TempDir dir;
  KernelCache cache(dir.str());
  CompileRequest r = testing::scale_request("sm_80");
  r.options.push_back("-DTF_THREAD_TEST=1");
  uint64_t compiles = nvrtc_compile_count();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { ok[i] = cache.get(r).ok() ? 1 : 0; });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
  EXPECT_EQ(nvrtc_compile_count(), compiles + 1);
  EXPECT_EQ(cache.counters().hits, 3u);
  EXPECT_EQ(count_entries(dir.path()), 1);
}

TEST(CacheProcesses, FourProcessesLeaveOneValidEntry) {
  TF_REQUIRE_NVRTC();
  TempDir dir;
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  // The read end is inherited by the children; the write end stays here, so closing it starts them all.
  ASSERT_EQ(::fcntl(fds[0], F_SETFD, 0), 0);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  env_store.push_back("TILEFORGE_TEST_CACHE_CHILD_DIR=" + dir.str());
  env_store.push_back("TILEFORGE_TEST_CACHE_CHILD_FD=" + std::to_string(fds[0]));
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, nullptr};

  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = 0;
    ASSERT_EQ(::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
    children.push_back(pid);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  int compiled = 0, hits = 0;
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    int code = WEXITSTATUS(status);
    EXPECT_TRUE(code == 0 || code == 1) << "child exit code " << code;
    compiled += code == 0;
    hits += code == 1;
  }
  std::printf("[ info ] 4 processes on an empty cache: %d compiled, %d hit\n", compiled, hits);
  EXPECT_EQ(compiled + hits, 4);
  EXPECT_EQ(count_entries(dir.path()), 1);
  EXPECT_EQ(count_temporaries(dir.path()), 0);
  uint64_t before = nvrtc_compile_count();
  KernelCache check(dir.str());
  auto k = check.get(testing::scale_request("sm_90a"));
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_TRUE(k->cache_hit) << "the entry left behind is valid";
  EXPECT_EQ(nvrtc_compile_count(), before);
}

TEST(KernelCache, UnusableDirectoryStillCompiles) {
  TF_REQUIRE_NVRTC();
  TempDir dir;
  std::ofstream(dir.path() / "a_file") << "x";
  KernelCache cache((dir.path() / "a_file" / "kernels").string());  // a directory cannot be made under a file
  auto k = cache.get(testing::scale_request("sm_80"));
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_FALSE(k->cache_hit);
  EXPECT_TRUE(k->entry_path.empty());
  EXPECT_NE(k->note.find("unusable"), std::string::npos) << k->note;
  EXPECT_FALSE(k->cubin.empty());

  KernelCache none("");
  auto n = none.get(testing::scale_request("sm_80"));
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->entry_path.empty());
}

TEST(KernelCache, DumpWritesSourceHeadersPtxAndLog) {
  TF_REQUIRE_NVRTC();
  TempDir cache_dir, dump_dir;
  ScopedEnv env("TILEFORGE_JIT_DUMP", dump_dir.str().c_str());
  KernelCache cache(cache_dir.str());
  auto k = cache.get(testing::scale_request("sm_90a"));
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  std::string base = (dump_dir.path() / ("test_scale-" + k->key.substr(0, 16))).string();
  for (const char* ext : {".cu", ".ptx", ".log", ".cubin"}) EXPECT_TRUE(fs::exists(base + ext)) << base << ext;
  EXPECT_TRUE(fs::exists(base + ".headers/tf_test/scale.cuh"));
  std::ifstream ptx(base + ".ptx");
  std::string first((std::istreambuf_iterator<char>(ptx)), {});
  EXPECT_NE(first.find(".target sm_90a"), std::string::npos);
  std::ifstream log(base + ".log");
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("Used"), std::string::npos) << "the ptxas report is in the dumped log";
}

TEST(KernelCache, DefaultDirectoryFollowsTheEnvironment) {
  {
    ScopedEnv a("TILEFORGE_CACHE_DIR", "/tmp/tf-explicit");
    ScopedEnv b("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(default_cache_dir(), "/tmp/tf-explicit");
  }
  {
    ScopedEnv a("TILEFORGE_CACHE_DIR", nullptr);
    ScopedEnv b("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(default_cache_dir(), "/tmp/xdg/tileforge/kernels");
  }
  {
    ScopedEnv a("TILEFORGE_CACHE_DIR", nullptr);
    ScopedEnv b("XDG_CACHE_HOME", nullptr);
    ScopedEnv c("HOME", "/home/someone");
    EXPECT_EQ(default_cache_dir(), "/home/someone/.cache/tileforge/kernels");
  }
}

TEST(KernelCache, AtomicWriteLeavesOnlyTheFinalFile) {
  TempDir dir;
  std::string path = (dir.path() / "x.tfk").string();
  ASSERT_TRUE(write_file_atomic(path, "first").ok());
  ASSERT_TRUE(write_file_atomic(path, "second, longer").ok());
  std::ifstream f(path);
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(text, "second, longer");
  EXPECT_EQ(files_in(dir.path()).size(), 1u);
  Status s = write_file_atomic((dir.path() / "no_such_dir" / "x").string(), "y");
  EXPECT_EQ(s.code(), Code::io_error);
  EXPECT_NE(s.message().find("no_such_dir"), std::string::npos);
}

std::string read_all(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// NVRTC's front end and ptxas failing, made to happen with TILEFORGE_JIT_FAULT: each is compile_failed naming the
// step that failed and the kernel, with the full log kept; nothing is stored, and the good entry already cached for
// the same request is neither used (the faulted source has its own key) nor touched.
TEST(KernelCacheFaults, InjectedCompileFailuresAreNamedAndNothingIsCached) {
  TF_REQUIRE_NVRTC();
  TempDir dir;
  KernelCache cache(dir.str());
  CompileRequest r = testing::scale_request("sm_80");
  // A fresh key per run, so that a failure cannot be an artefact of an earlier run's files.
  r.options.push_back("-DTF_RUN=" + std::to_string(std::random_device{}()));
  auto good = cache.get(r);
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  const std::string entry = read_all(good->entry_path);

  struct Case {
    const char* spec;
    std::string says;  // how the message starts
    const char* error;  // in the message's first errors and in the log
  };
  const std::vector<Case> cases = {
      {"nvrtc", "NVRTC could not compile 'test_scale' for sm_80 (log: ", "TILEFORGE_JIT_FAULT=nvrtc"},
      {"ptxas", "ptxas (NVRTC's assembler step) could not assemble 'test_scale' for sm_80 (log: ",
       "tileforge_injected_ptxas_fault"},
      {"ptxas:scale", "ptxas (NVRTC's assembler step) could not assemble 'test_scale' for sm_80 (log: ",
       "tileforge_injected_ptxas_fault"},
  };
  for (const Case& c : cases) {
    ScopedEnv env("TILEFORGE_JIT_FAULT", c.spec);
    const uint64_t compiles = nvrtc_compile_count();
    auto k = cache.get(r);
    ASSERT_FALSE(k.ok()) << c.spec;
    EXPECT_EQ(k.status().code(), Code::compile_failed) << c.spec;
    const std::string& msg = k.status().message();
    EXPECT_EQ(msg.rfind(c.says, 0), 0u) << c.spec << ": " << msg;
    EXPECT_NE(msg.find(c.error), std::string::npos) << c.spec << ": " << msg;
    EXPECT_EQ(nvrtc_compile_count(), compiles + 1) << c.spec << ": the cached good kernel stood in for a fault";
    const std::size_t at = msg.find("(log: ") + 6;
    const std::string log = read_all(msg.substr(at, msg.find(')', at) - at));
    EXPECT_NE(log.find(c.error), std::string::npos) << c.spec << ": the log file has the error";
    EXPECT_EQ(count_entries(dir.path()), 1) << c.spec;
    EXPECT_EQ(count_temporaries(dir.path()), 0) << c.spec;
    EXPECT_EQ(read_all(good->entry_path), entry) << c.spec << ": the good entry changed";
  }
  {
    // A fault aimed at other kernels leaves this one alone.
    ScopedEnv env("TILEFORGE_JIT_FAULT", "ptxas:sm90_gemm");
    auto k = cache.get(r);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_TRUE(k->cache_hit);
  }
  {
    ScopedEnv env("TILEFORGE_JIT_FAULT", "linker");
    auto k = cache.get(r);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().code(), Code::invalid_argument);
    EXPECT_NE(k.status().message().find("TILEFORGE_JIT_FAULT=linker: unknown fault 'linker'"), std::string::npos)
        << k.status().message();
  }
  {
    // `trap` compiles: the kernel faults only when it runs (a trap at the top of its body), under its own key.
    ScopedEnv env("TILEFORGE_JIT_FAULT", "trap:scale");
    auto k = cache.get(r);
    ASSERT_TRUE(k.ok()) << k.status().to_string();
    EXPECT_FALSE(k->cache_hit);
    EXPECT_NE(k->key, good->key);
    EXPECT_NE(k->ptx.find("trap;"), std::string::npos) << k->ptx;
    EXPECT_EQ(good->ptx.find("trap;"), std::string::npos);
  }
  // The fault gone, the cached kernel is what a later call gets.
  auto after = cache.get(r);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_TRUE(after->cache_hit);
  EXPECT_EQ(after->cubin, good->cubin);
}

// A full disk while entries are written (files held to 1 kB; an entry is several): the kernels still come back
// compiled, nothing partial is left (no temporary file, no entry), another kernel's entry is untouched, and the
// process says so once on stderr; with room again the next process stores the entry.
TEST(KernelCacheFaults, FullDiskWhileStoringKeepsTheKernelLeavesNothingPartialAndSaysSo) {
  TF_REQUIRE_NVRTC();
  TempDir dir, logs;
  CompileRequest other = testing::scale_request("sm_80");
  other.options.push_back("-DTF_OTHER=1");
  KernelCache cache(dir.str());
  auto kept = cache.get(other);
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  const std::string kept_bytes = read_all(kept->entry_path);

  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  env_store.push_back("TILEFORGE_TEST_CACHE_CHILD_DIR=" + dir.str());
  env_store.push_back("TILEFORGE_TEST_CACHE_CHILD_FSIZE=1024");
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, nullptr};
  const std::string out = (logs.path() / "child.stdout").string(), err = (logs.path() / "child.stderr").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  const std::string notes = read_all(out), warnings = read_all(err);
  EXPECT_EQ(WEXITSTATUS(status), 3) << "both kernels compiled, neither stored\n" << notes << warnings;

  EXPECT_NE(notes.find("not cached: cannot write"), std::string::npos) << notes;
  EXPECT_NE(notes.find(std::strerror(EFBIG)), std::string::npos) << notes;
  const std::string warning = "tileforge: warning: kernel cache " + dir.str() + ": 'test_scale' not cached (";
  const std::size_t first = warnings.find(warning);
  ASSERT_NE(first, std::string::npos) << warnings;
  EXPECT_EQ(warnings.find(warning, first + 1), std::string::npos) << "said more than once: " << warnings;
  EXPECT_NE(warnings.find("kernels are compiled again in every process until it can be written"), std::string::npos)
      << warnings;
  EXPECT_EQ(count_entries(dir.path()), 1) << "only the entry made before the disk filled";
  EXPECT_EQ(count_temporaries(dir.path()), 0);
  EXPECT_EQ(read_all(kept->entry_path), kept_bytes);

  KernelCache roomy(dir.str());
  auto k = roomy.get(testing::scale_request("sm_90a"));
  ASSERT_TRUE(k.ok()) << k.status().to_string();
  EXPECT_FALSE(k->cache_hit);
  EXPECT_FALSE(k->entry_path.empty()) << k->note;
  EXPECT_EQ(count_entries(dir.path()), 2);
}

}  // namespace
}  // namespace tileforge::jit
