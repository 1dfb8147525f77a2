// Host CPU detection, the profile: host_cpu_profile() from the detected ISA, caches and uarch record, and the peaks.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <new>

#include <fmt/format.h>

#include "hw/detect_cpu_detail.hpp"
#include "hw/host_measurements.hpp"
#include "hw/hw.hpp"

namespace tileforge::hw {

namespace {

using detail::read_first_line;

int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : 0;
}

std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[16] = {};
  std::strftime(text, sizeof(text), "%Y-%m-%d", &tm);
  return text;
}

std::string vendor_short_name(const std::string& cpuid_vendor) {
  if (cpuid_vendor == "GenuineIntel") return "intel";
  if (cpuid_vendor == "AuthenticAMD") return "amd";
  if (cpuid_vendor == "HygonGenuine") return "hygon";
  if (cpuid_vendor.empty()) return "unknown";
  std::string s = cpuid_vendor;
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> usable_features(const CpuIsa& isa) {
  std::vector<std::string> f;
  // A feature is listed only when code may use it: the CPU has it and the OS saves its registers.
  if (isa.sse42) f.push_back("sse4.2");
  if (isa.avx && isa.os_avx) f.push_back("avx");
  if (isa.avx2 && isa.os_avx) f.push_back("avx2");
  if (isa.fma && isa.os_avx) f.push_back("fma");
  if (isa.f16c && isa.os_avx) f.push_back("f16c");
  if (isa.os_avx512) {
    if (isa.avx512f) f.push_back("avx512f");
    if (isa.avx512bw) f.push_back("avx512bw");
    if (isa.avx512dq) f.push_back("avx512dq");
    if (isa.avx512vl) f.push_back("avx512vl");
    if (isa.avx512_bf16) f.push_back("avx512-bf16");
    if (isa.avx512_fp16) f.push_back("avx512-fp16");
  }
  if (isa.os_amx) {
    if (isa.amx_tile) f.push_back("amx-tile");
    if (isa.amx_bf16) f.push_back("amx-bf16");
    if (isa.amx_int8) f.push_back("amx-int8");
  }
  return f;
}

// Bytes for the bandwidth run: four times the last-level cache so that caches hold little of it, at least 64 MiB,
// at most 512 MiB and an eighth of the machine's memory.
int64_t bandwidth_buffer_bytes(const std::vector<CacheLevel>& caches, int cpus) {
  int64_t llc_total = 0;
  int top = 0;
  for (const auto& c : caches) top = std::max(top, c.level);
  for (const auto& c : caches) {
    if (c.level != top) continue;
    int instances = std::max(1, (cpus + c.shared_by - 1) / std::max(1, c.shared_by));
    llc_total += c.size_bytes * instances;
  }
  int64_t bytes = std::clamp<int64_t>(4 * llc_total, int64_t(64) << 20, int64_t(512) << 20);
  if (int64_t mem = physical_memory_bytes(); mem > 0) bytes = std::min(bytes, mem / 8);
  return std::max<int64_t>(bytes, int64_t(8) << 20);
}

// The FP32 FMA peak for every precision the CPU backend runs. NOTE: it converts f16 and bf16 operands to f32 while
// packing and multiplies in f32, so the FP32 FMA rate is the ceiling of those precisions too (AVX512_BF16 / AMX would
// be faster, but are not used yet).
void set_fma_peaks(HwProfile& p, double gflops, const std::string& source) {
  p.peaks.push_back(PeakRate{DType::f32, DType::f32, gflops / 1e3, source});
  for (DType t : {DType::f16, DType::bf16}) {
    p.peaks.push_back(PeakRate{t, DType::f32, gflops / 1e3,
                               fmt::format("same as f32: inputs are converted to f32 while packing ({})", source)});
  }
}

// Library calls never measure (a GEMM call must not spend 0.1-0.5 s timing the host, nor write into $HOME): they
// plan with what an earlier measuring process stored for this host, else with the nominal numbers of the CPU's
// records (FMA pipes x lanes x 2 x clock x cores; the compiled-in generic record's bandwidth per core), said so.
void apply_stored_or_nominal_peaks(HwProfile& p, const std::string& host_key) {
  const std::string how_to_measure = "`tileforge devices` measures this host and stores its numbers";
  if (auto kept = stored_host_measurements(host_key)) {
    const std::string note = fmt::format("stored: highest of {} measuring processes on this host since {} ({}); "
                                         "not measured by this process (library calls never measure)",
                                         kept->processes, kept->since, kept->file);
    set_fma_peaks(p, kept->fma_gflops, note);
    p.mem_bandwidth_gbps = kept->bandwidth_gbps;
    p.sources["mem_bandwidth_gbps"] = note;
    p.measured = true;
    return;
  }
  p.measured = false;
  auto generic = load_profile(nearest_cpu_profile_name());
  const double clock = p.boost_clock_ghz > 0 ? p.boost_clock_ghz : (generic ? generic->boost_clock_ghz : 0);
  const int pipes = p.fma_pipes > 0 ? p.fma_pipes : (generic ? generic->fma_pipes : 1);
  const double lanes = double(p.vector_bits) / 32.0;
  const double gflops = double(std::max(1, p.cores)) * pipes * lanes * 2.0 * clock;
  set_fma_peaks(p, gflops,
                fmt::format("nominal: {} cores x {} FMA pipes x {} f32 lanes x 2 x {} GHz ({}); no measurement stored "
                            "for this host and library calls never measure; {}",
                            p.cores, pipes, lanes, clock,
                            p.boost_clock_ghz > 0 ? "sysfs max clock" : fmt::format("{}'s clock", nearest_cpu_profile_name()),
                            how_to_measure));
  if (generic && generic->cores > 0) {
    p.mem_bandwidth_gbps =
        std::min(generic->mem_bandwidth_gbps, generic->mem_bandwidth_gbps / generic->cores * std::max(1, p.cores));
    p.sources["mem_bandwidth_gbps"] =
        fmt::format("nominal: {}'s {} GB/s over its {} cores, for {} cores; {}", generic->name,
                    generic->mem_bandwidth_gbps, generic->cores, p.cores, how_to_measure);
  }
}

// What the host is: names, vendor, ISA level, and the cores this process may use.
void describe_host(HwProfile& p, const CpuIsa& isa) {
  p.name = std::string(host_cpu_profile_name());
  p.display_name = isa.brand.empty() ? std::string("host CPU") : isa.brand;
  p.kind = "cpu";
  p.vendor = vendor_short_name(isa.vendor);
  p.arch = isa.x86_64_level >= 2 ? fmt::format("x86-64-v{}", isa.x86_64_level)
                                 : (isa.x86_64_level == 1 ? "x86-64" : "unknown");
  p.measured = true;
  p.notes = "detected on this host: CPUID, XCR0, cpu_features, sysfs; peak and bandwidth measured at start-up, the "
            "highest kept across processes; FMA, load and cache rates from the CPU's microarchitecture record "
            "(profiles/uarch)";

  const std::vector<int> ids = detail::usable_cpu_ids();
  p.cores = usable_cpu_count();
  p.sources["cores"] =
      ids.empty() ? "std::thread::hardware_concurrency" : "sched_getaffinity (CPUs this process may use)";
}

// The highest clock cpufreq reports; 0 where it is not exposed (the peak is measured then).
void set_boost_clock(HwProfile& p, const std::string& cpu_dir) {
  if (auto khz = read_first_line(cpu_dir + "/cpufreq/cpuinfo_max_freq"); khz && !khz->empty()) {
    try {
      p.boost_clock_ghz = std::stod(*khz) / 1e6;
      p.sources["boost_clock_ghz"] = "sysfs: cpufreq/cpuinfo_max_freq";
    } catch (const std::exception&) {
    }
  }
  if (p.boost_clock_ghz <= 0) {
    p.boost_clock_ghz = 0;
    p.sources["boost_clock_ghz"] = "not exposed (no cpufreq in sysfs, as in virtual machines); the peak is measured";
  }
}

// Vector width, register file and usable features, from what the CPU has and the OS enables.
void set_vector_unit(HwProfile& p, const CpuIsa& isa) {
  const bool wide = isa.has_avx512();
  const bool ymm = isa.avx && isa.os_avx;
  p.vector_bits = wide ? 512 : ymm ? 256 : 128;
  if (wide) {
    p.sources["vector_bits"] = "cpuid + xgetbv: AVX-512 usable";
  } else if (ymm) {
    p.sources["vector_bits"] = "cpuid + xgetbv: AVX usable, AVX-512 not";
  } else {
    p.sources["vector_bits"] = "cpuid: SSE only";
  }
  p.registers_per_core = wide ? 32 : 16;
  p.sources["registers_per_core"] =
      wide ? "architectural vector registers: 32 zmm (AVX-512)" : "architectural vector registers: 16 xmm/ymm";
  p.smem_per_core_bytes = 0;
  p.smem_per_block_bytes = 0;
  p.sources["smem_per_core_bytes"] = "not applicable: CPUs have no software-managed shared memory";
  p.sources["smem_per_block_bytes"] = "not applicable: CPUs have no software-managed shared memory";

  p.features = usable_features(isa);
  p.sources["features"] = "cpuid leaves 1, 7.0, 7.1 and xgetbv (XCR0); AMX also arch_prctl(ARCH_REQ_XCOMP_PERM)";
}

// Sizes, ways and lines from cpu_features (CPUID leaf 4, or 0x8000001D on AMD, as Linux's own cacheinfo reads
// them); the cores sharing each from sysfs, which cpu_features does not report.
void set_caches(HwProfile& p, const std::string& cpu_dir) {
  p.caches = library_caches();
  set_sysfs_sharing(p.caches, cpu_dir);
  const std::string cache_source =
      fmt::format("cpu_features: CPUID cache leaves (size, ways, line); sysfs: {}/cache shared_cpu_list (cores "
                  "sharing it)", cpu_dir);
  // No description in CPUID leaves the list empty: the blocking model then says it has no cache to size for,
  // rather than sizing for guessed ones.
  for (std::size_t i = 0; i < p.caches.size(); ++i) p.sources[fmt::format("caches[{}]", i)] = cache_source;
  if (p.caches.empty()) p.sources["caches"] = "not detected: cpu_features finds no cache description in CPUID";
}

// What CPUID cannot report (FMA pipes and latency, load ports, cache rates) comes from the record of this CPU's
// microarchitecture, or from its ISA class's record, said so, when no record names it.
void set_microarchitecture_rates(HwProfile& p) {
  p.max_blocks_per_core = 0;
  p.smem_bytes_per_core_cycle = 0;
  p.sources["max_blocks_per_core"] = "not applicable: CPUs have no thread blocks";
  p.sources["smem_bytes_per_core_cycle"] = "not applicable: CPUs have no software-managed shared memory";
  if (auto uarch = match_uarch(cpu_signature(), p.vector_bits)) {
    apply_uarch(p, *uarch);
  } else {
    for (const char* key : {"fma_pipes", "fma_latency_cycles", "load_ports_per_cycle", "l2_bytes_per_core_cycle",
                            "l3_bytes_per_core_cycle"})
      p.sources[key] = "unknown: " + uarch.status().message();
    p.uarch = "none: " + uarch.status().message();
  }
}

// Hardware threads per core (sysfs; 1 where sysfs does not say) and the matrix units the planner can target.
void set_threads_and_matrix_units(HwProfile& p, const CpuIsa& isa, const std::string& cpu_dir) {
  p.max_threads_per_core = detail::sysfs_threads_per_core(cpu_dir);
  p.sources["max_threads_per_core"] = read_first_line(cpu_dir + "/topology/thread_siblings_list")
                                          ? "sysfs: topology/thread_siblings_list (hardware threads per core)"
                                          : "not in sysfs (topology/thread_siblings_list): 1 assumed";

  // AMX is the only CPU matrix unit the planner can target: TDPBF16PS multiplies a 16x32 bf16 tile by a
  // 32x16 one into 16x16 f32 (Intel SDM vol. 2, TDPBF16PS).
  if (isa.has_amx_bf16()) {
    p.matrix_units.push_back(MatrixUnit{"amx-bf16.tdpbf16ps", 16, 16, 32, DType::bf16, DType::f32, 0});
    p.sources["matrix_units[0]"] = "cpuid leaf 7 EDX (AMX-TILE, AMX-BF16), XCR0 tile state, arch_prctl granted";
  }
}

// Measures the FMA peak and the read bandwidth in this process, keeps the highest any process measured on this
// host, and sets both with their sources.
void measure_peaks(HwProfile& p, FmaIsa fma_isa, const std::string& host_key) {
  // Three short trials, the best kept: a trial that another process interrupts reads low, never high.
  constexpr double kTrialSeconds = 0.02;
  double gflops = 0;
  for (int trial = 0; trial < 3; ++trial)
    gflops = std::max(gflops, measure_fma_peak_gflops(fma_isa, p.cores, kTrialSeconds).value());
  const std::string today = utc_date();
  // NOTE: a short read of a buffer larger than the caches, so the planner's roofline uses what this process's
  // cores can actually pull from memory (in a VM, often far below the socket's datasheet figure).
  int64_t bytes = bandwidth_buffer_bytes(p.caches, p.cores);
  double bandwidth = 0;
  for (; bytes >= (int64_t(8) << 20); bytes /= 4) {
    try {
      bandwidth = measure_read_bandwidth_gbps(p.cores, bytes);
      break;
    } catch (const std::bad_alloc&) {
      // A smaller buffer overstates bandwidth a little (more of it sits in cache) but still measures memory.
    }
  }
  // The highest numbers any process measured on this host: a process that starts while the machine is busy
  // measures low, and planning should not follow each start-up's noise (host_measurements.hpp).
  const HostMeasurements kept = remember_host_measurements(host_key, gflops, bandwidth, today);
  const std::string kept_note =
      kept.file.empty() ? std::string("this process")
                        : fmt::format("highest of {} processes on this host since {} ({})", kept.processes, kept.since,
                                      kept.file);
  gflops = kept.fma_gflops;
  p.mem_bandwidth_gbps = kept.bandwidth_gbps;
  const std::string fma_source = fmt::format("measured: {} FMA loop, {} threads, best of 3 x {} s, {}; {}",
                                             to_string(fma_isa), p.cores, kTrialSeconds, today, kept_note);
  set_fma_peaks(p, gflops, fma_source);

  p.sources["mem_bandwidth_gbps"] =
      p.mem_bandwidth_gbps > 0
          ? fmt::format("measured: read of {} MiB on {} threads, best of 3 passes, {}; {}", bytes >> 20, p.cores,
                        today, kept_note)
          : "not measured: no buffer could be allocated";
}

HwProfile build_host_profile(HostPeaks how) {
  const CpuIsa& isa = cpu_isa();
  HwProfile p;
  describe_host(p, isa);
  const std::string cpu_dir = "/sys/devices/system/cpu/cpu0";
  set_boost_clock(p, cpu_dir);
  set_vector_unit(p, isa);
  set_caches(p, cpu_dir);
  set_microarchitecture_rates(p);
  set_threads_and_matrix_units(p, isa, cpu_dir);

  const FmaIsa fma_isa = best_fma_isa();
  const std::string host_key = fmt::format("{} | {} cpus | {}", p.display_name, p.cores, to_string(fma_isa));
  if (how == HostPeaks::stored_or_nominal) {
    apply_stored_or_nominal_peaks(p, host_key);
    return p;
  }
  measure_peaks(p, fma_isa, host_key);
  return p;
}

}  // namespace

const HwProfile& host_cpu_profile(HostPeaks how) {
  if (how == HostPeaks::stored_or_nominal) {
    static const HwProfile library = build_host_profile(HostPeaks::stored_or_nominal);
    return library;
  }
  static const HwProfile measured = build_host_profile(HostPeaks::measure);
  return measured;
}

std::string nearest_cpu_profile_name() {
  return cpu_isa().has_avx512() ? "generic-avx512" : "generic-avx2";
}

}  // namespace tileforge::hw
