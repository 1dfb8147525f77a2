// The benchmark harness: plan a case, verify ours/native/peers once against float64, time them interleaved.
#include "bench/harness.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "dispatch/dispatch.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::bench {
namespace {

// Elements one operand spans over all batch entries.
int64_t elements(int64_t stride, int64_t span, int64_t batch) { return span == 0 ? 0 : (batch - 1) * stride + span; }

// One backend taking part in a case: its kernel, its own C buffer, and its timed reps.
struct Entry {
  Backend* backend = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<OperandBuffer> c;
  measure::Interleaved timed;  // its reps and the window's host load
  bool failed = false;
  std::string failure;
};

double tflops_of(const Problem& p, double median_ms) {
  return median_ms > 0 ? p.flops() / (median_ms * 1e-3) / 1e12 : 0.0;
}

}  // namespace


Expected<CasePlan> plan_case(const Device& device, const Problem& problem, const Settings& settings) {
  if (Status s = problem.validate(); !s) return s;
  CasePlan plan;
  plan.problem = problem.normalized();
  plan.config_source = settings.pins.empty() ? "heuristic" : "pinned";
  plan.ours = own_backend(device.kind);
  if (!plan.ours) {
    plan.ours_unavailable = fmt::format("tileforge has no backend for device kind '{}' in this build", device.kind);
    return plan;
  }
  if (Support ok = plan.ours->available(); !ok) {
    plan.ours_unavailable = fmt::format("{} is not available: {}", plan.ours->name(), ok.reason);
    return plan;
  }
  if (Support ok = plan.ours->supports(plan.problem, device); !ok) {
    plan.ours_unavailable = fmt::format("{} does not support {}: {}", plan.ours->name(), plan.problem.describe(), ok.reason);
    return plan;
  }
  dispatch::DispatchOptions dispatch;
  dispatch.pins = settings.pins;
  dispatch.db = settings.db;
  dispatch.use_planner = settings.use_planner;
  dispatch.deterministic = settings.deterministic;
  auto choice = dispatch::choose_config(plan.problem, device, *plan.ours, dispatch);
  if (!choice) {
    // A bad --set is the user's error, not a kernel failure: refuse it before anything runs.
    if (choice.status().code() == Code::invalid_argument) return choice.status();
    plan.ours_unavailable = fmt::format("{} found no config: {}", plan.ours->name(), choice.status().message());
    return plan;
  }
  plan.config = std::move(choice->config);
  plan.config_source = std::move(choice->source);
  plan.config_reason = std::move(choice->reason);
  if (settings.config_peers) {
    if (const plan::KernelFamily* family = plan::find_family(plan.config.family)) {
      for (plan::ConfigPeer& peer : family->config_peers(plan.problem, device.profile)) {
        plan.peer_lists.push_back({std::move(peer), plan.variants.size()});
        const auto& configs = plan.peer_lists.back().peer.configs;
        plan.variants.insert(plan.variants.end(), configs.begin(), configs.end());
      }
    }
  }
  return plan;
}

Expected<std::vector<CasePlan>> plan_cases(const Device& device, const std::vector<Problem>& problems,
                                           const Settings& settings) {
  std::vector<std::optional<Expected<CasePlan>>> planned(problems.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < problems.size(); i = next++) planned[i].emplace(plan_case(device, problems[i], settings));
  };
  const unsigned n = std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), unsigned(problems.size()));
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < n; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  std::vector<CasePlan> plans;
  plans.reserve(problems.size());
  for (auto& p : planned) {
    if (!*p) return p->status();
    plans.push_back(std::move(**p));
  }
  return plans;
}

const Measured* CaseResult::row() const {
  if (fallback) return native ? &*native : nullptr;
  return ours ? &*ours : nullptr;
}

std::optional<double> CaseResult::ratio() const {
  if (fallback || !ours || !native || ours->timing.reps == 0 || native->timing.reps == 0) return std::nullopt;
  if (ours->timing.median_ms <= 0) return std::nullopt;
  return native->timing.median_ms / ours->timing.median_ms;
}

double CaseResult::peak_fraction() const {
  const Measured* r = row();
  return (r && peak_tflops > 0) ? r->tflops / peak_tflops : 0.0;
}

