// Internals the tuner's files share (src/tune/tune*.cpp only): one tune in progress, its testbed, and its steps.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/planner.hpp"
#include "tune/tune.hpp"
#include "verify/verify.hpp"

namespace tileforge::tune::detail {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A time for progress lines and reasons: "412.3 ms", "1.234 ms", "0.0123 ms".
std::string ms_text(double ms);

// One tune in progress: what it was asked, the result it fills in step by step, and how it reports.
struct Session {
  Session(const Device& d, const TuneOptions& o, const ProgressFn& p, Clock::time_point start)
      : device(d), options(o), progress(p), t0(start) {}

  const Device& device;
  const TuneOptions& options;
  const ProgressFn& progress;
  Clock::time_point t0;   // when tune() was called: the budget counts from here
  TuneResult result;
  Backend* backend = nullptr;
  std::vector<int> ranks;  // --ranks, sorted, without repeats; empty without --ranks
  std::vector<std::unique_ptr<Kernel>> kernels;  // by candidate index; null where prepare failed or was skipped

  const Problem& problem() const { return result.problem; }
  std::vector<CandidateResult>& candidates() { return result.candidates; }
  void say(std::string phase, std::size_t index, std::size_t total, std::string line) const {
    if (progress) progress(Progress{std::move(phase), index, total, std::move(line)});
  }
  // Whether the budget (planning, compiling and screening) is spent.
  bool spent() const { return options.budget_s > 0 && since(t0) >= options.budget_s; }
};

// What every candidate (and the native library) is verified and timed on: the operands as bench makes them (same
// seeds: the same inputs as a bench row), generated where the device reads them (each held once on the CPU), the
// float64 reference and the timer.
class Testbed {
 public:
  static Expected<std::unique_ptr<Testbed>> make(const Problem& p, const Device& device, const TuneOptions& options);
  // One call of the kernel on the operands.
  Status run(Backend* backend, const Kernel& kernel);
  // Verification run: one call on reset C, compared with the float64 reference.
  Expected<verify::ErrorReport> verify_once(Backend* backend, const Kernel& kernel);
  measure::RepTimer& timer() { return *timer_; }

 private:
  explicit Testbed(const Problem& p) : p_(p) {}
  Status reset_c();
  Expected<verify::ErrorReport> measure_error();

  const Problem& p_;
  std::unique_ptr<measure::RepTimer> own_timer_;
  measure::RepTimer* timer_ = nullptr;
  std::unique_ptr<measure::OperandBuffer> a_dev_, b_dev_, c_init_dev_, c_dev_;
  bool device_reference_ = false;
  verify::Reference reference_;
  // The device's reference, computed by the first verification (the native library's, for the threshold) and
  // compared against by every candidate's: the operands do not change while the testbed lives.
  std::unique_ptr<measure::KeptReference> kept_;
};

// ---- the steps of tune(), in order -----------------------------------------------------------------------------

// tune.cpp: the candidates to measure, from the plan (its top N, every rank, or --ranks; the backend's own pick).
// Indexes into `ranked` of the first n candidates when at most `cap` of each run of ties (predicted times within
// kTieBand of the run's first) are taken; the rest of a run fills up only where fewer than n remain. Rank order.
std::vector<std::size_t> top_with_tie_cap(const std::vector<plan::Candidate>& ranked, std::size_t n, std::size_t cap);
Status select_candidates(Session& s, const plan::Plan& plan);
// tune_prepare.cpp: compiling (run-time compiled families, on all host cores), preparing, the error threshold.
Status compile_ahead(Session& s, const std::string& family);
void prepare_kernels(Session& s);
void set_error_threshold(Session& s, Testbed& bed);
// tune_measure.cpp: screening in the planner's order with the early stop, then the leaders' confirmation.
void screen_candidates(Session& s, Testbed& bed);
std::optional<std::pair<std::size_t, std::string>> confirm_leaders(Session& s, Testbed& bed);
// tune_winner.cpp: the winner, and its record in the DB.
void announce_winner(Session& s, const std::optional<std::pair<std::size_t, std::string>>& picked);
void record_winner(Session& s, const Device& running);

}  // namespace tileforge::tune::detail
