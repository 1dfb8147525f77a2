// tune(): plan, compile, prepare, verify and screen in the planner's order, stop early by the model, confirm the
// leaders under the contract, pick the winner deterministically, record it.
#include "tune/tune.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dispatch/dispatch.hpp"
#include "db/store.hpp"
#include "measure/host_load.hpp"
#include "measure/protocol.hpp"
#include "plan/planner.hpp"
#include "tune/compile.hpp"

namespace tileforge::tune {
namespace {

// The DB judges the records it stores by the contract's rules, restated there (db sits below measure); this file
// sees both, so the two copies cannot drift apart unnoticed.
static_assert(db::kSpreadIqrLimit == measure::kSpreadIqrLimit, "db::kSpreadIqrLimit must equal the contract's");
static_assert(db::kHostBusyCores == measure::kHostBusyCores, "db::kHostBusyCores must equal the contract's");

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Elements one operand spans over all batch entries (as the bench harness lays them out).
int64_t elements(int64_t stride, int64_t span, int64_t batch) { return span == 0 ? 0 : (batch - 1) * stride + span; }

std::string ms_text(double ms) {
  if (ms >= 100) return fmt::format("{:.1f} ms", ms);
  if (ms >= 1) return fmt::format("{:.3f} ms", ms);
  return fmt::format("{:.4f} ms", ms);
}

Status check_options(const TuneOptions& o) {
  if (!o.ranks.empty() && o.exhaustive) return invalid_argument("--ranks and --exhaustive exclude each other");
  for (int r : o.ranks) {
    if (r < 1) return invalid_argument(fmt::format("--ranks {} (allowed: planner ranks, 1 or more)", r));
  }
  if (!o.exhaustive && o.top < 1) return invalid_argument(fmt::format("--top {} (allowed: 1 or more)", o.top));
  if (!(o.budget_s >= 0) || !std::isfinite(o.budget_s)) {
    return invalid_argument(fmt::format("--budget {} (allowed: seconds > 0, or 0 for none)", o.budget_s));
  }
  if (o.screen_reps < 1) return invalid_argument(fmt::format("screening reps {} (allowed: 1 or more)", o.screen_reps));
  if (o.screen_warmup_reps < 0) return invalid_argument("screening warm-up reps must be >= 0");
  if (o.screen_time_s < 0 || o.screen_cap_s <= 0) return invalid_argument("screening times must be >= 0 (cap > 0)");
  if (o.leaders < 1) return invalid_argument(fmt::format("--leaders {} (allowed: 1 or more)", o.leaders));
  if (o.early_stop_after < 1) return invalid_argument("early_stop_after must be >= 1");
  if (!(o.early_stop_slack >= 0) || o.early_stop_slack >= 1) return invalid_argument("early_stop_slack must be in [0, 1)");
  if (!(o.tie_floor >= 0) || o.tie_floor >= 1) return invalid_argument("tie_floor must be in [0, 1)");
  if (o.contract.min_reps < 1 || o.contract.max_time_s <= 0 || o.contract.min_time_s < 0) {
    return invalid_argument("the confirmation contract needs min reps >= 1, min time >= 0 and max time > 0");
  }
  if (o.write_db && o.db_path.empty()) return invalid_argument("no tuning DB path given (pass one, or --no-db)");
  return {};
}

// The device as it is, without a --profile override: what the measurements belong to.
Device running_device(const Device& device) {
  const std::string spec = device.kind == "cuda" ? fmt::format("cuda:{}", device.ordinal) : device.kind;
  auto d = open_device(spec, {}, device.threads);
  return d ? *d : device;
}

}  // namespace

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::screened: return "screened";
    case Outcome::prepare_failed: return "prepare-failed";
    case Outcome::run_failed: return "run-failed";
    case Outcome::over_threshold: return "over-threshold";
    case Outcome::early_stopped: return "early-stop";
    case Outcome::over_budget: return "budget";
  }
  return "?";
}

double median_uncertainty(const CandidateResult& c) {
  // Half-width of the ~95% interval of a median (the notch of a box plot, McGill, Tukey and Larsen 1978):
  // 1.57 x IQR / sqrt(n). The spread of single reps says how noisy one call is; two medians of a few hundred
  // interleaved reps each are known far more precisely than that.
  return c.confirm.reps > 0 ? 1.57 * c.noise / std::sqrt(double(c.confirm.reps)) : c.noise;
}