std::optional<double> CaseResult::gbps() const {
  const Measured* r = row();
  return r ? gbps(*r) : std::nullopt;
}

std::optional<double> CaseResult::gbps(const Measured& m) const {
  if (m.timing.median_ms <= 0) return std::nullopt;
  const Problem& p = plan.problem;
  const double in = double(size_of(p.precision.input)), out = double(size_of(p.precision.output));
  const double c_passes = p.beta != 0.0 ? 2.0 : 1.0;  // C is read as well as written when beta != 0
  const double bytes = double(p.batch) * ((double(p.m) * p.k + double(p.k) * p.n) * in + double(p.m) * p.n * out * c_passes);
  return bytes / (m.timing.median_ms * 1e-3) / 1e9;
}

double precompile(const Device& device, const std::vector<CasePlan>& plans) {
  const auto t0 = std::chrono::steady_clock::now();
  // Every plan's config, then each variant config once (its first case): variants repeat across a suite's cases
  // (the config peers' lists), and the same kernel compiled for two shapes at once would be compiled twice.
  std::vector<std::pair<const CasePlan*, const Config*>> work_list;
  for (const CasePlan& plan : plans) {
    if (plan.ours && plan.ours_unavailable.empty()) work_list.emplace_back(&plan, &plan.config);
  }
  std::set<std::string> seen;
  for (const CasePlan& plan : plans) {
    if (!plan.ours || !plan.ours_unavailable.empty()) continue;
    for (const Config& v : plan.variants) {
      if (seen.insert(v.family + " " + v.describe()).second) work_list.emplace_back(&plan, &v);
    }
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < work_list.size(); i = next++) {
      const auto [plan, config] = work_list[i];
      (void)plan->ours->prepare(plan->problem, *config, device);
    }
  };
  const unsigned n = std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()),
                                        unsigned(std::max<std::size_t>(1, work_list.size())));
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < n; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

namespace {

// Ours (when it can run), the native library and the peers that are not the native one: each gets its own C.
int participants(const Device& device, const CasePlan& plan) {
  const NativeChoice choice = native_for(plan.problem, device);
  int n = plan.ours_unavailable.empty() && plan.ours ? 1 + int(plan.variants.size()) : 0;
  if (choice.native) ++n;
  for (Backend* peer : choice.peers) n += peer != choice.native ? 1 : 0;
  return n;
}

// A case that does not run at all: neither ours nor native, with the reason in both places and in `refused`.
CaseResult refused(const Device& device, const CasePlan& plan, const std::string& reason) {
  CaseResult result;
  result.plan = plan;
  const Problem& p = result.plan.problem;
  result.peak_tflops = device.profile.peak_tflops(p.precision.input, p.precision.accum).value_or(0.0);
  result.ours_failure = reason;
  result.native_missing = reason;
  result.refused = fmt::format("{}: {}", p.describe(), reason);
  return result;
}

// Each config peer's row (CasePlan::peer_lists): the fastest of its list's configs that passed verification and
// were timed; the configs that failed are named in warnings, as a tuner would see them fail.
void add_config_peers(CaseResult& result) {
  for (const CasePlan::PeerList& list : result.plan.peer_lists) {
    const Measured* best = nullptr;
    int timed = 0;
    for (std::size_t i = 0; i < list.peer.configs.size() && list.first + i < result.variants.size(); ++i) {
      const Expected<Measured>& v = result.variants[list.first + i];
      if (!v) {
        result.warnings.push_back(fmt::format("peer {}: {}: {}", list.peer.name, list.peer.configs[i].describe(),
                                              v.status().message()));
        continue;
      }
      if (v->timing.reps == 0) continue;
      ++timed;
      if (!best || v->timing.median_ms < best->timing.median_ms) best = &*v;
    }
    if (!best) {
      result.warnings.push_back(fmt::format("peer {}: none of its {} configs ran on {}", list.peer.name,
                                            list.peer.configs.size(), result.plan.problem.describe()));
      continue;
    }
    Measured m = *best;
    m.backend = list.peer.name;
    m.implementation = fmt::format("{} (fastest of {} timed; {} of the {} listed run here)", best->config.describe(),
                                   timed, list.peer.configs.size(), list.peer.listed);
    result.peers.push_back(std::move(m));
  }
}

// One case's run, in named steps over its state: the operands placed where the device reads them, the host
// reference where the device does not compute its own, then each backend prepared and verified (ours, our
// variants, the native library and its peers), the errors checked, the entries timed in interleaved rounds, and
// the row finished.
class CaseRun {
 public:
  CaseRun(const Device& device, const CasePlan& plan, const Settings& settings, RepTimer& timer)
      : device_(device), settings_(settings), timer_(timer), device_reference_(timer.verifies_on_device()) {
    result_.plan = plan;
  }

