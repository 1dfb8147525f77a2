// HwProfile's small queries: features, caches by level, peaks and the roofline ridge point.
#include "hw/hw_profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

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

// 17179869184 -> "16 GiB"; "" when the number is not a whole number of KiB, MiB or GiB.
std::string binary_size(double bytes) {
  for (auto [unit, scale] : {std::pair{"GiB", double(1ll << 30)}, std::pair{"MiB", double(1 << 20)},
                             std::pair{"KiB", 1024.0}}) {
    if (bytes >= scale && std::fmod(bytes, scale) == 0) return fmt::format("{} {}", bytes / scale, unit);
  }
  return {};
}

// Integers print as integers (a 2^62-byte cache reads 4611686018427387904, not 4.6e+18); rates as the shortest
// decimal that reads back the same.
template <typename T>
std::string number(T v) {
  return fmt::format("{}", v);
}

template <typename T>
std::optional<Implausible> check(const Bound& b, const std::string& field, T value) {
  if (b.admits(double(value))) return std::nullopt;
  return Implausible{field, b.refusal(number(value))};
}

}  // namespace

std::string Bound::range() const {
  std::string r = fmt::format("{} to {}", min, max);
  if (!unit.empty()) r += fmt::format(" {}", unit);
  if (unit == "bytes" && !binary_size(min).empty() && !binary_size(max).empty())
    r += fmt::format(" ({} to {})", binary_size(min), binary_size(max));
  return zero_allowed ? "0, or " + r : r;
}

std::string Bound::refusal(std::string_view value) const {
  return fmt::format("is {}, outside the allowed range {} ({})", value, range(), why);
}

std::optional<Implausible> find_implausible(const HwProfile& p) {
  std::optional<Implausible> bad;
  // The first failing check wins, in the order the record lists its fields.
  auto first = [&](std::optional<Implausible> found) {
    if (!bad && found) bad = std::move(found);
  };
  first(check(bounds::cores, "cores.value", p.cores));
  first(check(bounds::boost_clock_ghz, "boost_clock_ghz.value", p.boost_clock_ghz));
  first(check(bounds::vector_bits, "vector_bits.value", p.vector_bits));
  first(check(bounds::smem_bytes, "smem_per_core_bytes.value", p.smem_per_core_bytes));
  first(check(bounds::smem_bytes, "smem_per_block_bytes.value", p.smem_per_block_bytes));
  first(check(bounds::registers_per_core, "registers_per_core.value", p.registers_per_core));
  first(check(bounds::max_threads_per_core, "max_threads_per_core.value", p.max_threads_per_core));
  first(check(bounds::mem_bandwidth_gbps, "mem_bandwidth_gbps.value", p.mem_bandwidth_gbps));
  first(check(bounds::max_blocks_per_core, "max_blocks_per_core.value", p.max_blocks_per_core));
  first(check(bounds::bytes_per_core_cycle, "l2_bytes_per_core_cycle.value", p.l2_bytes_per_core_cycle));
  first(check(bounds::bytes_per_core_cycle, "l3_bytes_per_core_cycle.value", p.l3_bytes_per_core_cycle));
  first(check(bounds::bytes_per_core_cycle, "smem_bytes_per_core_cycle.value", p.smem_bytes_per_core_cycle));
  first(check(bounds::fma_pipes, "fma_pipes.value", p.fma_pipes));
  first(check(bounds::fma_latency_cycles, "fma_latency_cycles.value", p.fma_latency_cycles));
  first(check(bounds::load_ports_per_cycle, "load_ports_per_cycle.value", p.load_ports_per_cycle));
  for (std::size_t i = 0; i < p.caches.size() && !bad; ++i) {
    const CacheLevel& c = p.caches[i];
    const std::string at = fmt::format("caches[{}]", i);
    first(check(bounds::cache_size_bytes, at + ".size_bytes", c.size_bytes));
    first(check(bounds::cache_ways, at + ".ways", c.ways));
    first(check(bounds::cache_line_bytes, at + ".line_bytes", c.line_bytes));
    first(check(bounds::cache_shared_by, at + ".shared_by", c.shared_by));
    // A cache smaller than one line per way has no sets: the blocking model would divide by zero sizing for it.
    if (!bad && c.size_bytes < int64_t(std::max(c.ways, 1)) * c.line_bytes) {
      bad = Implausible{at + ".size_bytes",
                        fmt::format("is {}, smaller than ways x line_bytes = {} x {} (allowed: at least {} bytes, one "
                                    "line per way)",
                                    c.size_bytes, c.ways, c.line_bytes, int64_t(std::max(c.ways, 1)) * c.line_bytes)};
    }
  }
  for (std::size_t i = 0; i < p.matrix_units.size() && !bad; ++i) {
    const MatrixUnit& u = p.matrix_units[i];
    const std::string at = fmt::format("matrix_units[{}]", i);
    first(check(bounds::matrix_unit_dim, at + ".m", u.m));
    first(check(bounds::matrix_unit_dim, at + ".n", u.n));
    first(check(bounds::matrix_unit_dim, at + ".k", u.k));
  }
  for (std::size_t i = 0; i < p.peaks.size() && !bad; ++i)
    first(check(bounds::peak_tflops, fmt::format("peaks[{}].tflops", i), p.peaks[i].tflops));
  return bad;
}

bool HwProfile::has(const std::string& feature) const {
  const std::string wanted = canonical_feature(feature);
  for (const std::string& f : features)
    if (canonical_feature(f) == wanted) return true;
  return false;
}

int HwProfile::nvidia_sm() const {
  if (kind != "gpu" || vendor != "nvidia" || !arch.starts_with("sm_")) return 0;
  int n = 0;
  for (const char ch : std::string_view(arch).substr(3)) {
    if (ch < '0' || ch > '9') break;
    n = n * 10 + (ch - '0');
  }
  return n;
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
