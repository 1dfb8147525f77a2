// Internals the host CPU detection files share (src/hw/detect_cpu*.cpp only): CPUID access and sysfs reading.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#define TILEFORGE_X86 1
#include <cpuid.h>
#endif

namespace tileforge::hw::detail {

struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

#if TILEFORGE_X86
// Leaves above the CPU's maximum return garbage on some parts, so every query checks the range first.
inline std::optional<Regs> cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return std::nullopt;
  return r;
}

inline bool bit(uint32_t reg, int b) { return (reg >> b) & 1u; }
#endif

// Without leading and trailing white space (and NULs, which CPUID's brand string pads with).
inline std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c) && c != 0; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// The first line of a (sysfs) file, trimmed; nullopt when it cannot be read.
std::optional<std::string> read_first_line(const std::string& path);

// Hardware threads per core from sysfs (cpu_dir/topology/thread_siblings_list); 1 when unknown.
int sysfs_threads_per_core(const std::string& cpu_dir);

// The CPUs this process may run on (sched_getaffinity); empty where the OS does not say.
std::vector<int> usable_cpu_ids();

}  // namespace tileforge::hw::detail
