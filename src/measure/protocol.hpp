// The measurement protocol shared by bench and tune: the contract's knobs, the interleaved timing loop and its
// summary (median, min, max, spread).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "measure/host_load.hpp"
#include "measure/timer.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::measure {

// The contract's knobs; the defaults are the contract's (docs/BENCHMARKING.md).
struct Contract {
  int min_reps = 30;            // timed reps per call, at least
  double min_time_s = 0.1;      // and at least this much timed time per call
  double max_time_s = 10.0;     // cap on the timed time (and on the warm-up) per call
  int warmup_reps = 0;          // at least this many warm-up reps per call; 0 = the timer's minimum
  double warmup_time_s = 0.1;   // and at least this much warm-up time per call
  uint64_t seed = 42;           // operands are random from this seed, never zeros
  double reference_full_limit = 2.0e9;  // above this many multiply-adds the float64 reference samples rows of C
  int own_threads = 1;          // threads the timed calls keep busy (a CPU team; 1 for a GPU's host thread)
};

// The contract's spread rule: the interquartile range of the reps over their median. Robust where max/min is not
// (one descheduled rep of a hundred moves max/min, not the quartiles); the limit is calibrated in
// docs/BENCHMARKING.md (quiet runs of the CPU suite flag nothing, runs beside a compiler flag the disturbed rows).
inline constexpr double kSpreadIqrLimit = 0.30;

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double q1_ms = 0, q3_ms = 0;  // first and third quartiles of the reps (linear interpolation between order statistics)
  int reps = 0;
  // Other processes' use of the machine while these reps ran, in cores (host_load.hpp), and the cores our threads
  // left them; -1 where unknown.
  double others_cores = -1, spare_cores = -1;
  // (q3 - q1) / median; 0 with no reps.
  double iqr_share() const { return median_ms > 0 ? (q3_ms - q1_ms) / median_ms : 0.0; }
  // The contract's spread symptom (an unflushed cache, unpinned threads, a noisy neighbour): iqr_share() above the
  // limit.
  bool spread() const { return iqr_share() > kSpreadIqrLimit; }
  // Other processes took cores our threads wanted while these reps ran (kHostBusyCores): even reps may all be slow.
  bool busy() const { return others_cores >= 0 && others_cores > std::max(0.0, spare_cores) + kHostBusyCores; }
};
Timing summarize(std::vector<double> samples_ms);

// One call timed by time_interleaved, and what became of it.
struct Interleaved {
  std::vector<double> samples;  // its timed reps, in ms
  Status failure;               // the status of the rep that failed (the call then dropped out); ok otherwise
  double others_cores = -1;     // other processes' use of the machine over the timed rounds (-1: unknown)
  double spare_cores = -1;      // the machine's cores less the contract's own_threads (-1: unknown)
};
// summarize(run.samples) with the window's others_cores.
Timing summarize_run(const Interleaved& run);
// The contract's timing loop: the calls are run in interleaved rounds (one rep of each in turn) so that drift and
// neighbours hit all alike. Warm-up rounds until every call has max(warmup_reps, the timer's minimum) untimed
// reps and warmup_time_s (at most max_time_s), then timed rounds until every call has min_reps and min_time_s of
// timed time, or max_time_s. A call whose rep fails is not run again. What other processes used of the machine over
// the timed rounds is taken too (the same window for every call: they were interleaved). Used by bench (ours, native, peers) and by
// tune's confirmation (its leaders).
// The timed rounds run the calls in turn forward, then backward (0 1 2 3, 3 2 1 0, ...), so that no call keeps one
// parity in the sequence of reps: on the H200 every other rep of a run of different split-K kernels of about 16 us
// is slower, by up to 7%, and with an even number of calls in a fixed order each call took all its reps at one
// parity (docs/BENCHMARKING.md). Forward and backward, every call gets one rep of each parity per pair of rounds,
// whatever the number of calls. TILEFORGE_INTERLEAVE (a diagnostic) chooses the order: "serpentine" (the default),
// "fixed" (the order before), or "repeat" (serpentine, each timed rep right after an untimed rep of the same call).
enum class InterleaveOrder { serpentine, fixed, repeat };
// TILEFORGE_INTERLEAVE's order, read once; serpentine when unset or unknown.
InterleaveOrder interleave_order();
std::vector<Interleaved> time_interleaved(RepTimer& timer, const Contract& contract,
                                          const std::vector<std::function<Status()>>& calls);
// The same with the order given.
std::vector<Interleaved> time_interleaved(RepTimer& timer, const Contract& contract,
                                          const std::vector<std::function<Status()>>& calls, InterleaveOrder order);

}  // namespace tileforge::measure