  CaseResult run() {
    const Problem& p = problem();
    result_.peak_tflops = device_.profile.peak_tflops(p.precision.input, p.precision.accum).value_or(0.0);
    if (!place_operands()) return std::move(result_);
    if (!device_reference_) {
      reference_ = verify::reference_gemm(p, a_.host(), b_.host(), c_in_.host(), settings_.reference_full_limit);
    }
    start_ours();
    start_variants();
    start_vendors();
    check_errors();
    // An empty problem (M, N or K of 0: no multiply-adds) is verified, not timed: a rate or a ratio of two calls
    // that do nothing would mean nothing.
    const bool empty = p.flops() == 0;
    if (empty && settings_.measure) {
      result_.warnings.push_back(
          fmt::format("{}: an empty problem (M, N or K is 0, no multiply-adds): verified, not timed", p.describe()));
    }
    if (settings_.measure && !empty && !entries_.empty()) time_entries();
    finish_row();
    return std::move(result_);
  }

 private:
  const Problem& problem() const { return result_.plan.problem; }

  // Operands: random from the seed (never zeros), shared by every backend; each backend writes its own C. They are
  // generated where the device reads them (in place in host memory on the CPU: each held once); a host copy is
  // kept only for a reference computed on the host.
  bool place_operands() {
    const Problem& p = problem();
    const DType in = p.precision.input, out = p.precision.output;
    Status placed;
    auto place = [&](measure::PlacedOperand& into, DType t, int64_t count, uint64_t seed) {
      if (!placed) return;
      auto op = measure::random_operand(timer_, t, count, seed, !device_reference_);
      if (op) into = std::move(*op); else placed = op.status();
    };
    place(a_, in, elements(p.stride_a, p.span_a(), p.batch), settings_.seed);
    place(b_, in, elements(p.stride_b, p.span_b(), p.batch), settings_.seed * 7919 + 1);
    place(c_in_, out, elements(p.stride_c, p.span_c(), p.batch), settings_.seed * 104729 + 2);
    if (placed) return true;
    result_.ours_failure = fmt::format("operands could not be placed on the device: {}", placed.to_string());
    result_.native_missing = result_.ours_failure;
    result_.warnings.push_back(result_.ours_failure);
    return false;
  }

  // Runs one entry once, with C reset: the input C when beta reads it, poison otherwise (an unwritten element then
  // shows up as NaN: 0xFF bytes are NaN in f32, f16 and bf16).
  Status reset_c(Entry& e) {
    return problem().beta != 0.0 ? e.c->copy_from(*c_in_.buffer) : e.c->fill_bytes(0xFF);
  }
  Status call(Entry& e) {
    GemmArgs args{a_.buffer->data(), b_.buffer->data(), e.c->data(), timer_.stream()};
    return e.backend->run(*e.kernel, problem(), args);
  }
  Expected<verify::ErrorReport> measure_error(Entry& e) {
    const Problem& p = problem();
    if (device_reference_) return timer_.verify_on_device(p, *a_.buffer, *b_.buffer, *c_in_.buffer, *e.c, &kept_);
    if (const void* host = e.c->host_view()) return verify::compare(p, host, reference_);
    std::vector<unsigned char> c_host(e.c->bytes());
    if (Status s = e.c->download(c_host.data()); !s) return s;
    return verify::compare(p, c_host.data(), reference_);
  }