std::string noisy_reason(const measure::Timing& t, double predicted_ms) {
  if (t.reps == 0) return {};
  std::vector<std::string> why;
  if (t.spread()) {
    why.push_back(fmt::format("reps spread {:.2f} of the median (limit {:.2f})", t.iqr_share(), measure::kSpreadIqrLimit));
  }
  if (t.busy()) {
    why.push_back(fmt::format("other processes used {:.2f} cores while it was timed, {:.0f} spare (limit {:.2f} beyond "
                              "the spare)",
                              t.others_cores, std::max(0.0, t.spare_cores), measure::kHostBusyCores));
  }
  if (t.min_ms > 0 && t.median_ms > kWinnerMedianOverMin * t.min_ms) {
    why.push_back(fmt::format("median {} is {:.1f}x its fastest rep {} (limit {:g}x)", ms_text(t.median_ms),
                              t.median_ms / t.min_ms, ms_text(t.min_ms), kWinnerMedianOverMin));
  }
  if (predicted_ms > 0 && t.median_ms > kWinnerMedianOverPredicted * predicted_ms &&
      t.median_ms - predicted_ms > kWinnerPredictionFloorMs) {
    why.push_back(fmt::format("median {} is {:.1f}x its prediction {} (limit {:g}x)", ms_text(t.median_ms),
                              t.median_ms / predicted_ms, ms_text(predicted_ms), kWinnerMedianOverPredicted));
  }
  return fmt::format("{}", fmt::join(why, "; "));
}

double relative_iqr(std::vector<double> s) {
  if (s.size() < 2) return 0;
  std::sort(s.begin(), s.end());
  auto quantile = [&](double q) {
    const double pos = q * double(s.size() - 1);
    const std::size_t lo = std::size_t(pos);
    const std::size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (pos - double(lo)) * (s[hi] - s[lo]);
  };
  const double median = quantile(0.5);
  return median > 0 ? (quantile(0.75) - quantile(0.25)) / median : 0;
}

std::optional<std::pair<std::size_t, std::string>> pick_winner(const std::vector<CandidateResult>& cs,
                                                               double tie_floor) {
  std::vector<std::size_t> order;  // confirmed candidates, fastest median first
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (cs[i].confirmed && cs[i].outcome == Outcome::screened && cs[i].confirm.reps > 0) order.push_back(i);
  if (order.empty()) return std::nullopt;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (cs[a].confirm.median_ms != cs[b].confirm.median_ms) return cs[a].confirm.median_ms < cs[b].confirm.median_ms;
    return cs[a].rank < cs[b].rank;
  });
  const std::size_t fastest = order.front();
  const CandidateResult& f = cs[fastest];
  // The ties are a run from the fastest on: a candidate is tied only if everything faster is too. A noisy
  // candidate slower than an untied one never wins on its noise, so the winner is never slower than any
  // candidate that lost, and the planner's pick, when tied, wins (its rank is the lowest).
  std::size_t winner = fastest;
  double winner_tol = 0;
  for (std::size_t k = 1; k < order.size(); ++k) {
    const CandidateResult& c = cs[order[k]];
    const double tol = std::max({tie_floor, median_uncertainty(f), median_uncertainty(c)});
    if (c.confirm.median_ms > f.confirm.median_ms * (1 + tol)) break;
    if (c.rank < cs[winner].rank) {
      winner = order[k];
      winner_tol = tol;
    }
  }
  if (winner == fastest) return std::pair{winner, fmt::format("fastest median ({})", ms_text(f.confirm.median_ms))};
  const CandidateResult& w = cs[winner];
  return std::pair{winner,
                   fmt::format("tie: its median {} is within {:.1f}% of the fastest, rank {} ({}), inside the "
                               "uncertainty of the medians ({:.1f}%); ties go to the planner's rank",
                               ms_text(w.confirm.median_ms), 100 * (w.confirm.median_ms / f.confirm.median_ms - 1),
                               f.rank, ms_text(f.confirm.median_ms), 100 * winner_tol)};
}

