// The CPU rep timer and the choice of timer per device kind.
#include "bench/timer.hpp"

#include <chrono>

#include <fmt/format.h>

namespace tileforge::bench {

Expected<double> CpuTimer::time(const std::function<Status()>& call) {
  const auto start = std::chrono::steady_clock::now();
  Status s = call();
  const auto stop = std::chrono::steady_clock::now();
  if (!s) return s;
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

Expected<std::unique_ptr<RepTimer>> make_timer(const Device& device) {
  if (device.kind == "cpu") return std::unique_ptr<RepTimer>(new CpuTimer());
  return not_available(fmt::format("no benchmark timer for device kind '{}' yet (allowed: cpu)", device.kind));
}

}  // namespace tileforge::bench
