// What else the machine ran while we measured: other processes' CPU time over a window, in cores.
#pragma once

#include <chrono>
#include <optional>

namespace tileforge::measure {

// A timed window is busy when other processes used more than this many cores beyond those our threads left free
// (averaged over the window): a compiler beside a 2-thread run on 2 cores holds a whole core (1.0, busy); beside a
// 1-thread run it takes only the spare core (not busy); a quiet Linux guest's daemons stay under 0.05. Calibrated
// in docs/BENCHMARKING.md. An even slowdown (a neighbour holding one of the cores for the whole run) leaves the
// reps' spread small, so this, not the spread, is what sees it.
inline constexpr double kHostBusyCores = 0.3;

// A window over which the machine's busy CPU time (every process: /proc/stat's user, nice, system, irq and softirq)
// and this process's own (getrusage) are taken; the difference over the window's wall time is what the others
// used. Steal time (a hypervisor running other guests) is not counted: it slows every process alike and shows in
// the reps' spread.
class HostLoadWindow {
 public:
  HostLoadWindow();  // opens the window
  // Other processes' average use of the machine since the window opened, in cores (0 or more); nullopt where the
  // counters cannot be read (not Linux) or the window is shorter than 50 ms (the counters tick every 10 ms).
  std::optional<double> others_cores() const;
  // The CPUs online on the machine (what /proc/stat's busy time is spread over); at least 1.
  static int cores();

 private:
  std::chrono::steady_clock::time_point wall_;
  std::optional<double> machine_busy_s_, own_s_;
};

}  // namespace tileforge::measure
