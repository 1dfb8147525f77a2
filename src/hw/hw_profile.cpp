// HwProfile's small queries: features, caches by level, peaks and the roofline ridge point.
#include "hw/hw_profile.hpp"

#include <cctype>

namespace tileforge::hw {

namespace {

// Feature names come from several vocabularies (Linux writes avx512_bf16, compilers avx512bf16, our records
// avx512-bf16); case and the separator are not meaningful.
std::string canonical_feature(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) out.push_back(c == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace

bool HwProfile::has(const std::string& feature) const {
  const std::string wanted = canonical_feature(feature);
  for (const std::string& f : features)
    if (canonical_feature(f) == wanted) return true;
  return false;
}

const CacheLevel* HwProfile::cache(int level) const {
  // A level may list a data cache and (rarely) a unified one; the data cache is what GEMM blocking uses.
  const CacheLevel* found = nullptr;
  for (const CacheLevel& c : caches) {
    if (c.level != level) continue;
    if (c.kind == "data") return &c;
    if (!found) found = &c;
  }
  return found;
}

std::optional<double> HwProfile::peak_tflops(DType input, DType accum) const {
  for (const PeakRate& p : peaks)
    if (p.input == input && p.accum == accum) return p.tflops;
  return std::nullopt;
}

std::optional<double> HwProfile::ridge_flops_per_byte(DType input, DType accum) const {
  auto peak = peak_tflops(input, accum);
  if (!peak || mem_bandwidth_gbps <= 0) return std::nullopt;
  return *peak * 1e12 / (mem_bandwidth_gbps * 1e9);
}

}  // namespace tileforge::hw
