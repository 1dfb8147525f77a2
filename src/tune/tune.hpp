// The tuner: measures the planner's best candidates (or its whole space) on the device, verifies each, confirms
// the leaders under the benchmark contract, picks a winner by a deterministic rule and records it in the DB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "db/record.hpp"
#include "measure/protocol.hpp"
#include "measure/timer.hpp"
#include "core/expected.hpp"
#include "plan/candidates.hpp"
#include "verify/verify.hpp"

namespace tileforge::tune {

// Predicted times within this fraction of each other are ties for TuneOptions::tie_cap: the cost model's own
// resolution is coarser (its constants are fitted to a few percent).
inline constexpr double kTieBand = 1e-3;

// What tune() does; the defaults are docs/TUNING.md's.
struct TuneOptions {
  // ---- which candidates
  int top = 16;                  // the planner's best `top` configs, in its order (not used with exhaustive)
  // Of configs the cost model prices alike (predicted times within kTieBand of the first of their run in the
  // ranking), at most this many count towards `top`; the others come after the ranking's end (0 = no cap). The
  // model cannot order such configs, so a top N of 40 near-copies (GROUP_M, epilogue variants of one tile) measures
  // one point of the space; the cap spends the same N on distinct predictions (docs/TUNING.md, "ties").
  int tie_cap = 2;
  bool exhaustive = false;       // every config the planner ranks (a GPU family's full space; a CPU family's coarse grid)
  std::string family;            // the planner's family; empty = by the profile
  plan::Pins pins;               // --set: only candidates with these values
  bool deterministic = true;     // false (--nondeterministic): configs summing by float atomics compete too
  bool with_heuristic = true;    // also the backend's own pick when the planner ranks it below the top N
  // Exactly these planner ranks (1-based), every one screened and confirmed, with no early stop: re-measures
  // chosen configs of an earlier tune or exhaustive search side by side in one run. Not with top/exhaustive.
  std::vector<int> ranks;
  // ---- time
  double budget_s = 0;           // bound on planning + compiling + screening, seconds; 0 = none
  // ---- screening: a few reps per candidate, after its verification run
  int screen_warmup_reps = 1;    // untimed reps after the verification run
  int screen_reps = 3;           // timed reps, at least
  double screen_time_s = 0.02;   // and at least this much timed time (or wall time, if that comes first)
  double screen_cap_s = 1.0;     // but stop once this much is timed (slow candidates: at least one rep)
  bool early_stop = true;        // the model-based stop (docs/TUNING.md); exhaustive never stops early
  int early_stop_after = 3;      // verified, screened candidates before the rule may stop
  // The model is trusted only beyond this: a candidate must look this much slower. 10%: replaying the rule on the
  // five H200 exhaustive searches (docs/TUNING.md), 5% lost 0.7% on 4095x4097x4093 and 10% lost nothing.
  double early_stop_slack = 0.10;
  // ---- confirmation under the contract
  int leaders = 3;               // the fastest screened candidates confirmed
  bool confirm_planner_pick = true;  // also confirm the planner's first choice, so its ratio to the winner is fair
  measure::Contract contract;      // warm-up, min reps/time and cap as bench; its seed makes the operands
  double tie_floor = 0.01;       // medians closer than max(this, the runs' noise) tie; ties go to the planner's rank
  // ---- compiling (run-time compiled families only)
  unsigned compile_threads = 0;  // 0 = all host cores
  std::string kernel_cache_dir;  // "" = the shared kernel cache, which prepare() reads
  // ---- the DB
  bool write_db = true;
  bool store_noisy = false;      // record a winner that stays noisy after the second measurement (and say so)
  std::string db_path;           // where the winner goes (db::resolve_location decides it); needed when write_db
  // Where the winner's record goes instead of the DB at db_path (when write_db): an MPI rank other than 0 sends it
  // to rank 0, which alone writes the DB. Returns what becomes TuneResult::db_outcome, or an error. Empty = the DB.
  std::function<Expected<std::string>(const db::Record&)> record_sink;
  // ---- injected by tests; nullptr = the device's own backend and timer
  Backend* backend = nullptr;
  measure::RepTimer* timer = nullptr;
};

// What happened to one candidate.
enum class Outcome {
  screened,        // verified and timed
  prepare_failed,  // compile or prepare failed: skipped
  run_failed,      // failed when run (verification run, screening or confirmation): skipped
  over_threshold,  // verified over its error threshold: can never win
  early_stopped,   // not screened: the model says it cannot beat the best measured
  over_budget,     // not screened (or not compiled): the budget was spent
};
std::string_view to_string(Outcome);

struct CandidateResult {
  int rank = 0;                   // the planner's rank (1 = its choice)
  bool heuristic = false;         // the backend's own pick, added below the top N (never stopped early)
  Config config;
  double predicted_ms = 0;        // the cost model's time
  Outcome outcome = Outcome::screened;
  std::string reason;             // why it was skipped, failed or stopped; empty when screened
  double compile_s = 0;           // ahead-of-time compile (run-time compiled families)
  bool cache_hit = false;
  double prepare_s = 0;
  std::optional<verify::ErrorReport> error;  // from its verification run
  measure::Timing screen;           // screening reps (reps = 0: not screened)
  double ratio = 0;               // screen median / predicted
  bool confirmed = false;         // taken to the confirmation round
  measure::Timing confirm;          // under the contract (reps = 0: not confirmed)
  double noise = 0;               // interquartile range of the confirmation reps / their median
};

struct TuneResult {
  Problem problem;                // normalized
  std::string device;             // what ran: "cpu" or the GPU's name
  std::string profile;            // the planning profile
  std::string backend, family;
  std::string coverage;           // what the planner enumerated
  std::size_t space_size = 0;     // legal configs the planner ranked (the space exhaustive measures)
  std::vector<CandidateResult> candidates;  // in the planner's order
  std::string heuristic_name;     // the backend's own pick's name when it was added below the top N
  std::size_t measured = 0;       // candidates screened
  std::optional<std::size_t> winner;        // index into candidates; empty when none could run
  std::string winner_reason;      // "fastest median", or the tie it won by rank
  std::optional<std::size_t> planner_pick;  // index of the planner's choice (rank 1) when it is a candidate
  // Winner median / planner pick median under the contract: the planner's pick reaches this fraction of the
  // tuned best (1 when it won). Empty when the pick was not confirmed.
  std::optional<double> planner_fraction;
  std::string early_stop;         // the rule's line when it stopped screening; empty otherwise
  bool budget_hit = false;
  std::optional<double> threshold;          // the error ceiling candidates were held to
  std::string native;             // the vendor library whose error sets the threshold, or why none
  std::optional<double> native_error;
  double winner_tflops = 0;
  // Where the time went (seconds).
  double plan_s = 0, compile_s = 0, prepare_s = 0, reference_s = 0, screen_s = 0, confirm_s = 0, total_s = 0;
  unsigned compile_threads = 0;
  // The DB.
  std::string db_path;            // empty when not written
  std::string db_outcome;         // "inserted", "replaced", "kept" (a faster record was there), "disabled",
                                  // "not stored: WHY" (the winner stayed noisy, see noisy_reason), or the error
  // The guard on the winner (docs/TUNING.md, "Noisy winners"): whether its confirmation was noisy and the leaders
  // were measured a second time, and why the winner was still noisy after that (empty: clean, and recordable).
  bool remeasured = false;
  std::string first_noise;        // why the first confirmation was not trusted; empty when it was clean
  std::string noisy;              // why the winner is not recorded; empty when clean
  std::string tool_version;
  uint64_t seed = 0;
  std::vector<std::string> warnings;

