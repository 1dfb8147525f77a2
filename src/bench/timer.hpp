// How one rep is timed on a device: the CPU uses the steady clock with warm caches; a GPU timer (events, L2
// flushed before each rep) plugs in behind the same interface when the CUDA backend lands.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "backends/backend.hpp"
#include "core/expected.hpp"

namespace tileforge::bench {

// The harness owns warm-up, interleaving and stopping; the timer owns the clock and what happens to the caches
// between reps, since only it knows the device.
class RepTimer {
 public:
  virtual ~RepTimer() = default;
  // What the environment reports: "warm" (operands left in cache, as BLAS benchmarks measure) or "cold-l2".
  virtual std::string_view cache_state() const = 0;
  // The contract's minimum warm-up reps on this device (2 on the CPU, 10 on GPUs).
  virtual int min_warmup_reps() const = 0;
  // Runs `call` once and returns how long it took in milliseconds; a failing call's Status is returned instead.
  virtual Expected<double> time(const std::function<Status()>& call) = 0;
};

// The CPU timer: steady_clock around the call, nothing flushed.
class CpuTimer final : public RepTimer {
 public:
  std::string_view cache_state() const override { return "warm"; }
  int min_warmup_reps() const override { return 2; }
  Expected<double> time(const std::function<Status()>& call) override;
};

// The timer for a device; not_available for a device kind that has none yet.
Expected<std::unique_ptr<RepTimer>> make_timer(const Device& device);

}  // namespace tileforge::bench
