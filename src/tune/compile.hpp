// Run-time compilation of tuning candidates ahead of measuring: every candidate on all host cores at once, into
// the kernel cache that prepare() reads, with no device needed.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tileforge/tileforge.hpp"

namespace tileforge::tune {

// Whether a family's kernels are generated and compiled at run time (NVRTC for the CUDA families). CPU families are
// precompiled micro-kernels: their prepare() only sets up blocking, so there is nothing to compile ahead.
bool compiled_at_run_time(std::string_view family);

struct CompileOutcome {
  bool attempted = false;   // false: skipped by `stop`
  bool ok = false;
  std::string error;        // why it failed: the compiler's first errors and log path, or a spill
  bool cache_hit = false;
  double seconds = 0;       // this candidate's wall time (NVRTC, or reading the cache)
  int registers = 0;
};

struct CompileOptions {
  std::string arch;          // the NVRTC target of the device (its profile's arch)
  std::string cache_dir;     // "" = the shared kernel cache, the one prepare() reads
  unsigned threads = 0;      // compiles at once; 0 = all host cores
  // Asked before each compile starts: true skips the rest (the tuner's budget). Compiles under way finish.
  std::function<bool()> stop;
  // Called as each candidate finishes (from the worker threads, one call at a time).
  std::function<void(std::size_t index, const CompileOutcome& outcome)> done;
};

struct CompileSummary {
  std::vector<CompileOutcome> outcomes;  // one per config, in the order given
  double wall_seconds = 0;
  unsigned threads = 0;                  // workers used
  std::size_t compiled = 0, hits = 0, failed = 0, skipped = 0;
};

// Compiles every config (in the order given: workers take the next one as they finish, so the best-ranked start
// first) for `problem`. A config that fails is recorded with its reason; the others go on. Without a CUDA toolkit
// in the build, or for a family that is not compiled at run time, every outcome says so.
CompileSummary compile_candidates(const Problem& problem, const std::vector<Config>& configs,
                                  const CompileOptions& options);

}  // namespace tileforge::tune