namespace {

// Everything checked before anything runs: the options, the problem, the backend, and the plan (pins, family, a
// profile planned for another backend).
Expected<plan::Plan> plan_for(const Problem& p, const Device& device, const TuneOptions& options, Backend* backend,
                              const std::string& running_profile) {
  if (!backend) return not_available(fmt::format("tileforge has no backend for device kind '{}' in this build", device.kind));
  if (Support s = backend->available(); !s) return not_available(fmt::format("{} is not available: {}", backend->name(), s.reason));
  if (Support s = backend->supports(p, device); !s) {
    return unsupported(fmt::format("{} does not support {}: {}", backend->name(), p.describe(), s.reason));
  }
  plan::PlanOptions po;
  po.pins = options.pins;
  po.family = options.family;
  po.top_n = 0;
  po.threads = device.kind == "cpu" ? tileforge::effective_threads(device) : 0;
  po.running_profiles = {running_profile};
  auto plan = plan::make_plan(p, device.profile, po);
  if (!plan) return plan.status();
  if (!plan->served) {
    return unsupported(fmt::format("the planner serves no family for {} on {}: {}{}", p.describe(), device.profile.name,
                                   plan->unserved, plan->needed.empty() ? "" : fmt::format(" (needed: {})", plan->needed)));
  }
  if (plan->backend != backend->name()) {
    return invalid_argument(fmt::format("--profile {} plans family {} for the {} backend, but device {} runs the {} "
                                        "backend (pass a profile of the device that runs)",
                                        device.profile.name, plan->family, plan->backend, device.kind, backend->name()));
  }
  return plan;
}

}  // namespace

Status check(const Problem& problem, const Device& device, const TuneOptions& options) {
  if (Status s = problem.validate(); !s) return s;
  if (Status s = check_options(options); !s) return s;
  Backend* backend = options.backend ? options.backend : own_backend(device.kind);
  auto plan = plan_for(problem.normalized(), device, options, backend, device.profile.name);
  return plan ? Status{} : plan.status();
}

