// Host CPU detection, caches and topology: cache levels from sysfs (CPUID as fallback), hardware threads per core.
#include <fstream>

#include <fmt/format.h>

#include "hw/detect_cpu_detail.hpp"
#include "hw/hw.hpp"

namespace tileforge::hw {

namespace {

using detail::trim;

// "32K", "32768K", "1M", "512" (bytes) as Linux writes cache sizes.
std::optional<int64_t> parse_size(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  std::size_t used = 0;
  int64_t value = std::stoll(text, &used);
  std::string suffix = text.substr(used);
  if (suffix.empty()) return value;
  if (suffix == "K" || suffix == "KB" || suffix == "KiB") return value << 10;
  if (suffix == "M" || suffix == "MB" || suffix == "MiB") return value << 20;
  if (suffix == "G" || suffix == "GB" || suffix == "GiB") return value << 30;
  return std::nullopt;
}

// "0-3,8,10-11" -> 7.
int count_cpu_list(const std::string& text) {
  int count = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string part = trim(text.substr(start, end - start));
    if (!part.empty()) {
      std::size_t dash = part.find('-');
      try {
        if (dash == std::string::npos) {
          std::stoi(part);
          count += 1;
        } else {
          count += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
        }
      } catch (const std::exception&) {
        return 0;
      }
    }
    start = end + 1;
  }
  return count;
}

}  // namespace

namespace detail {

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return trim(line);
}

int sysfs_threads_per_core(const std::string& cpu_dir) {
  auto siblings = read_first_line(cpu_dir + "/topology/thread_siblings_list");
  int n = siblings ? count_cpu_list(*siblings) : 0;
  return n > 0 ? n : 1;
}

#if TILEFORGE_X86
int cpuid_threads_per_core(const std::string& vendor) {
  if (vendor == "AuthenticAMD" || vendor == "HygonGenuine") {
    auto ext = cpuid(0x80000000);
    if (ext && ext->eax >= 0x8000001E) {
      int n = int((cpuid(0x8000001E)->ebx >> 8) & 0xff) + 1;
      if (n > 0) return n;
    }
    return 1;
  }
  auto l0 = cpuid(0);
  if (l0 && l0->eax >= 0xB) {
    Regs r = cpuid(0xB, 0).value_or(Regs{});
    if (((r.ecx >> 8) & 0xff) == 1 && (r.ebx & 0xffff) > 0) return int(r.ebx & 0xffff);
  }
  return 1;
}
#endif

}  // namespace detail

namespace {

using namespace detail;

#if TILEFORGE_X86
// One cache descriptor per subleaf of CPUID leaf 4 (Intel) or 0x8000001D (AMD), same layout in both.
std::vector<CacheLevel> cpuid_cache_leaf(uint32_t leaf, int threads_per_core) {
  std::vector<CacheLevel> out;
  for (uint32_t sub = 0; sub < 16; ++sub) {
    auto r = cpuid(leaf, sub);
    if (!r) break;
    const uint32_t type = r->eax & 0x1f;  // 0 none (end), 1 data, 2 instruction, 3 unified
    if (type == 0) break;
    if (type == 2) continue;
    CacheLevel c;
    c.level = int((r->eax >> 5) & 0x7);
    c.kind = type == 1 ? "data" : "unified";
    const int64_t line = int64_t(r->ebx & 0xfff) + 1;
    const int64_t partitions = int64_t((r->ebx >> 12) & 0x3ff) + 1;
    const int64_t ways = int64_t((r->ebx >> 22) & 0x3ff) + 1;
    const int64_t sets = int64_t(r->ecx) + 1;
    c.size_bytes = ways * partitions * line * sets;
    c.ways = bit(r->eax, 9) ? 0 : int(ways);  // fully associative: no meaningful way count
    c.line_bytes = int(line);
    // "Maximum logical processors sharing this cache": an upper bound on IDs, not a count of cores.
    const int sharing = int((r->eax >> 14) & 0xfff) + 1;
    c.shared_by = std::max(1, sharing / std::max(1, threads_per_core));
    out.push_back(c);
  }
  return out;
}
#endif

}  // namespace

std::vector<CacheLevel> read_sysfs_caches(const std::string& cpu_dir) {
  std::vector<CacheLevel> out;
  const int smt = sysfs_threads_per_core(cpu_dir);
  for (int index = 0; index < 32; ++index) {
    const std::string dir = fmt::format("{}/cache/index{}", cpu_dir, index);
    auto level = read_first_line(dir + "/level");
    if (!level) break;
    auto type = read_first_line(dir + "/type").value_or("");
    if (type == "Instruction") continue;
    CacheLevel c;
    try {
      c.level = std::stoi(*level);
    } catch (const std::exception&) {
      continue;
    }
    c.kind = type == "Data" ? "data" : "unified";
    auto size = parse_size(read_first_line(dir + "/size").value_or(""));
    if (!size || *size <= 0) continue;
    c.size_bytes = *size;
    try {
      c.ways = std::stoi(read_first_line(dir + "/ways_of_associativity").value_or("0"));
      c.line_bytes = std::stoi(read_first_line(dir + "/coherency_line_size").value_or("64"));
    } catch (const std::exception&) {
    }
    if (c.line_bytes <= 0) c.line_bytes = 64;
    // sysfs lists hardware threads; the record counts cores.
    const int threads = count_cpu_list(read_first_line(dir + "/shared_cpu_list").value_or(""));
    c.shared_by = std::max(1, threads / smt);
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
  return out;
}

std::vector<CacheLevel> cpuid_caches() {
#if TILEFORGE_X86
  const CpuIsa& isa = cpu_isa();
  const int smt = cpuid_threads_per_core(isa.vendor);
  auto l0 = cpuid(0);
  if (isa.vendor == "GenuineIntel") {
    if (l0 && l0->eax >= 4) return cpuid_cache_leaf(4, smt);
    return {};
  }
  auto ext = cpuid(0x80000000);
  const bool topoext = bit(cpuid(0x80000001).value_or(Regs{}).ecx, 22);
  if (ext && ext->eax >= 0x8000001D && topoext) return cpuid_cache_leaf(0x8000001D, smt);
  if (l0 && l0->eax >= 4) return cpuid_cache_leaf(4, smt);
#endif
  return {};
}

}  // namespace tileforge::hw
