// The tuner's set-up: compiling and preparing the candidates, and the testbed (operands, reference, timer, threshold).
#include <atomic>

#include <fmt/format.h>

#include "plan/kernel_family.hpp"
#include "tune/compile.hpp"
#include "tune/tune_steps.hpp"

namespace tileforge::tune::detail {

namespace {

// Elements one operand spans over all batch entries (as the bench harness lays them out).
int64_t elements(int64_t stride, int64_t span, int64_t batch) { return span == 0 ? 0 : (batch - 1) * stride + span; }

}  // namespace

// Run-time compiled families build every candidate at once on all host cores.
Status compile_ahead(Session& s, const std::string& family) {
  const TuneOptions& options = s.options;
  TuneResult& result = s.result;
  auto& cands = s.candidates();
  const std::size_t n = cands.size();
  const auto tc = Clock::now();
  auto target = plan::find_family(family)->compile_target(s.device);
  if (!target) return target.status();
  const std::string arch = *target;
  std::vector<Config> configs;
  for (const auto& c : cands) configs.push_back(c.config);
  std::atomic<bool> any_ok{false};
  std::size_t finished = 0;
  CompileOptions co;
  co.arch = arch;
  co.cache_dir = options.kernel_cache_dir;
  co.threads = options.compile_threads;
  // The budget never leaves the tuner without a compiled kernel: it stops compiles only once one has succeeded.
  co.stop = [&] { return any_ok.load() && s.spent(); };
  co.done = [&](std::size_t i, const CompileOutcome& o) {
    if (o.ok) any_ok = true;
    s.say("compile", ++finished, n,
          fmt::format("[{}/{}] compiled {}: {}", finished, n, configs[i].describe(),
                      o.ok ? (o.cache_hit ? "cache hit" : fmt::format("{:.1f} s", o.seconds)) : "FAILED: " + o.error));
  };
  const CompileSummary summary = compile_candidates(s.problem(), configs, co);
  for (std::size_t i = 0; i < n; ++i) {
    const CompileOutcome& o = summary.outcomes[i];
    cands[i].compile_s = o.seconds;
    cands[i].cache_hit = o.cache_hit;
    if (!o.attempted) {
      cands[i].outcome = Outcome::over_budget;
      cands[i].reason = fmt::format("not compiled: the budget of {:g} s was spent", options.budget_s);
      result.budget_hit = true;
    } else if (!o.ok) {
      cands[i].outcome = Outcome::prepare_failed;
      cands[i].reason = fmt::format("compile failed: {}", o.error);
    }
  }
  result.compile_threads = summary.threads;
  result.compile_s = since(tc);
  s.say("compile", n, n,
        fmt::format("compiled {} candidates for {} on {} threads in {:.1f} s ({} compiled, {} cache hits, {} failed{})",
                    n, arch, summary.threads, result.compile_s, summary.compiled, summary.hits, summary.failed,
                    summary.skipped ? fmt::format(", {} skipped by the budget", summary.skipped) : ""));
  return {};
}

// After the compile step this only loads (GPU) or sets up blocking (CPU).
void prepare_kernels(Session& s) {
  auto& cands = s.candidates();
  const std::size_t n = cands.size();
  const auto tp = Clock::now();
  s.kernels.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (cands[i].outcome != Outcome::screened) continue;
    const auto start = Clock::now();
    auto k = s.backend->prepare(s.problem(), cands[i].config, s.device);
    cands[i].prepare_s = since(start);
    if (!k) {
      cands[i].outcome = Outcome::prepare_failed;
      cands[i].reason = fmt::format("prepare failed: {}", k.status().message());
      s.say("prepare", i + 1, n, fmt::format("[{}/{}] prepare failed {}: {}", i + 1, n, cands[i].config.describe(),
                                             k.status().message()));
      continue;
    }
    s.kernels[i] = std::move(*k);
  }
  s.result.prepare_s = since(tp);
}