Expected<TuneResult> tune(const Problem& problem, const Device& device, const TuneOptions& options,
                          const ProgressFn& progress) {
  const auto t0 = Clock::now();
  if (Status s = problem.validate(); !s) return s;
  if (Status s = check_options(options); !s) return s;
  auto say = [&](std::string phase, std::size_t index, std::size_t total, std::string line) {
    if (progress) progress(Progress{std::move(phase), index, total, std::move(line)});
  };
  auto spent = [&] { return options.budget_s > 0 && since(t0) >= options.budget_s; };

  TuneResult result;
  result.problem = problem.normalized();
  const Problem& p = result.problem;
  result.device = device.name;
  result.profile = device.profile.name;
  result.tool_version = std::string(version());
  result.seed = options.contract.seed;

  // ---- plan: the candidates and their predicted times
  Backend* backend = options.backend ? options.backend : own_backend(device.kind);
  const Device running = running_device(device);
  auto plan = plan_for(p, device, options, backend, running.profile.name);
  if (!plan) return plan.status();
  result.backend = std::string(backend->name());
  result.family = plan->family;
  result.coverage = plan->coverage;
  result.space_size = plan->ranked.size();
  std::size_t n = options.exhaustive ? plan->ranked.size()
                                     : std::min<std::size_t>(std::size_t(options.top), plan->ranked.size());
  auto add = [&](const plan::Candidate& ranked, bool heuristic) {
    CandidateResult c;
    c.rank = ranked.rank;
    c.config = ranked.config;
    c.predicted_ms = ranked.cost.valid ? ranked.cost.seconds * 1e3 : 0;
    c.heuristic = heuristic;
    if (c.rank == 1) result.planner_pick = result.candidates.size();
    result.candidates.push_back(std::move(c));
  };
  std::vector<int> ranks = options.ranks;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (!ranks.empty()) {
    if (std::size_t(ranks.back()) > plan->ranked.size()) {
      return invalid_argument(fmt::format("--ranks {}: the planner ranks {} legal configs for {} (allowed: 1 to {})",
                                          ranks.back(), plan->ranked.size(), p.describe(), plan->ranked.size()));
    }
    for (int r : ranks) add(plan->ranked[std::size_t(r - 1)], false);
  } else {
    for (std::size_t i = 0; i < n; ++i) add(plan->ranked[i], false);
  }
  // The backend's own pick (an analytic model or a heuristic) is a second opinion the cost model cannot
  // veto: where the model misprices a whole region (streaming B for skinny M, say) it ranks that pick far down.
  if (ranks.empty() && options.with_heuristic && plan->reference_rank > int(n)) {
    add(plan->ranked[std::size_t(plan->reference_rank - 1)], true);
    result.heuristic_name = plan->reference_name;
  }
  n = result.candidates.size();
  auto& cands = result.candidates;
  result.plan_s = since(t0);
  say("plan", 0, n,
      fmt::format("planned {} on {}: {} candidate{} of {} legal {} configs ({}{})", p.describe(), device.profile.name, n,
                  n == 1 ? "" : "s", result.space_size, result.family,
                  options.exhaustive ? "exhaustive"
                  : !ranks.empty()       ? fmt::format("planner ranks {}", fmt::join(ranks, ", "))
                  : result.heuristic_name.empty()
                      ? fmt::format("the planner's top {}", options.top)
                      : fmt::format("the planner's top {} and {}'s own pick", options.top, result.heuristic_name),
                  options.budget_s > 0 ? fmt::format(", budget {:g} s", options.budget_s) : ""));

  // ---- compile: run-time compiled families build every candidate at once on all host cores
  if (compiled_at_run_time(plan->family) && backend->device_kind() == "cuda" && n > 0) {
    const auto tc = Clock::now();
    auto target = plan::find_family(plan->family)->compile_target(device);
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
    co.stop = [&] { return any_ok.load() && spent(); };
    co.done = [&](std::size_t i, const CompileOutcome& o) {
      if (o.ok) any_ok = true;
      say("compile", ++finished, n,
          fmt::format("[{}/{}] compiled {}: {}", finished, n, configs[i].describe(),
                      o.ok ? (o.cache_hit ? "cache hit" : fmt::format("{:.1f} s", o.seconds)) : "FAILED: " + o.error));
    };
    const CompileSummary summary = compile_candidates(p, configs, co);
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
    say("compile", n, n,
        fmt::format("compiled {} candidates for {} on {} threads in {:.1f} s ({} compiled, {} cache hits, {} failed{})", n,
                    arch, summary.threads, result.compile_s, summary.compiled, summary.hits, summary.failed,
                    summary.skipped ? fmt::format(", {} skipped by the budget", summary.skipped) : ""));
  }

  // ---- prepare: after the compile step this only loads (GPU) or sets up blocking (CPU)
  const auto tp = Clock::now();
  std::vector<std::unique_ptr<Kernel>> kernels(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (cands[i].outcome != Outcome::screened) continue;
    const auto start = Clock::now();
    auto k = backend->prepare(p, cands[i].config, device);
    cands[i].prepare_s = since(start);
    if (!k) {
      cands[i].outcome = Outcome::prepare_failed;
      cands[i].reason = fmt::format("prepare failed: {}", k.status().message());
      say("prepare", i + 1, n, fmt::format("[{}/{}] prepare failed {}: {}", i + 1, n, cands[i].config.describe(),
                                           k.status().message()));
      continue;
    }
    kernels[i] = std::move(*k);
  }
  result.prepare_s = since(tp);

  // ---- operands and the reference, as bench makes them (same seeds: the same inputs as a bench row)
  const auto tr = Clock::now();
  std::unique_ptr<measure::RepTimer> own_timer;
  measure::RepTimer* timer = options.timer;
  if (!timer) {
    auto t = measure::make_timer(device);
    if (!t) return t.status();
    own_timer = std::move(*t);
    timer = own_timer.get();
  }
  const uint64_t seed = options.contract.seed;
  const DType in = p.precision.input, out = p.precision.output;
  const int64_t na = elements(p.stride_a, p.span_a(), p.batch), nb = elements(p.stride_b, p.span_b(), p.batch);
  const int64_t nc = elements(p.stride_c, p.span_c(), p.batch);
  std::vector<unsigned char> a(std::size_t(na) * size_of(in)), b(std::size_t(nb) * size_of(in)),
      c_init(std::size_t(nc) * size_of(out));
  verify::fill_random(a.data(), in, na, seed);
  verify::fill_random(b.data(), in, nb, seed * 7919 + 1);
  verify::fill_random(c_init.data(), out, nc, seed * 104729 + 2);
  auto place = [&](std::size_t bytes, const void* host) -> Expected<std::unique_ptr<measure::OperandBuffer>> {
    auto buf = timer->allocate(bytes);
    if (!buf) return buf.status();
    if (host) {
      if (Status s = (*buf)->upload(host); !s) return s;
    }
    return std::move(*buf);
  };
  auto a_dev = place(a.size(), a.data());
  if (!a_dev) return Status(a_dev.status().code(), "operand A could not be placed: " + a_dev.status().message());
  auto b_dev = place(b.size(), b.data());
  if (!b_dev) return Status(b_dev.status().code(), "operand B could not be placed: " + b_dev.status().message());
  auto c_init_dev = place(c_init.size(), c_init.data());
  if (!c_init_dev) return Status(c_init_dev.status().code(), "C could not be placed: " + c_init_dev.status().message());
  auto c_dev = place(c_init.size(), nullptr);  // one output buffer: candidates run one after another
  if (!c_dev) return Status(c_dev.status().code(), "C could not be placed: " + c_dev.status().message());
  const bool device_reference = timer->verifies_on_device();
  const verify::Reference reference =
      device_reference ? verify::Reference{}
                       : verify::reference_gemm(p, a.data(), b.data(), c_init.data(), options.contract.reference_full_limit);
  // C before a verification run: the input C when beta reads it, NaN poison otherwise (an unwritten element shows).
  auto reset_c = [&]() { return p.beta != 0.0 ? (*c_dev)->copy_from(**c_init_dev) : (*c_dev)->fill_bytes(0xFF); };
  auto run_on = [&](Backend* bk, const Kernel& k) {
    return bk->run(k, p, GemmArgs{(*a_dev)->data(), (*b_dev)->data(), (*c_dev)->data(), timer->stream()});
  };
  auto measure_error = [&]() -> Expected<verify::ErrorReport> {
    if (device_reference) return timer->verify_on_device(p, **a_dev, **b_dev, **c_init_dev, **c_dev);
    if (const void* host = (*c_dev)->host_view()) return verify::compare(p, host, reference);
    std::vector<unsigned char> c_host((*c_dev)->bytes());
    if (Status s = (*c_dev)->download(c_host.data()); !s) return s;
    return verify::compare(p, c_host.data(), reference);
  };
  // Verification run: one call on reset C, compared with the float64 reference.
  auto verify_once = [&](Backend* bk, const Kernel& k) -> Expected<verify::ErrorReport> {
    if (Status s = reset_c(); !s) return s;
    if (Status s = run_on(bk, k); !s) return Status(s.code(), fmt::format("run failed: {}", s.message()));
    return measure_error();
  };

  // The native library's error on the same inputs: the threshold allows at most twice it (docs/NUMERICS.md).
  if (NativeChoice nat = native_for(p, device); nat.native) {
    auto cfg = nat.native->heuristic(p, device);
    auto k = nat.native->prepare(p, cfg ? *cfg : Config{std::string(nat.native->name()), {}}, device);
    if (!k) {
      result.native = fmt::format("{} failed: {}", nat.native->name(), k.status().message());
    } else if (auto e = verify_once(nat.native, **k); !e) {
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
  result.reference_s = since(tr);

  // ---- screen in the planner's order
  const auto ts = Clock::now();
  double best_ms = std::numeric_limits<double>::infinity(), best_ratio = std::numeric_limits<double>::infinity();
  std::size_t best_i = 0, ratio_i = 0, verified = 0;
  const double keep = 1 - options.early_stop_slack;
  std::string stop_line;  // set when the early stop fires
  double stop_ratio = 0, stop_best = 0;
  std::size_t stopped = 0, stopped_after = 0;
  const double cap_ms = options.screen_cap_s * 1e3, min_ms = options.screen_time_s * 1e3;
  for (std::size_t i = 0; i < n; ++i) {
    CandidateResult& c = cands[i];
    if (c.outcome != Outcome::screened) continue;
    // The early stop (docs/TUNING.md): candidates come in order of predicted time, so this one is the most
    // promising left. Scaled by the smallest measured/predicted ratio seen (the model's most optimistic error so
    // far), and given the slack (the model cannot tell apart configs it predicts within a few percent), if even
    // that cannot beat the best measured time, none of the rest can. The backend's own pick is exempt: it is there
    // because the model may be wrong about it.
    if (stop_line.empty() && !c.heuristic && options.early_stop && !options.exhaustive && ranks.empty() &&
        verified >= std::size_t(options.early_stop_after) && c.predicted_ms > 0 && std::isfinite(best_ratio)) {
      const double bound = c.predicted_ms * best_ratio * keep;
      if (bound >= best_ms) {
        stop_line = fmt::format(
            "rank {} is predicted {}; scaled by the best measured/predicted ratio so far ({:.3f}, rank {}) and less the "
            "{:.0f}% slack it would take {}, no faster than the best measured {} (rank {})",
            c.rank, ms_text(c.predicted_ms), best_ratio, cands[ratio_i].rank, 100 * options.early_stop_slack,
            ms_text(bound), ms_text(best_ms), cands[best_i].rank);
        stop_ratio = best_ratio;
        stop_best = best_ms;
        stopped_after = verified;
      }
    }
    if (!stop_line.empty() && !c.heuristic) {
      c.outcome = Outcome::early_stopped;
      c.reason = fmt::format("early stop: predicted {} x best ratio {:.3f} x {:.2f} = {} >= best measured {}",
                             ms_text(c.predicted_ms), stop_ratio, keep, ms_text(c.predicted_ms * stop_ratio * keep),
                             ms_text(stop_best));
      ++stopped;
      continue;
    }
    if (verified >= 1 && spent()) {
      for (std::size_t j = i; j < n; ++j) {
        if (cands[j].outcome != Outcome::screened) continue;
        cands[j].outcome = Outcome::over_budget;
        cands[j].reason = fmt::format("not screened: the budget of {:g} s was spent", options.budget_s);
      }
      result.budget_hit = true;
      say("screen", i + 1, n, fmt::format("budget of {:g} s spent after {} screened", options.budget_s, verified));
      break;
    }
    const Kernel& k = *kernels[i];
    auto fail = [&](Outcome o, std::string why) {
      c.outcome = o;
      c.reason = std::move(why);
      say("screen", i + 1, n, fmt::format("[{}/{}] {} {}: {}", i + 1, n, to_string(o), c.config.describe(), c.reason));
    };
    auto error = verify_once(backend, k);
    if (!error) {
      fail(Outcome::run_failed, error.status().message());
      continue;
    }
    c.error = *error;
    if (Status s = verify::check(p, *error, result.native_error); !s) {
      fail(Outcome::over_threshold, fmt::format("fails verification: {}", s.message()));
      continue;
    }
    std::vector<double> samples;
    double timed = 0;
    bool failed = false;
    for (int w = 0; w < options.screen_warmup_reps && !failed; ++w) {
      auto t = timer->time([&] { return run_on(backend, k); });
      if (!t) {
        failed = true;
        fail(Outcome::run_failed, fmt::format("run failed while screening: {}", t.status().message()));
      }
    }
    while (!failed && !((int(samples.size()) >= options.screen_reps && timed >= min_ms) ||
                        (!samples.empty() && timed >= cap_ms))) {
      auto t = timer->time([&] { return run_on(backend, k); });
      if (!t) {
        failed = true;
        fail(Outcome::run_failed, fmt::format("run failed while screening: {}", t.status().message()));
        break;
      }
      samples.push_back(*t);
      timed += *t;
    }
    if (failed) continue;
    c.screen = measure::summarize(samples);
    ++verified;
    ++result.measured;
    if (c.predicted_ms > 0) {
      c.ratio = c.screen.median_ms / c.predicted_ms;
      if (c.ratio < best_ratio) {
        best_ratio = c.ratio;
        ratio_i = i;
      }
    }
    if (c.screen.median_ms < best_ms) {
      best_ms = c.screen.median_ms;
      best_i = i;
    }
    say("screen", i + 1, n,
        fmt::format("[{}/{}] screening {} ... {} (predicted {}, {} reps)", i + 1, n, c.config.describe(),
                    ms_text(c.screen.median_ms), ms_text(c.predicted_ms), c.screen.reps));
  }
  if (!stop_line.empty()) {
    result.early_stop = fmt::format("stopped after {} screened: {}; the {} left {} predicted slower still", stopped_after,
                                    stop_line, stopped, stopped == 1 ? "is" : "are");
    say("screen", n, n, result.early_stop);
  }
  result.screen_s = since(ts);

  // ---- confirm the leaders under the contract, interleaved
  const auto tc = Clock::now();
  std::vector<std::size_t> leaders;
  for (std::size_t i = 0; i < n; ++i)
    if (cands[i].outcome == Outcome::screened && cands[i].screen.reps > 0) leaders.push_back(i);
  std::stable_sort(leaders.begin(), leaders.end(), [&](std::size_t x, std::size_t y) {
    if (cands[x].screen.median_ms != cands[y].screen.median_ms) return cands[x].screen.median_ms < cands[y].screen.median_ms;
    return cands[x].rank < cands[y].rank;
  });
  // With --ranks every candidate is confirmed: the point is to measure them side by side.
  if (ranks.empty() && leaders.size() > std::size_t(options.leaders)) leaders.resize(std::size_t(options.leaders));
  if (options.confirm_planner_pick && result.planner_pick) {
    const std::size_t pick = *result.planner_pick;
    if (cands[pick].outcome == Outcome::screened && cands[pick].screen.reps > 0 &&
        std::find(leaders.begin(), leaders.end(), pick) == leaders.end()) {
      leaders.push_back(pick);
    }
  }
  // One confirmation round of the leaders, interleaved under the contract; `label` tells the rounds apart.
  auto confirm = [&](const std::string& label) {
    std::string names;
    for (std::size_t i : leaders) names += fmt::format("{}rank {}", names.empty() ? "" : ", ", cands[i].rank);
    say("confirm", 0, leaders.size(),
        fmt::format("{} {} leader{} under the contract ({}), interleaved", label, leaders.size(),
                    leaders.size() == 1 ? "" : "s", names));
    std::vector<std::function<Status()>> calls;
    for (std::size_t i : leaders) calls.push_back([&, i] { return run_on(backend, *kernels[i]); });
    measure::Contract contract = options.contract;
    contract.own_threads = device.kind == "cpu" ? tileforge::effective_threads(device) : 1;
    const std::vector<measure::Interleaved> timed = measure::time_interleaved(*timer, contract, calls);
    for (std::size_t k = 1; k <= leaders.size(); ++k) {
      CandidateResult& c = cands[leaders[k - 1]];
      const measure::Interleaved& run = timed[k - 1];
      if (!run.failure.ok()) {
        c.outcome = Outcome::run_failed;
        c.confirmed = false;
        c.reason = fmt::format("run failed while confirming: {}", run.failure.message());
        say("confirm", k, leaders.size(), fmt::format("[confirm {}/{}] rank {} {}: {}", k, leaders.size(), c.rank,
                                                      c.config.describe(), c.reason));
        continue;
      }
      c.confirmed = true;
      c.confirm = measure::summarize_run(run);
      c.noise = relative_iqr(run.samples);
      say("confirm", k, leaders.size(),
          fmt::format("[confirm {}/{}] rank {} {}: median {} (min {}, max {}, {} reps, IQR {:.1f}%)", k, leaders.size(),
                      c.rank, c.config.describe(), ms_text(c.confirm.median_ms), ms_text(c.confirm.min_ms),
                      ms_text(c.confirm.max_ms), c.confirm.reps, 100 * c.noise));
    }
  };
  if (!leaders.empty()) confirm("confirming");
  // The guard (noisy_reason): a winner whose reps disagree, whose median is far from its own fastest rep or from
  // its prediction was measured in a disturbed moment. The whole round runs once more (the winner may change with
  // it, since the others were disturbed too); a winner still noisy after that is reported but not recorded.
  auto picked = pick_winner(cands, options.tie_floor);
  if (picked) {
    const CandidateResult& first = cands[picked->first];
    result.first_noise = noisy_reason(first.confirm, first.predicted_ms);
    if (!result.first_noise.empty()) {
      result.remeasured = true;
      say("confirm", 0, leaders.size(),
          fmt::format("the winner, rank {}, looks disturbed: its {}; measuring again", first.rank, result.first_noise));
      // Leaders that failed to run are not run again.
      std::erase_if(leaders, [&](std::size_t i) { return cands[i].outcome != Outcome::screened; });
      confirm("re-confirming");
      picked = pick_winner(cands, options.tie_floor);
      if (picked) {
        const CandidateResult& second = cands[picked->first];
        result.noisy = noisy_reason(second.confirm, second.predicted_ms);
      }
    }
  }
  result.confirm_s = since(tc);

  // ---- the winner, and how the planner's pick compares with it
  if (const auto& w = picked) {
    result.winner = w->first;
    result.winner_reason = w->second;
    const CandidateResult& win = cands[w->first];
    result.winner_tflops = p.flops() / (win.confirm.median_ms * 1e-3) / 1e12;
    if (result.planner_pick && cands[*result.planner_pick].confirmed) {
      result.planner_fraction = win.confirm.median_ms / cands[*result.planner_pick].confirm.median_ms;
    }
    say("done", 0, 0,
        fmt::format("winner: rank {} {}: median {} ({:.1f} GFLOP/s), {}", win.rank, win.config.describe(),
                    ms_text(win.confirm.median_ms), result.winner_tflops * 1e3, result.winner_reason));
  } else {
    result.warnings.push_back(fmt::format("no candidate could run and pass verification for {}", p.describe()));
  }

  // ---- the DB: the winner under the running device's fingerprint
  if (!options.write_db) {
    result.db_outcome = "disabled";
    if (!result.noisy.empty()) {
      result.warnings.push_back(fmt::format("the winner's {} after a second measurement (it would not be recorded)",
                                            result.noisy));
    }
  } else if (result.winner && !result.noisy.empty() && !options.store_noisy) {
    // Not an error: the tune did its job and says why it keeps the result out of the DB (exit status 0).
    result.db_outcome = fmt::format("not stored: the winner's {} after a second measurement", result.noisy);
    result.warnings.push_back(fmt::format("{} was not recorded: the winner's {} after a second measurement; tune "
                                          "again on a quieter machine",
                                          p.describe(), result.noisy));
  } else if (result.winner) {
    if (!result.noisy.empty()) {
      result.warnings.push_back(fmt::format("{} was recorded although the winner's {} after a second measurement "
                                            "(--store-noisy)",
                                            p.describe(), result.noisy));
    }
    const CandidateResult& win = cands[*result.winner];
    db::Record r;
    r.device = dispatch::running_fingerprint(running);
    r.backend = result.backend;
    const auto versions = dispatch::current_family_versions();
    const auto v = versions.find(win.config.family);
    r.family_version = v == versions.end() ? 0 : v->second;
    r.problem = db::signature_of(p);
    r.config = win.config;
    r.time.median_ms = win.confirm.median_ms;
    r.time.min_ms = win.confirm.min_ms;
    r.time.max_ms = win.confirm.max_ms;
    r.time.reps = win.confirm.reps;
    // The spread and the host load go with it, so that dispatch can pass over a record measured noisy or on a busy
    // host (--store-noisy stores those). The host load only where the counters were read (-1: unknown).
    r.time.q1_ms = win.confirm.q1_ms;
    r.time.q3_ms = win.confirm.q3_ms;
    if (win.confirm.others_cores >= 0) {
      r.time.others_cores = win.confirm.others_cores;
      if (win.confirm.spare_cores >= 0) r.time.spare_cores = win.confirm.spare_cores;
    }
    r.tflops = result.winner_tflops;
    r.rel_error = win.error ? win.error->rel_error : 0;
    r.max_scaled_error = win.error ? win.error->max_scaled_error : 0;
    r.tool_version = result.tool_version;
    r.source = db::Source::tuned;
    auto store = db::Store::open(options.db_path);
    if (!store) {
      result.db_outcome = "error: " + store.status().message();
    } else if (auto u = store->upsert(r); !u) {
      result.db_outcome = "error: " + u.status().message();
    } else {
      result.db_path = options.db_path;
      result.db_outcome = std::string(db::to_string(*u));
    }
    if (result.db_outcome.starts_with("error")) result.warnings.push_back("the winner was not recorded: " + result.db_outcome);
  } else {
    result.db_outcome = "nothing to record";
  }
  result.total_s = since(t0);
  return result;
}

}  // namespace tileforge::tune
