// Host measurements kept across processes: the FMA peak and memory bandwidth a busy machine measures low, never high.
#pragma once

#include <optional>
#include <string>

namespace tileforge::hw {

// The numbers a process should use for this host, and where they came from.
struct HostMeasurements {
  double fma_gflops = 0;      // the highest FMA peak measured on this host so far (this process's included)
  double bandwidth_gbps = 0;  // the highest read bandwidth measured so far
  int processes = 1;          // how many processes' measurements the file holds for this host
  std::string since;          // date of the first one ("" when nothing was stored)
  std::string file;           // the file read and written; "" when disabled or unusable
};

// Where measurements are kept: $TILEFORGE_HOST_CACHE (a file path, or "off" to keep none), else
// $XDG_CACHE_HOME/tileforge/host-cpu.json (an absolute XDG path), else $HOME/.cache/tileforge/host-cpu.json.
// Empty when disabled or no location is known.
std::string host_measurements_file();

// Combines this process's measurements with the ones stored for `host_key` (the CPU's brand, usable cores and FMA
// ISA: a change of any is another host) and stores the result: each number is the highest seen, because another
// process's load can only slow a measurement down. Planning is then the same in every process on the host instead
// of following each start-up's noise. A missing, unreadable or malformed file is replaced; a file that cannot be
// written leaves this process's own numbers in use. `today` is stored as the first date.
HostMeasurements remember_host_measurements(const std::string& host_key, double fma_gflops, double bandwidth_gbps,
                                            const std::string& today);

// What is stored for `host_key`, read only (nothing is written): for library calls, which never measure. nullopt
// when no file, no entry for this host, or no plausible FMA peak is stored.
std::optional<HostMeasurements> stored_host_measurements(const std::string& host_key);

}  // namespace tileforge::hw
