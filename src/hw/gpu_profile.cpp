// A detected GPU mapped to its chip record by reported name and compute capability, or, for a GPU no record
// names, a profile built from its reported properties (pure functions: the CUDA backend supplies the properties).
#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "hw/hw.hpp"

namespace tileforge::hw {

namespace {

// Drivers differ in case and spacing between releases ("NVIDIA  H200" vs "NVIDIA H200"); neither is meaningful.
std::string normalized_name(std::string_view name) {
  std::string out;
  bool space = false;
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(char(std::tolower(c)));
  }
  return out;
}

// "sm_90a" -> (9, 0), "sm_89" -> (8, 9), "sm_100a" -> (10, 0); nothing for other vendors' arch names.
std::optional<std::pair<int, int>> compute_capability(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_") return std::nullopt;
  std::string digits;
  for (char c : arch.substr(3)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    digits.push_back(c);
  }
  if (digits.size() < 2) return std::nullopt;
  return std::pair<int, int>{std::stoi(digits.substr(0, digits.size() - 1)), digits.back() - '0'};
}

bool same_cc(const HwProfile& p, const GpuProperties& gpu) {
  auto cc = compute_capability(p.arch);
  return cc && cc->first == gpu.cc_major && cc->second == gpu.cc_minor;
}

std::vector<HwProfile> builtin_gpu_profiles() {
  std::vector<HwProfile> out;
  for (const std::string& name : builtin_profile_names()) {
    auto p = load_profile(name);
    if (p && p->kind != "cpu") out.push_back(std::move(*p));
  }
  return out;
}

std::string slug(std::string_view name) {
  std::string out;
  for (char ch : normalized_name(name)) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      out.push_back(ch);
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "gpu" : out;
}

bool differs(double reported, double recorded, double tolerance) {
  return reported > 0 && std::abs(reported - recorded) > tolerance * std::max(std::abs(recorded), 1e-12);
}

CacheLevel* last_level(HwProfile& p) {
  CacheLevel* top = nullptr;
  for (auto& c : p.caches)
    if (!top || c.level > top->level) top = &c;
  return top;
}

// The device's own numbers replace the record's where they differ (a MIG slice, a lower-clocked variant).
void apply_reported(HwProfile& p, const GpuProperties& gpu) {
  double scale = 1.0;
  auto reported = [&](const std::string& key, auto recorded) {
    p.sources[key] = fmt::format("device properties (record: {}; {})", recorded, p.sources[key]);
  };
  if (gpu.sm_count > 0 && gpu.sm_count != p.cores) {
    scale *= double(gpu.sm_count) / p.cores;
    reported("cores", p.cores);
    p.cores = gpu.sm_count;
  }
  if (p.boost_clock_ghz > 0 && differs(gpu.clock_ghz, p.boost_clock_ghz, 0.01)) {
    scale *= gpu.clock_ghz / p.boost_clock_ghz;
    reported("boost_clock_ghz", p.boost_clock_ghz);
    p.boost_clock_ghz = gpu.clock_ghz;
  }
  if (gpu.smem_per_sm_bytes > 0 && gpu.smem_per_sm_bytes != p.smem_per_core_bytes) {
    reported("smem_per_core_bytes", p.smem_per_core_bytes);
    p.smem_per_core_bytes = gpu.smem_per_sm_bytes;
  }
  if (gpu.smem_per_block_bytes > 0 && gpu.smem_per_block_bytes != p.smem_per_block_bytes) {
    reported("smem_per_block_bytes", p.smem_per_block_bytes);
    p.smem_per_block_bytes = gpu.smem_per_block_bytes;
  }
  if (gpu.registers_per_sm > 0 && gpu.registers_per_sm != p.registers_per_core) {
    reported("registers_per_core", p.registers_per_core);
    p.registers_per_core = gpu.registers_per_sm;
  }
  if (gpu.max_threads_per_sm > 0 && gpu.max_threads_per_sm != p.max_threads_per_core) {
    reported("max_threads_per_core", p.max_threads_per_core);
    p.max_threads_per_core = gpu.max_threads_per_sm;
  }
  if (gpu.max_blocks_per_sm > 0 && gpu.max_blocks_per_sm != p.max_blocks_per_core) {
    reported("max_blocks_per_core", p.max_blocks_per_core);
    p.max_blocks_per_core = gpu.max_blocks_per_sm;
  }
  if (CacheLevel* l2 = last_level(p); l2 && gpu.l2_bytes > 0 && gpu.l2_bytes != l2->size_bytes) {
    const std::string key = fmt::format("caches[{}]", l2 - p.caches.data());
    reported(key, l2->size_bytes);
    l2->size_bytes = gpu.l2_bytes;
  }
  // A datasheet bandwidth and one computed from memory clock and bus width differ by a few percent; only a
  // larger gap (another memory configuration of the same name) replaces the record.
  if (differs(gpu.mem_bandwidth_gbps, p.mem_bandwidth_gbps, 0.10)) {
    reported("mem_bandwidth_gbps", p.mem_bandwidth_gbps);
    p.mem_bandwidth_gbps = gpu.mem_bandwidth_gbps;
  }
  if (scale != 1.0) {
    for (PeakRate& r : p.peaks) {
      r.tflops *= scale;
      r.source = fmt::format("{} x {:.4f} for the device's reported SMs and clock", r.source, scale);
    }
  }
}

// Features an NVIDIA architecture offers, for a GPU no record of its architecture describes.
std::vector<std::string> nvidia_features(int major, int minor) {
  std::vector<std::string> f;
  if (major >= 8) f = {"mma.sync", "ldmatrix", "cp.async"};
  if (major >= 9) {
    f.push_back("tma");
    f.push_back("cluster");
  }
  if (major == 9 && minor == 0) f.push_back("wgmma");
  return f;
}

}  // namespace

