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
#include "measure/memory_budget.hpp"
#include "measure/protocol.hpp"
#include "measure/timer.hpp"
#include "plan/kernel_family.hpp"
#include "core/expected.hpp"
#include "db/location.hpp"
#include "verify/verify.hpp"

namespace tileforge::bench {

// A bench run's settings: the measurement contract, and what is run under it.
struct Settings : measure::Contract {
  std::vector<std::pair<std::string, int64_t>> pins;  // --set NAME=VALUE, applied to our backend's space
  db::LocationRequest db;       // --db PATH / --no-db: the tuning DB dispatch reads (see dispatch/dispatch.hpp)
  bool use_planner = true;      // false: the backend's heuristic when the DB has no record
  bool deterministic = true;    // false (--nondeterministic): configs summing by float atomics allowed
  bool measure = true;          // false: verify only (the `verify` verb)
  // --config-peers: also time, as peers, other tuners' config lists for our family's kernel (KernelFamily::
  // config_peers); each list's best verified config is that peer's row.
  bool config_peers = false;
  // --max-memory: the bytes a case may allocate, on the host and on the device, in place of the host's MemAvailable
  // (and of no device check); nullopt uses MemAvailable for the host.
  std::optional<uint64_t> max_memory;
};

// The protocol's pieces the harness and its callers use by these names.
using measure::CpuTimer;
using measure::Interleaved;
using measure::make_timer;
using measure::OperandBuffer;
using measure::RepTimer;
using measure::summarize;
using measure::time_interleaved;
using measure::Timing;

// One backend's result on one case.
struct Measured {
  std::string backend;          // "cpu", "openblas", "onednn", ...
  Config config;                // what ran (family plus parameters; vendor libraries report their own name)
  std::string implementation;   // a vendor library's own name for what it ran (Kernel::implementation), or ""
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
  // More configs of our backend measured in the same interleaved rounds and on the same operands as `config`, each
  // verified against the same reference (the ladder's candidates; empty for bench).
  std::vector<Config> variants;
  // The config peers (Settings::config_peers): each one's configs are variants [first, first + configs.size()).
  struct PeerList {
    plan::ConfigPeer peer;
    std::size_t first = 0;
  };
  std::vector<PeerList> peer_lists;
};

// Validates the problem and resolves our config through dispatch (pins, tuning DB, planner, heuristic).
// invalid_argument for a bad problem or a bad --set.
Expected<CasePlan> plan_case(const Device& device, const Problem& problem, const Settings& settings);

// plan_case for every problem, on all host cores at once (planning a large GPU space takes about a second per
// shape, and a suite has dozens); the plans in the problems' order, or the first problem's error in that order.
Expected<std::vector<CasePlan>> plan_cases(const Device& device, const std::vector<Problem>& problems,
                                           const Settings& settings);

// The bottleneck verdict of a measured row (issue 17): the cost model's binding limit for the config that ran, and
// how much of that limit the measurement reached: the time the binding term alone would take over the measured time.
struct Verdict {
  std::string bound;          // "compute", a memory level ("HBM", "DRAM", "L2", ...), or "latency"
  double limit_ms = 0;        // the binding term's time alone
  double fraction = 0;        // limit_ms / measured median: 1 = at the limit
  bool below = false;         // fraction < kVerdictFlag: the first question the article asks
};
inline constexpr double kVerdictFlag = 0.70;

// The verdict for `m` (a config of ours, timed) on `device`; nullopt when the family cannot price it.
std::optional<Verdict> verdict_for(const Device& device, const Problem& problem, const Measured& m);

struct CaseResult {
  CasePlan plan;
  std::optional<Measured> ours;   // our kernel; empty when it failed (see ours_failure)
  std::string ours_failure;       // why ours did not run (prepare or run error), when it did not
  bool fallback = false;          // ours failed and the native call ran in its place: never counted as ours
  std::optional<Measured> native;
  std::string native_missing;     // why there is no native result (none exists, not loadable, or it failed)
  std::vector<Measured> peers;
  // CasePlan::variants in order: each measured, or the reason it could not run or failed verification.
  std::vector<Expected<Measured>> variants;
  std::optional<Verdict> verdict;  // ours' bottleneck verdict (none for a fallback row or an unpriced config)
  std::optional<double> threshold;  // the error ceiling ours is held to (verify::threshold with the native's error)
  Status check;                   // ours against the threshold (ok when ours did not run)
  double peak_tflops = 0;         // the profile's peak for this precision and accumulator; 0 when unknown
  std::vector<std::string> warnings;
  std::string refused;            // why the case ran nothing at all (its memory), when it did not: an error

  // The row's own numbers: ours, or the native call when this is a fallback row; nullptr when neither ran.
  const Measured* row() const;
  // native median / row median; empty without a native, for a fallback row, or when nothing was timed.
  std::optional<double> ratio() const;
  double peak_fraction() const;
  std::optional<double> gbps() const;  // compulsory traffic (A, B, C once) over row()'s median time
  std::optional<double> gbps(const Measured& m) const;  // the same traffic over m's median (the native call, a peer)
};

// What run_case allocates for this plan at its peak (measure/memory_budget.hpp): the operands and their placed
// copies, one C per backend taking part (ours, the native library, peers), and the host's float64 reference.
measure::MemoryNeed memory_need(const Device& device, const CasePlan& plan, const Settings& settings,
                                const RepTimer& timer);

// Runs one planned case on the device with the given timer. Never fails as a whole: failures of ours, the native
// library or peers are recorded in the result (fallback, native_missing, warnings). A case whose memory_need is more
// than the limit (Settings::max_memory, else the host's available memory) is refused before anything is allocated,
// with neither ours nor native run; a std::bad_alloc that slips past the estimate is recorded the same way.
CaseResult run_case(const Device& device, const CasePlan& plan, const Settings& settings, RepTimer& timer);

// Prepares our kernel of every plan (and each distinct variant config) once, on all host cores at once, so that
// run-time compilation (NVRTC, Triton) of a whole suite overlaps instead of adding up; the kernels land in the JIT's caches and each case's own prepare
// then finds them. Failures are left for run_case to report. Returns the seconds it took.
double precompile(const Device& device, const std::vector<CasePlan>& plans);

}  // namespace tileforge::bench