  // Prepares and verifies one backend; returns its Measured or the reason it could not run.
  Expected<Measured> start(Backend* backend, const Config& config, Entry& e) {
    e.backend = backend;
    auto kernel = backend->prepare(problem(), config, device_);
    if (!kernel) return Status(kernel.status().code(), fmt::format("prepare failed: {}", kernel.status().message()));
    e.kernel = std::move(*kernel);
    auto c = timer_.allocate(c_in_.buffer->bytes());
    if (!c) return c.status();
    e.c = std::move(*c);
    if (Status s = reset_c(e); !s) return s;
    if (Status s = call(e); !s) return Status(s.code(), fmt::format("run failed: {}", s.message()));
    auto error = measure_error(e);
    if (!error) return Status(error.status().code(), fmt::format("run failed: {}", error.status().message()));
    Measured m;
    m.backend = std::string(backend->name());
    m.config = e.kernel->config();
    m.implementation = e.kernel->implementation();
    // What the library could not say about itself (a kernel name CUPTI did not capture) is a warning, not a failure.
    if (std::string note = e.kernel->implementation_note(); !note.empty()) {
      result_.warnings.push_back(fmt::format("{}: {}", backend->name(), note));
    }
    m.error = *error;
    return m;
  }
  Config vendor_config(Backend* backend) const {
    auto c = backend->heuristic(problem(), device_);
    return c ? *c : Config{std::string(backend->name()), {}};
  }

  void start_ours() {
    const CasePlan& plan = result_.plan;
    if (!plan.ours_unavailable.empty()) {
      result_.ours_failure = plan.ours_unavailable;
      return;
    }
    Entry& e = entries_.emplace_back();
    auto m = start(plan.ours, plan.config, e);
    if (m) {
      result_.ours = std::move(*m);
      ours_entry_ = &e;
    } else {
      result_.ours_failure = fmt::format("{}: {}", plan.ours->name(), m.status().message());
      entries_.pop_back();
    }
  }

  // Our variants (the ladder's candidates), each with its own C.
  void start_variants() {
    const CasePlan& plan = result_.plan;
    for (const Config& variant : plan.variants) {
      if (!plan.ours || !plan.ours_unavailable.empty()) {
        result_.variants.push_back(
            not_available(plan.ours_unavailable.empty() ? "no backend of ours" : plan.ours_unavailable));
        continue;
      }
      Entry& e = entries_.emplace_back();
      auto m = start(plan.ours, variant, e);
      if (m) {
        variant_entries_.emplace_back(&e, result_.variants.size());
      } else {
        entries_.pop_back();
      }
      result_.variants.push_back(std::move(m));
    }
  }

  // The native library and its peers.
  void start_vendors() {
    const Problem& p = problem();
    NativeChoice choice = native_for(p, device_);
    if (!choice.native) {
      result_.native_missing =
          choice.missing.empty() ? "no vendor library for this precision on this device" : choice.missing;
    } else {
      Entry& e = entries_.emplace_back();
      auto m = start(choice.native, vendor_config(choice.native), e);
      if (m) {
        result_.native = std::move(*m);
        native_entry_ = &e;
      } else {
        result_.native_missing = fmt::format("{} failed: {}", choice.native->name(), m.status().message());
        result_.warnings.push_back(fmt::format("native {} failed on {}: {}", choice.native->name(), p.describe(),
                                               m.status().message()));
        entries_.pop_back();
      }
    }
    for (Backend* peer : choice.peers) {
      if (peer == choice.native) continue;
      Entry& e = entries_.emplace_back();
      auto m = start(peer, vendor_config(peer), e);
      if (m) {
        result_.peers.push_back(std::move(*m));
        peer_entries_.emplace_back(&e, result_.peers.size() - 1);
      } else {
        result_.warnings.push_back(
            fmt::format("peer {} failed on {}: {}", peer->name(), p.describe(), m.status().message()));
        entries_.pop_back();
      }
    }
  }

