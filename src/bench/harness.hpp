// The benchmark harness: one case = ours against the native library and peers, verified once, then timed in
// interleaved rounds on the same operands (DESIGN.md, "Benchmark contract").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "bench/timer.hpp"
#include "core/expected.hpp"
#include "db/location.hpp"
#include "verify/verify.hpp"

namespace tileforge::bench {

// The measurement protocol's knobs; the defaults are the contract's.
struct Settings {
  int min_reps = 30;            // timed reps per backend, at least
  double min_time_s = 0.1;      // and at least this much timed time per backend
  double max_time_s = 10.0;     // cap on the timed time (and on the warm-up) per backend
  int warmup_reps = 0;          // at least this many warm-up reps per backend; 0 = the timer's minimum
  double warmup_time_s = 0.1;   // and at least this much warm-up time per backend
  uint64_t seed = 42;           // operands are random from this seed, never zeros
  std::vector<std::pair<std::string, int64_t>> pins;  // --set NAME=VALUE, applied to our backend's space
  db::LocationRequest db;       // --db PATH / --no-db: the tuning DB dispatch reads (see bench/dispatch.hpp)
  bool use_planner = true;      // false: the backend's heuristic when the DB has no record
  bool measure = true;          // false: verify only (the `verify` verb)
  double reference_full_limit = 2.0e9;  // above this many multiply-adds the reference samples rows of C
};

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
  // The contract's spread symptom: max/min above 1.10 (an unflushed cache, unpinned threads, a noisy neighbour).
  bool spread() const { return min_ms > 0 && max_ms / min_ms > 1.10; }
};
Timing summarize(std::vector<double> samples_ms);

// One call timed by time_interleaved, and what became of it.
struct Interleaved {
  std::vector<double> samples;  // its timed reps, in ms
  Status failure;               // the status of the rep that failed (the call then dropped out); ok otherwise
};
// The contract's timing loop: the calls are run in interleaved rounds (one rep of each in turn) so that drift and
// neighbours hit all alike. Warm-up rounds until every call has max(warmup_reps, the timer's minimum) untimed
// reps and warmup_time_s (at most max_time_s), then timed rounds until every call has min_reps and min_time_s of
// timed time, or max_time_s. A call whose rep fails is not run again. Used by bench (ours, native, peers) and by
// tune's confirmation (its leaders).
std::vector<Interleaved> time_interleaved(RepTimer& timer, const Settings& settings,
                                          const std::vector<std::function<Status()>>& calls);

// One backend's result on one case.
struct Measured {
  std::string backend;          // "cpu", "openblas", "onednn", ...
  Config config;                // what ran (family plus parameters; vendor libraries report their own name)
  Timing timing;                // empty when only verified
  double tflops = 0;
  verify::ErrorReport error;
};

// What plan_case decides before anything runs, so that bad input (pins, sizes) is refused up front.
struct CasePlan {
  Problem problem;              // normalized and validated
  Backend* ours = nullptr;      // tileforge's own backend for the device (nullptr when none is built)
  Config config;                // ours' config, as dispatch chose it (bench/dispatch.hpp)
  // "pinned", "db-exact", "db-bucket", "db-arch", "planner" or "heuristic", and the one-line reason.
  std::string config_source;
  std::string config_reason;
  std::string ours_unavailable; // non-empty when ours cannot run this case (the row then falls back)
};

// Validates the problem and resolves our config through dispatch (pins, tuning DB, planner, heuristic).
// invalid_argument for a bad problem or a bad --set.
Expected<CasePlan> plan_case(const Device& device, const Problem& problem, const Settings& settings);

// plan_case for every problem, on all host cores at once (planning a large GPU space takes about a second per
// shape, and a suite has dozens); the plans in the problems' order, or the first problem's error in that order.
Expected<std::vector<CasePlan>> plan_cases(const Device& device, const std::vector<Problem>& problems,
                                           const Settings& settings);

struct CaseResult {
  CasePlan plan;
  std::optional<Measured> ours;   // our kernel; empty when it failed (see ours_failure)
  std::string ours_failure;       // why ours did not run (prepare or run error), when it did not
  bool fallback = false;          // ours failed and the native call ran in its place: never counted as ours
  std::optional<Measured> native;
  std::string native_missing;     // why there is no native result (none exists, not loadable, or it failed)
  std::vector<Measured> peers;
  std::optional<double> threshold;  // the error ceiling ours is held to (verify::threshold with the native's error)
  Status check;                   // ours against the threshold (ok when ours did not run)
  double peak_tflops = 0;         // the profile's peak for this precision and accumulator; 0 when unknown
  std::vector<std::string> warnings;

  // The row's own numbers: ours, or the native call when this is a fallback row; nullptr when neither ran.
  const Measured* row() const;
  // native median / row median; empty without a native, for a fallback row, or when nothing was timed.
  std::optional<double> ratio() const;
  double peak_fraction() const;
  std::optional<double> gbps() const;  // compulsory traffic (A, B, C once) over the median time
};

// Runs one planned case on the device with the given timer. Never fails as a whole: failures of ours, the native
// library or peers are recorded in the result (fallback, native_missing, warnings).
CaseResult run_case(const Device& device, const CasePlan& plan, const Settings& settings, RepTimer& timer);

// Prepares our kernel of every plan once, on all host cores at once, so that run-time compilation (NVRTC) of a
// whole suite overlaps instead of adding up; the kernels land in the JIT's caches and each case's own prepare
// then finds them. Failures are left for run_case to report. Returns the seconds it took.
double precompile(const Device& device, const std::vector<CasePlan>& plans);

}  // namespace tileforge::bench
