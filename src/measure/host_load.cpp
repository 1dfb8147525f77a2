// Other processes' CPU time over a timed window: /proc/stat's busy time less this process's getrusage.
#include "measure/host_load.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tileforge::measure {
namespace {

// Busy CPU seconds of the whole machine since boot (every CPU), from /proc/stat's aggregate line.
std::optional<double> machine_busy_seconds() {
  std::FILE* f = std::fopen("/proc/stat", "re");
  if (!f) return std::nullopt;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  const int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait,
                              &irq, &softirq);
  std::fclose(f);
  const long ticks = sysconf(_SC_CLK_TCK);
  if (got != 7 || ticks <= 0) return std::nullopt;
  return double(user + nice + system + irq + softirq) / double(ticks);
}

std::optional<double> own_cpu_seconds() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return std::nullopt;
  auto s = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

int HostLoadWindow::cores() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}

HostLoadWindow::HostLoadWindow()
    : wall_(std::chrono::steady_clock::now()), machine_busy_s_(machine_busy_seconds()), own_s_(own_cpu_seconds()) {}

std::optional<double> HostLoadWindow::others_cores() const {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
  if (wall < 0.05 || !machine_busy_s_ || !own_s_) return std::nullopt;
  const auto busy = machine_busy_seconds();
  const auto own = own_cpu_seconds();
  if (!busy || !own) return std::nullopt;
  // The two counters tick differently (10 ms against microseconds): a small negative difference is rounding.
  return std::max(0.0, ((*busy - *machine_busy_s_) - (*own - *own_s_)) / wall);
}

}  // namespace tileforge::measure