  // Ours is held to the error ceiling, and to twice the native library's error on the same inputs.
  void check_errors() {
    const Problem& p = problem();
    std::optional<double> native_error;
    if (result_.native) native_error = result_.native->error.rel_error;
    result_.threshold = verify::threshold(p, native_error);
    if (result_.ours) {
      result_.check = verify::check(p, result_.ours->error, native_error);
      if (!result_.check) {
        result_.warnings.push_back(fmt::format("ours ({}) fails verification on {}: {}",
                                               result_.plan.config.describe(), p.describe(), result_.check.message()));
      }
    }
    for (auto& v : result_.variants) {
      if (!v) continue;
      if (Status s = verify::check(p, v->error, native_error); !s) {
        v = Status(s.code(), fmt::format("{} fails verification: {}", v->config.describe(), s.message()));
      }
    }
  }

  // Interleaved rounds (ours, native, peers, ours, native, ...) so that drift and neighbours hit all alike.
  void time_entries() {
    std::vector<std::function<Status()>> calls;
    for (Entry& e : entries_) calls.push_back([this, &e] { return call(e); });
    measure::Contract contract = settings_;
    contract.own_threads = device_.kind == "cpu" ? effective_threads(device_) : 1;
    const std::vector<Interleaved> timed = time_interleaved(timer_, contract, calls);
    std::size_t i = 0;
    for (Entry& e : entries_) {
      const Interleaved& t = timed[i++];
      if (!t.failure.ok()) {
        e.failed = true;
        e.failure = fmt::format("run failed while timing: {}", t.failure.message());
      }
      e.timed = t;
    }
    take_times();
  }

  void finish(const Entry& e, Measured& m) const {
    m.timing = summarize_run(e.timed);
    m.tflops = tflops_of(problem(), m.timing.median_ms);
  }

  // Each entry's times into its Measured, or its failure while timing into the row.
  void take_times() {
    const Problem& p = problem();
    if (ours_entry_) {
      if (ours_entry_->failed) {
        result_.ours_failure = fmt::format("{}: {}", result_.plan.ours->name(), ours_entry_->failure);
        result_.ours.reset();
        result_.check = {};
      } else {
        finish(*ours_entry_, *result_.ours);
      }
    }
    if (native_entry_) {
      if (native_entry_->failed) {
        result_.native_missing = fmt::format("{} failed: {}", result_.native->backend, native_entry_->failure);
        result_.warnings.push_back(fmt::format("native {} failed on {}: {}", result_.native->backend, p.describe(),
                                               native_entry_->failure));
        result_.native.reset();
      } else {
        finish(*native_entry_, *result_.native);
      }
    }
    std::vector<Measured> kept;
    for (auto [e, index] : peer_entries_) {
      if (e->failed) {
        result_.warnings.push_back(
            fmt::format("peer {} failed on {}: {}", result_.peers[index].backend, p.describe(), e->failure));
        continue;
      }
      finish(*e, result_.peers[index]);
      kept.push_back(std::move(result_.peers[index]));
    }
    result_.peers = std::move(kept);
    for (auto [e, index] : variant_entries_) {
      Expected<Measured>& v = result_.variants[index];
      if (!v) continue;  // failed verification: reported as such, its times not used
      if (e->failed) {
        v = Status(Code::launch_failed, fmt::format("{}: {}", v->config.describe(), e->failure));
      } else {
        finish(*e, *v);
      }
    }
  }

  void finish_row() {
    const Problem& p = problem();
    if (settings_.measure) add_config_peers(result_);
    if (result_.ours && result_.ours->timing.reps > 0) result_.verdict = verdict_for(device_, p, *result_.ours);
    if (!result_.ours) {
      // A vendor call may stand in for a failed kernel, but the row then says so and never counts as ours.
      result_.fallback = result_.native.has_value();
      result_.warnings.push_back(fmt::format(
          "ours failed on {} ({}){}", p.describe(), result_.ours_failure,
          result_.fallback
              ? fmt::format("; the row shows the native {} call instead (fallback, not counted as ours)",
                            result_.native->backend)
              : "; no native call to fall back on"));
    }
  }

