// Parallel ahead-of-time compiles of tuning candidates into the kernel cache.
#include "tune/compile.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "plan/kernel_family.hpp"
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "jit/kernel_cache.hpp"
#endif

namespace tileforge::tune {

bool compiled_at_run_time(std::string_view family) {
  const plan::KernelFamily* f = plan::find_family(family);
  return f && f->compiled_at_run_time();
}

CompileSummary compile_candidates(const Problem& problem, const std::vector<Config>& configs,
                                  const CompileOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  CompileSummary summary;
  summary.outcomes.resize(configs.size());
  if (configs.empty()) return summary;

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
  // A private cache for a given directory (tests, a scratch cache); the shared one otherwise, so that prepare()
  // finds what was compiled here.
  std::unique_ptr<jit::KernelCache> own;
  jit::KernelCache* cache = nullptr;
  if (!options.cache_dir.empty()) {
    own = std::make_unique<jit::KernelCache>(options.cache_dir);
    cache = own.get();
  }
#endif
  std::mutex done_mutex;
  std::atomic<std::size_t> next{0};
  auto compile_one = [&](std::size_t i) {
    CompileOutcome& out = summary.outcomes[i];
    out.attempted = true;
    const auto start = Clock::now();
    const Config& config = configs[i];
    if (!compiled_at_run_time(config.family)) {
      out.error = fmt::format("family {} is not compiled at run time", config.family);
    } else {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
      jit::KernelCache* into = cache;
#else
      jit::KernelCache* into = nullptr;
#endif
      auto r = plan::find_family(config.family)->compile_ahead(problem, config, options.arch, into);
      if (r) {
        out.ok = true;
        out.cache_hit = r->cache_hit;
        out.registers = r->registers;
      } else {
        out.error = r.status().message();
      }
    }
    out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  };
  auto work = [&] {
    for (std::size_t i = next++; i < configs.size(); i = next++) {
      if (options.stop && options.stop()) continue;  // skipped: outcome stays not attempted
      compile_one(i);
      if (options.done) {
        std::lock_guard lock(done_mutex);
        options.done(i, summary.outcomes[i]);
      }
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned n = std::min<unsigned>(options.threads > 0 ? options.threads : hw, unsigned(configs.size()));
  summary.threads = n;
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < n; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();

  for (const CompileOutcome& o : summary.outcomes) {
    if (!o.attempted) {
      ++summary.skipped;
    } else if (!o.ok) {
      ++summary.failed;
    } else if (o.cache_hit) {
      ++summary.hits;
    } else {
      ++summary.compiled;
    }
  }
  summary.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return summary;
}

}  // namespace tileforge::tune