Expected<std::unique_ptr<Testbed>> Testbed::make(const Problem& p, const Device& device, const TuneOptions& options) {
  std::unique_ptr<Testbed> bed(new Testbed(p));
  bed->timer_ = options.timer;
  if (!bed->timer_) {
    auto t = measure::make_timer(device);
    if (!t) return t.status();
    bed->own_timer_ = std::move(*t);
    bed->timer_ = bed->own_timer_.get();
  }
  const uint64_t seed = options.contract.seed;
  const DType in = p.precision.input, out = p.precision.output;
  const int64_t na = elements(p.stride_a, p.span_a(), p.batch), nb = elements(p.stride_b, p.span_b(), p.batch);
  const int64_t nc = elements(p.stride_c, p.span_c(), p.batch);
  measure::RepTimer* timer = bed->timer_;
  bed->device_reference_ = timer->verifies_on_device();
  // A host copy of a device operand is kept only while the host reference reads it (below).
  const bool keep_host = !bed->device_reference_;
  auto a = measure::random_operand(*timer, in, na, seed, keep_host);
  if (!a) return Status(a.status().code(), "operand A could not be placed: " + a.status().message());
  auto b = measure::random_operand(*timer, in, nb, seed * 7919 + 1, keep_host);
  if (!b) return Status(b.status().code(), "operand B could not be placed: " + b.status().message());
  auto c_init = measure::random_operand(*timer, out, nc, seed * 104729 + 2, keep_host);
  if (!c_init) return Status(c_init.status().code(), "C could not be placed: " + c_init.status().message());
  auto c_dev = timer->allocate(c_init->buffer->bytes());  // one output buffer: candidates run one after another
  if (!c_dev) return Status(c_dev.status().code(), "C could not be placed: " + c_dev.status().message());
  if (!bed->device_reference_) {
    bed->reference_ =
        verify::reference_gemm(p, a->host(), b->host(), c_init->host(), options.contract.reference_full_limit);
  }
  bed->a_dev_ = std::move(a->buffer);
  bed->b_dev_ = std::move(b->buffer);
  bed->c_init_dev_ = std::move(c_init->buffer);
  bed->c_dev_ = std::move(*c_dev);
  return bed;
}

// C before a verification run: the input C when beta reads it, NaN poison otherwise (an unwritten element shows).
Status Testbed::reset_c() { return p_.beta != 0.0 ? c_dev_->copy_from(*c_init_dev_) : c_dev_->fill_bytes(0xFF); }

Status Testbed::run(Backend* backend, const Kernel& kernel) {
  return backend->run(kernel, p_, GemmArgs{a_dev_->data(), b_dev_->data(), c_dev_->data(), timer_->stream()});
}

Expected<verify::ErrorReport> Testbed::measure_error() {
  if (device_reference_) return timer_->verify_on_device(p_, *a_dev_, *b_dev_, *c_init_dev_, *c_dev_, &kept_);
  if (const void* host = c_dev_->host_view()) return verify::compare(p_, host, reference_);
  std::vector<unsigned char> c_host(c_dev_->bytes());
  if (Status s = c_dev_->download(c_host.data()); !s) return s;
  return verify::compare(p_, c_host.data(), reference_);
}

Expected<verify::ErrorReport> Testbed::verify_once(Backend* backend, const Kernel& kernel) {
  if (Status s = reset_c(); !s) return s;
  if (Status s = run(backend, kernel); !s) return Status(s.code(), fmt::format("run failed: {}", s.message()));
  return measure_error();
}

// The native library's error on the same inputs: the threshold allows at most twice it (docs/NUMERICS.md).
void set_error_threshold(Session& s, Testbed& bed) {
  const Problem& p = s.problem();
  TuneResult& result = s.result;
  if (NativeChoice nat = native_for(p, s.device); nat.native) {
    auto cfg = nat.native->heuristic(p, s.device);
    auto k = nat.native->prepare(p, cfg ? *cfg : Config{std::string(nat.native->name()), {}}, s.device);
    if (!k) {
      result.native = fmt::format("{} failed: {}", nat.native->name(), k.status().message());
    } else if (auto e = bed.verify_once(nat.native, **k); !e) {
      result.native = fmt::format("{} failed: {}", nat.native->name(), e.status().message());
    } else {
      result.native = std::string(nat.native->name());
      result.native_error = e->rel_error;
    }
    if (!result.native_error) result.warnings.push_back(fmt::format("no native error for the threshold: {}", result.native));
  } else {
    result.native = nat.missing.empty() ? "no vendor library for this precision on this device" : nat.missing;
  }
  result.threshold = verify::threshold(p, result.native_error);
}

}  // namespace tileforge::tune::detail