  const Device& device_;
  const Settings& settings_;
  RepTimer& timer_;
  const bool device_reference_;
  CaseResult result_;
  measure::PlacedOperand a_, b_, c_in_;
  verify::Reference reference_;
  // The device's reference, computed by the first verification and kept for the next (the operands stay put).
  std::unique_ptr<measure::KeptReference> kept_;
  std::deque<Entry> entries_;  // a deque: pointers to entries stay valid as more are added
  Entry* ours_entry_ = nullptr;
  Entry* native_entry_ = nullptr;
  std::vector<std::pair<Entry*, std::size_t>> variant_entries_;  // entry, index in result_.variants
  std::vector<std::pair<Entry*, std::size_t>> peer_entries_;     // entry, index in result_.peers
};

CaseResult run_unchecked(const Device& device, const CasePlan& plan, const Settings& settings, RepTimer& timer) {
  return CaseRun(device, plan, settings, timer).run();
}

}  // namespace

std::optional<Verdict> verdict_for(const Device& device, const Problem& problem, const Measured& m) {
  const plan::KernelFamily* family = plan::find_family(m.config.family);
  if (!family || m.timing.median_ms <= 0) return std::nullopt;
  const auto scratch = family->make_scratch();
  const plan::Cost cost =
      family->cost(problem, device.profile, m.config, device.kind == "cpu" ? effective_threads(device) : 0, scratch.get());
  if (!cost.valid || cost.bound.empty()) return std::nullopt;
  Verdict v;
  v.bound = cost.bound;
  double seconds = cost.bound == "compute" ? cost.compute_s : cost.bound == "latency" ? cost.latency_s : 0;
  for (const plan::LevelTime& level : cost.levels) {
    if (level.level == cost.bound) seconds = level.seconds;
  }
  if (seconds <= 0) return std::nullopt;
  v.limit_ms = seconds * 1e3;
  v.fraction = v.limit_ms / m.timing.median_ms;
  v.below = v.fraction < kVerdictFlag;
  return v;
}

measure::MemoryNeed memory_need(const Device& device, const CasePlan& plan, const Settings& settings,
                                const RepTimer& timer) {
  measure::CaseLayout layout;
  layout.participants = participants(device, plan);
  // The CPU timer's operand memory is host memory; every other device's timer allocates on the device.
  layout.device_operands = device.kind != "cpu";
  layout.host_reference = !timer.verifies_on_device();
  layout.reference_full_limit = settings.reference_full_limit;
  // Our kernels' own memory (split-K workspaces, operand copies, packed B, a 16-bit C's f32 accumulator): the most
  // any config of the case takes, as its family estimates it. The native library's is not known.
  if (plan.ours) {
    const int threads = device.kind == "cpu" ? effective_threads(device) : 0;
    auto take = [&](const Config& c) {
      if (const plan::KernelFamily* f = plan::find_family(c.family)) {
        layout.workspace = std::max(layout.workspace, f->workspace_bytes(plan.problem, device.profile, c, threads));
      }
    };
    take(plan.config);
    for (const Config& v : plan.variants) take(v);
  }
  layout.timer_bytes = timer.held_bytes();
  return measure::case_memory(plan.problem, layout);
}

CaseResult run_case(const Device& device, const CasePlan& plan, const Settings& settings, RepTimer& timer) {
  // Checked before the first allocation: a case too large for the host used to run for minutes and then be killed
  // by the kernel's OOM killer (issue 18), or end the process with a bare std::bad_alloc.
  const measure::MemoryNeed need = memory_need(device, plan, settings, timer);
  std::optional<measure::MemoryLimit> host, dev;
  if (settings.max_memory) {
    host = dev = measure::MemoryLimit{*settings.max_memory, "--max-memory"};
  } else {
    host = measure::host_memory_available();
  }
  if (Status s = measure::check_memory(need, host, dev); !s) {
    return refused(device, plan, fmt::format("refused before allocating: {}", s.message()));
  }
  try {
    return run_unchecked(device, plan, settings, timer);
  } catch (const std::bad_alloc&) {
    // The estimate is a lower bound (backends' own workspace, packing buffers, other processes taking memory
    // meanwhile), so an allocation can still fail: name it instead of ending the process.
    return refused(device, plan,
                   fmt::format("out of host memory (std::bad_alloc) although the estimate, {} of host memory, fit "
                               "the {} available ({}) — reduce the problem",
                               measure::format_bytes(need.host_bytes()),
                               host ? measure::format_bytes(host->bytes) : "unknown", host ? host->source : "none"));
  }
}

}  // namespace tileforge::bench