std::optional<std::string> gpu_profile_name(const GpuProperties& gpu) {
  const std::string wanted = normalized_name(gpu.name);
  if (wanted.empty()) return std::nullopt;
  for (const HwProfile& p : builtin_gpu_profiles()) {
    if (p.vendor != gpu.vendor) continue;
    bool named = std::any_of(p.match_names.begin(), p.match_names.end(),
                             [&](const std::string& m) { return normalized_name(m) == wanted; });
    // Names are reused across generations by some vendors' drivers; the compute capability settles it.
    if (named && (gpu.vendor != "nvidia" || gpu.cc_major == 0 || same_cc(p, gpu))) return p.name;
  }
  return std::nullopt;
}

namespace {

// The record of the same architecture's features, matrix units and caches (else the features the compute
// capability implies), with the L2 size the device reports. `family` is the caller's copy: a source it lacks reads
// as empty (operator[]).
void inherit_features_and_caches(HwProfile& p, const GpuProperties& gpu, std::optional<HwProfile>& family) {
  const std::string dev = "device properties";
  if (family) {
    p.features = family->features;
    p.sources["features"] = fmt::format("from {}", family->name);
    p.matrix_units = family->matrix_units;
    for (std::size_t i = 0; i < p.matrix_units.size(); ++i) {
      const std::string key = fmt::format("matrix_units[{}]", i);
      p.sources[key] = fmt::format("from {}: {}", family->name, family->sources[key]);
    }
    for (std::size_t i = 0; i < family->caches.size(); ++i) {
      const std::string key = fmt::format("caches[{}]", i);
      p.caches.push_back(family->caches[i]);
      p.sources[key] = fmt::format("from {}: {}", family->name, family->sources[key]);
    }
  } else if (gpu.vendor == "nvidia") {
    p.features = nvidia_features(gpu.cc_major, gpu.cc_minor);
    p.sources["features"] = fmt::format("assumed from compute capability {}.{}", gpu.cc_major, gpu.cc_minor);
  }
  if (gpu.l2_bytes > 0) {
    if (CacheLevel* l2 = last_level(p); l2 && l2->level == 2) {
      l2->size_bytes = gpu.l2_bytes;
      l2->shared_by = std::max(1, p.cores);
      p.sources[fmt::format("caches[{}]", l2 - p.caches.data())] = dev;
    } else {
      p.caches.push_back(CacheLevel{2, "unified", gpu.l2_bytes, 0, 128, std::max(1, p.cores)});
      p.sources[fmt::format("caches[{}]", p.caches.size() - 1)] = dev;
    }
  }
}

// Peak rates: the family record's scaled by SMs and clock, or an FP32 estimate from the lanes per SM.
void estimate_peaks(HwProfile& p, const GpuProperties& gpu, const std::optional<HwProfile>& family) {
  const double clock = p.boost_clock_ghz;
  if (family && family->cores > 0 && family->boost_clock_ghz > 0 && clock > 0) {
    const double scale = double(p.cores) / family->cores * clock / family->boost_clock_ghz;
    for (const PeakRate& r : family->peaks) {
      p.peaks.push_back(PeakRate{r.input, r.accum, r.tflops * scale,
                                 fmt::format("estimated: {} at {} SMs x {} GHz scaled to {} SMs x {} GHz",
                                             family->name, family->cores, family->boost_clock_ghz, p.cores, clock)});
    }
  } else if (p.cores > 0 && clock > 0) {
    // FP32 lanes per SM: 64 on sm_80, 128 on sm_86 and later (CUDA C Programming Guide, arithmetic throughput).
    const int lanes = (gpu.cc_major == 8 && gpu.cc_minor == 0) ? 64 : 128;
    p.peaks.push_back(PeakRate{DType::f32, DType::f32, p.cores * lanes * 2.0 * clock / 1e3,
                               fmt::format("estimated: {} SMs x {} FP32 lanes x 2 x {} GHz", p.cores, lanes, clock)});
  }
}

}  // namespace

