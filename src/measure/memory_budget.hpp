// The memory a bench or verify case needs (host and device), checked against what is available before allocating.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "core/expected.hpp"

namespace tileforge::measure {

// One allocation (or group of them) a case makes: "A", "B", "C in", "C x3", "reference", "upload staging".
struct MemoryTerm {
  std::string name;
  uint64_t bytes = 0;
};

// What one case allocates at its peak, on the host and (GPU runs) on the device. Saturates at UINT64_MAX.
struct MemoryNeed {
  std::vector<MemoryTerm> host, device;
  uint64_t host_bytes() const;
  uint64_t device_bytes() const;
};

// How the harness lays a case out: `participants` backends each get their own C (ours, native, peers);
// `device_operands` when the timer places operands in device memory (a GPU), which then holds A, B, C in and the Cs
// while the host holds the generated copies for a host reference, or else only the largest operand while it is
// uploaded; otherwise (the CPU) the host holds A, B and C in once (generated in place) and the Cs, and
// `host_reference` adds the float64 reference (value and bound per covered element of C, plus the row list) for the
// rows verify::covered_rows keeps under `reference_full_limit`.
struct CaseLayout {
  int participants = 1;
  bool device_operands = false;
  bool host_reference = true;
  double reference_full_limit = 2.0e9;
  // Our kernel's memory beside A, B and C (KernelFamily::workspace_bytes): host memory on the CPU, device memory
  // where `device_operands`.
  uint64_t workspace = 0;
  // Device memory the timer holds through every case (RepTimer::held_bytes: the GPU timer's L2 scrub buffer).
  uint64_t timer_bytes = 0;
};

MemoryNeed case_memory(const Problem& problem, const CaseLayout& layout);

// A limit and where it came from ("MemAvailable", "sysconf", "--max-memory", "the driver's free memory").
struct MemoryLimit {
  uint64_t bytes = 0;
  std::string source;
};

// The host memory available now: /proc/meminfo's MemAvailable (what can be allocated without swapping), else
// sysconf's available pages; nullopt when neither answers.
std::optional<MemoryLimit> host_memory_available();
// MemAvailable from a /proc/meminfo text (kB), for tests; nullopt when the line is missing or malformed.
std::optional<uint64_t> parse_mem_available(std::string_view meminfo);

// ok when the need fits the limits (a missing limit is not checked); otherwise not_available naming the total,
// its terms and the limit, e.g. "needs 23.4 GB of host memory (A 8 GB, ...), more than the 20.1 GB available
// (MemAvailable) — reduce the problem or raise --max-memory".
Status check_memory(const MemoryNeed& need, const std::optional<MemoryLimit>& host,
                    const std::optional<MemoryLimit>& device);

// "23.4 GB", "512 MB", "96 B": decimal units, three significant digits.
std::string format_bytes(uint64_t bytes);

// --max-memory: a byte count, or a number with a decimal suffix K, M, G or T (an optional B after it): "20G",
// "1.5GB", "500000000". invalid_argument naming `name` and what is allowed.
Expected<uint64_t> parse_memory_size(std::string_view text, std::string_view name = "--max-memory");

}  // namespace tileforge::measure
