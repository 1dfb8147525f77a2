// The on-disk kernel cache: one file per compiled kernel, keyed by everything that affects the cubin.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/expected.hpp"
#include "jit/nvrtc.hpp"
#include "jit/ptxas_report.hpp"

namespace tileforge::jit {

// A cubin with what is known about it, from a fresh compile or from the cache.
struct CompiledKernel {
  std::string key;                                   // 32 hex digits (XXH3-128, jit/content_hash.hpp)
  std::string name;
  std::string arch;
  std::string cubin;
  std::string ptx;                                   // fresh compiles only (the cache keeps no PTX)
  std::string log;                                   // the compiler's log, also on a cache hit
  PtxasReport report;                                // parsed from the log
  std::map<std::string, std::string> lowered_names;  // name expression -> symbol
  bool cache_hit = false;
  double compile_seconds = 0;   // NVRTC time spent by this call (0 on a hit)
  double lookup_seconds = 0;    // reading and checking the entry (or finding none)
  double store_seconds = 0;     // writing the entry
  double first_compile_seconds = 0;  // what the compile took when the entry was made
  std::string entry_path;       // the cache file; "" when the disk cache was unusable
  std::string note;             // what went wrong with the disk cache, if anything (never fatal)

  // The symbol for `kernel`: the lowered name of a name expression, else `kernel` itself (extern "C").
  std::string symbol(std::string_view kernel) const;
  const FunctionResources* resources(std::string_view kernel) const { return report.find(symbol(kernel)); }
};

// $TILEFORGE_CACHE_DIR, else $XDG_CACHE_HOME/tileforge/kernels, else ~/.cache/tileforge/kernels.
std::string default_cache_dir();

// Everything that changes the cubin, hashed: source, each header's name and content, the full option list
// (which holds the target and the toolkit include directory), the name expressions, and NVRTC's identity.
std::string cache_key(const CompileRequest& request, const Nvrtc& nvrtc);

class KernelCache {
 public:
  // `dir` is created when missing; "" keeps nothing on disk (every call compiles).
  explicit KernelCache(std::string dir);
  // The process's cache in default_cache_dir(), made on first use.
  static KernelCache& shared();

  const std::string& dir() const { return dir_; }
  std::string entry_path(std::string_view key) const;  // <dir>/<key>.tfk

  // The kernel from the cache, or compiled now and stored. A source that does not compile gives compile_failed
  // with the log's path and its first errors (naming ptxas when it was the assembler that failed); a cache that
  // cannot be written (a full disk, a read-only folder) leaves a note and a warning on stderr, once per directory.
  // TILEFORGE_JIT_DUMP=DIR writes source, headers, PTX, log and cubin of every compile to DIR;
  // TILEFORGE_JIT_FAULT makes compiles fail on purpose (inject_fault).
  Expected<CompiledKernel> get(const CompileRequest& request);

  struct Counters {
    uint64_t hits = 0, misses = 0, corrupt_entries = 0, store_failures = 0;
  };
  Counters counters() const;

 private:
  std::string dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<std::mutex>> in_flight_;  // one compile per key at a time in this process
  Counters counters_;
};

// Fault injection for tests of what a failing compile does upstream (docs/RELIABILITY.md): `spec` is
// TILEFORGE_JIT_FAULT's value, `nvrtc` (a front-end error: an #error line), `ptxas` (PTX the assembler rejects:
// an unknown instruction in an extra kernel) or `trap` (the kernel compiles and traps when it runs, which loses the
// CUDA context), optionally `:TEXT` to fault only requests whose name contains TEXT
// (`ptxas:sm90`). Appends the fault to `request.source` and returns true when it applies; an unknown kind is
// invalid_argument. The changed source has its own cache key, so a cached good kernel is not used meanwhile and
// nothing is stored for it.
Expected<bool> inject_fault(std::string_view spec, CompileRequest& request);

// Writes `data` to `path` atomically: a unique temporary file in the same directory, fsync, rename, fsync of
// the directory. Readers see the old file or the whole new one, never a part.
Status write_file_atomic(const std::string& path, std::string_view data);

}  // namespace tileforge::jit