HwProfile gpu_profile_from_properties(const GpuProperties& gpu) {
  if (auto name = gpu_profile_name(gpu)) {
    HwProfile p = load_profile(*name).value();
    p.sources["match"] = fmt::format("device name '{}'{}", gpu.name,
                                     gpu.cc_major > 0 ? fmt::format(", compute capability {}.{}", gpu.cc_major,
                                                                    gpu.cc_minor)
                                                      : std::string());
    apply_reported(p, gpu);
    return p;
  }

  // No record names this GPU: the nearest record of the same architecture supplies per-SM, per-clock rates.
  std::optional<HwProfile> family;
  const bool geforce = normalized_name(gpu.name).find("geforce") != std::string::npos;
  for (HwProfile& p : builtin_gpu_profiles()) {
    // Only NVIDIA's properties carry an architecture (the compute capability) to compare with a record's.
    if (gpu.vendor != "nvidia" || p.vendor != "nvidia" || !same_cc(p, gpu)) continue;
    const bool p_geforce = normalized_name(p.display_name).find("geforce") != std::string::npos;
    if (!family || p_geforce == geforce) family = p;
    if (p_geforce == geforce) break;
  }

  HwProfile p;
  p.name = "detected-" + slug(gpu.name);
  p.display_name = gpu.name.empty() ? std::string("unknown GPU") : gpu.name;
  p.kind = "gpu";
  p.vendor = gpu.vendor;
  p.arch = family ? family->arch : fmt::format("sm_{}{}", gpu.cc_major, gpu.cc_minor);
  p.measured = true;
  p.notes = family ? fmt::format("built from the device's reported properties; no record names this GPU, so rates "
                                 "are scaled from {} (same architecture)",
                                 family->name)
                   : "built from the device's reported properties; no record of its architecture exists, so only "
                     "the FP32 rate is estimated";
  const std::string dev = "device properties";
  auto pick = [&](const char* key, auto reported, auto recorded) {
    if (reported > 0) {
      p.sources[key] = dev;
      return decltype(recorded)(reported);
    }
    p.sources[key] = family ? fmt::format("from {}: {}", family->name, family->sources[key]) : "unknown";
    return recorded;
  };
  p.cores = pick("cores", gpu.sm_count, family ? family->cores : 0);
  p.boost_clock_ghz = pick("boost_clock_ghz", gpu.clock_ghz, family ? family->boost_clock_ghz : 0.0);
  p.vector_bits = 0;
  p.sources["vector_bits"] = "not applicable: GPUs";
  p.smem_per_core_bytes =
      pick("smem_per_core_bytes", gpu.smem_per_sm_bytes, family ? family->smem_per_core_bytes : int64_t(0));
  p.smem_per_block_bytes =
      pick("smem_per_block_bytes", gpu.smem_per_block_bytes, family ? family->smem_per_block_bytes : int64_t(0));
  p.registers_per_core =
      pick("registers_per_core", gpu.registers_per_sm, family ? family->registers_per_core : int64_t(0));
  p.max_threads_per_core =
      pick("max_threads_per_core", gpu.max_threads_per_sm, family ? family->max_threads_per_core : 0);
  p.mem_bandwidth_gbps =
      pick("mem_bandwidth_gbps", gpu.mem_bandwidth_gbps, family ? family->mem_bandwidth_gbps : 0.0);
  p.max_blocks_per_core = pick("max_blocks_per_core", gpu.max_blocks_per_sm, family ? family->max_blocks_per_core : 0);
  // Rates no driver reports: a record of the same architecture has them; without one they stay unknown, and a cost
  // model that needs them names the field rather than assuming a number.
  auto from_family = [&](const char* key, double recorded) {
    p.sources[key] = family ? fmt::format("from {}: {}", family->name, family->sources[key])
                            : fmt::format("unknown: no record of compute capability {}.{} gives it, and the driver "
                                          "does not report it",
                                          gpu.cc_major, gpu.cc_minor);
    return family ? recorded : 0.0;
  };
  p.l2_bytes_per_core_cycle = from_family("l2_bytes_per_core_cycle", family ? family->l2_bytes_per_core_cycle : 0.0);
  p.smem_bytes_per_core_cycle =
      from_family("smem_bytes_per_core_cycle", family ? family->smem_bytes_per_core_cycle : 0.0);
  p.l3_bytes_per_core_cycle = 0;
  p.sources["l3_bytes_per_core_cycle"] = "not applicable: GPUs have no L3 behind the L2 the model reads";
  for (const char* key : {"fma_pipes", "fma_latency_cycles", "load_ports_per_cycle"})
    p.sources[key] = "not applicable: GPUs (a CPU core's rate)";

  inherit_features_and_caches(p, gpu, family);
  estimate_peaks(p, gpu, family);
  return p;
}

}  // namespace tileforge::hw
