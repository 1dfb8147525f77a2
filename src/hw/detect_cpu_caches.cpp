// Host CPU detection, caches: their geometry from cpu_features (CPUID), the cores sharing each from sysfs.
#include <fstream>

#include <fmt/format.h>

#include "hw/detect_cpu_detail.hpp"
#include "hw/hw.hpp"

#if TILEFORGE_X86
#include <cpu_features/cpu_features_cache_info.h>
#include <cpu_features/cpuinfo_x86.h>
#endif

namespace tileforge::hw {

namespace {

using detail::trim;

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

}  // namespace detail

std::vector<CacheLevel> library_caches() {
  std::vector<CacheLevel> out;
#if TILEFORGE_X86
  const cpu_features::CacheInfo info = cpu_features::GetX86CacheInfo();
  for (int i = 0; i < info.size; ++i) {
    const cpu_features::CacheLevelInfo& l = info.levels[i];
    if (l.cache_type != cpu_features::CPU_FEATURE_CACHE_DATA && l.cache_type != cpu_features::CPU_FEATURE_CACHE_UNIFIED)
      continue;
    if (l.level < 1 || l.cache_size <= 0) continue;
    CacheLevel c;
    c.level = l.level;
    c.kind = l.cache_type == cpu_features::CPU_FEATURE_CACHE_DATA ? "data" : "unified";
    c.size_bytes = l.cache_size;
    c.ways = l.ways == 0xff ? 0 : l.ways;  // fully associative: no meaningful way count
    c.line_bytes = l.line_size > 0 ? l.line_size : 64;
    out.push_back(c);
  }
#endif
  std::stable_sort(out.begin(), out.end(), [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
  return out;
}

void set_sysfs_sharing(std::vector<CacheLevel>& caches, const std::string& cpu_dir) {
  const int smt = detail::sysfs_threads_per_core(cpu_dir);
  for (CacheLevel& c : caches) {
    c.shared_by = 1;
    for (int index = 0; index < 32; ++index) {
      const std::string dir = fmt::format("{}/cache/index{}", cpu_dir, index);
      auto level = detail::read_first_line(dir + "/level");
      if (!level) break;
      const std::string type = detail::read_first_line(dir + "/type").value_or("");
      if (*level != std::to_string(c.level) || type != (c.kind == "data" ? "Data" : "Unified")) continue;
      // sysfs lists hardware threads; the record counts cores.
      const int threads = count_cpu_list(detail::read_first_line(dir + "/shared_cpu_list").value_or(""));
      c.shared_by = std::max(1, threads / smt);
      break;
    }
  }
}

}  // namespace tileforge::hw