  const CandidateResult* best() const { return winner ? &candidates[*winner] : nullptr; }
};

// One progress line for people ("[5/16] screening FAMILY MR=6 ... 0.43 ms"), with where it stands.
struct Progress {
  std::string phase;   // "plan", "compile", "prepare", "screen", "confirm", "done"
  std::size_t index = 0, total = 0;
  std::string line;
};
using ProgressFn = std::function<void(const Progress&)>;

// Tunes one problem on the device. Refused (invalid_argument) for an invalid problem or options, pins the space
// rejects, or a profile planned for another backend than the device runs; unsupported when the planner serves no
// family for it. A run where no candidate works is not an error: the result has no winner and every candidate says
// why. The winner is upserted into the DB at options.db_path unless write_db is false.
Expected<TuneResult> tune(const Problem& problem, const Device& device, const TuneOptions& options,
                          const ProgressFn& progress = {});

// What tune() checks before it measures anything (options, problem, backend, pins, family, profile), so that a
// caller can refuse bad input before a long run starts.
Status check(const Problem& problem, const Device& device, const TuneOptions& options);

// The tie rule (docs/TUNING.md), exposed for tests: among confirmed candidates, the fastest median f; every
// candidate whose median is within max(tie_floor, f's median uncertainty, its own) of f's ties with it, as long as
// every candidate faster than it ties too (the ties are a run from f on); the tied one of best planner rank wins. Returns the index into `candidates` and the reason line; nullopt when none is confirmed.
std::optional<std::pair<std::size_t, std::string>> pick_winner(const std::vector<CandidateResult>& candidates,
                                                               double tie_floor);

// How far a candidate's confirmed median may be off, relative: 1.57 x its reps' relative IQR / sqrt(reps), the
// half-width of a median's ~95% interval (a box plot's notch). The tie rule compares medians with it.
double median_uncertainty(const CandidateResult& c);

// The guard on what the DB gets: a winner whose confirmation looks disturbed is measured once more and, if it is
// still disturbed, not recorded (dispatch would run it everywhere on the strength of one bad moment). The bounds, and
// why each, in one place:
//  - its reps' interquartile range over their median above measure::kSpreadIqrLimit (0.30): the contract's own
//    spread rule, calibrated in docs/BENCHMARKING.md (quiet CPU suites flag nothing, runs beside a compile do);
//  - its median above kWinnerMedianOverMin (2) x its own fastest rep: a kernel does the same work every rep, so when
//    half its reps take twice its best time, the machine, not the kernel, set the median;
//  - its median above kWinnerMedianOverPredicted (4) x the cost model's prediction, and more than
//    kWinnerPredictionFloorMs above it: on quiet machines the CPU and H200 medians are 0.3-2x their prediction
//    (docs/TUNING.md), so 4x is a disturbance or a model fault worth a look; the floor is there because the model
//    prices no call overhead (thread wake-up, a launch), which alone makes sub-10-microsecond calls 10-90x theirs.
inline constexpr double kWinnerMedianOverMin = 2.0;
inline constexpr double kWinnerMedianOverPredicted = 4.0;
inline constexpr double kWinnerPredictionFloorMs = 0.05;

// Why a confirmed timing is too noisy to record ("its reps spread 0.42 of the median (limit 0.30)"), every bound it
// breaks, joined by "; "; empty when it is clean. predicted_ms <= 0 (no prediction) skips the prediction bound.
std::string noisy_reason(const measure::Timing& timing, double predicted_ms);

// Interquartile range / median of samples (0 for fewer than 2): the run-to-run noise the tie rule tolerates.
double relative_iqr(std::vector<double> samples);

}  // namespace tileforge::tune
