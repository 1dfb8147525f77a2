// Host CPU detection: ISA from CPUID and XCR0, caches from sysfs (CPUID as fallback), usable cores, the FP32 FMA
// peak and memory read bandwidth measured on this host, and the per-core rates of its microarchitecture record;
// together they make host_cpu_profile().
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "hw/fma_peak_kernels.hpp"
#include "hw/host_measurements.hpp"
#include "hw/hw.hpp"

#if defined(__x86_64__) || defined(__i386__)
#define TILEFORGE_X86 1
#include <cpuid.h>
#include <sys/syscall.h>
#endif

namespace tileforge::hw {

namespace {

using Clock = std::chrono::steady_clock;

// ---- CPUID and XCR0 ------------------------------------------------------------------------------------------

struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

#if TILEFORGE_X86
// Leaves above the CPU's maximum return garbage on some parts, so every query checks the range first.
std::optional<Regs> cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return std::nullopt;
  return r;
}

uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool bit(uint32_t reg, int b) { return (reg >> b) & 1u; }

// XCR0 state components the OS must save for each register file (Intel SDM vol. 1, 13.1).
constexpr uint64_t kXcr0Sse = 1u << 1, kXcr0Ymm = 1u << 2;
constexpr uint64_t kXcr0Opmask = 1u << 5, kXcr0ZmmHi256 = 1u << 6, kXcr0Hi16Zmm = 1u << 7;
constexpr uint64_t kXcr0TileCfg = 1u << 17, kXcr0TileData = 1u << 18;

// Linux keeps AMX tile data off until a process asks for it (arch/x86/include/uapi/asm/prctl.h).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtileData = 18;

bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
#else
  return false;
#endif
}
#endif

std::string trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c) && c != 0; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

CpuIsa detect_isa() {
  CpuIsa isa;
#if TILEFORGE_X86
  auto l0 = cpuid(0);
  if (!l0) return isa;
  char vendor[13] = {};
  std::memcpy(vendor + 0, &l0->ebx, 4);
  std::memcpy(vendor + 4, &l0->edx, 4);
  std::memcpy(vendor + 8, &l0->ecx, 4);
  isa.vendor = vendor;

  if (auto ext = cpuid(0x80000000); ext && ext->eax >= 0x80000004) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      auto r = cpuid(0x80000002 + i);
      if (!r) break;
      std::memcpy(brand + 16 * i + 0, &r->eax, 4);
      std::memcpy(brand + 16 * i + 4, &r->ebx, 4);
      std::memcpy(brand + 16 * i + 8, &r->ecx, 4);
      std::memcpy(brand + 16 * i + 12, &r->edx, 4);
    }
    isa.brand = trim(brand);
  }

  Regs l1 = cpuid(1).value_or(Regs{});
  const CpuSignature signature = cpu_signature_from_leaf1(isa.vendor, l1.eax);
  isa.family = signature.family;
  isa.model = signature.model;
  isa.sse42 = bit(l1.ecx, 20);
  isa.fma = bit(l1.ecx, 12);
  isa.avx = bit(l1.ecx, 28);
  isa.f16c = bit(l1.ecx, 29);
  const bool osxsave = bit(l1.ecx, 27);

  Regs l7 = cpuid(7, 0).value_or(Regs{});
  isa.avx2 = bit(l7.ebx, 5);
  isa.avx512f = bit(l7.ebx, 16);
  isa.avx512dq = bit(l7.ebx, 17);
  isa.avx512bw = bit(l7.ebx, 30);
  isa.avx512vl = bit(l7.ebx, 31);
  isa.amx_bf16 = bit(l7.edx, 22);
  isa.avx512_fp16 = bit(l7.edx, 23);
  isa.amx_tile = bit(l7.edx, 24);
  isa.amx_int8 = bit(l7.edx, 25);
  // Subleaf 1 exists only when subleaf 0 reports it (EAX = highest subleaf).
  if (l7.eax >= 1) isa.avx512_bf16 = bit(cpuid(7, 1).value_or(Regs{}).eax, 5);

  if (osxsave) {
    const uint64_t xcr0 = read_xcr0();
    isa.os_avx = (xcr0 & (kXcr0Sse | kXcr0Ymm)) == (kXcr0Sse | kXcr0Ymm);
    const uint64_t zmm = kXcr0Sse | kXcr0Ymm | kXcr0Opmask | kXcr0ZmmHi256 | kXcr0Hi16Zmm;
    isa.os_avx512 = (xcr0 & zmm) == zmm;
    isa.xcr0_amx = (xcr0 & (kXcr0TileCfg | kXcr0TileData)) == (kXcr0TileCfg | kXcr0TileData);
  }
  if (isa.amx_tile && isa.xcr0_amx) isa.amx_permission = request_amx_permission();
  isa.os_amx = isa.xcr0_amx && isa.amx_permission;

  // x86-64 psABI micro-architecture levels, from the features that define them.
  Regs e1 = cpuid(0x80000001).value_or(Regs{});
  const bool v2 = bit(l1.ecx, 0) && bit(l1.ecx, 9) && bit(l1.ecx, 13) && bit(l1.ecx, 19) && isa.sse42 &&
                  bit(l1.ecx, 23) && bit(e1.ecx, 0);
  const bool v3 = v2 && isa.has_avx2() && isa.f16c && bit(l7.ebx, 3) && bit(l7.ebx, 8) && bit(l1.ecx, 22) &&
                  bit(e1.ecx, 5) && osxsave;
  const bool v4 = v3 && isa.has_avx512() && bit(l7.ebx, 28);
  isa.x86_64_level = v4 ? 4 : v3 ? 3 : v2 ? 2 : 1;
#endif
  return isa;
}

// ---- sysfs ----------------------------------------------------------------------------------------------------

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return trim(line);
}

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

int sysfs_threads_per_core(const std::string& cpu_dir) {
  auto siblings = read_first_line(cpu_dir + "/topology/thread_siblings_list");
  int n = siblings ? count_cpu_list(*siblings) : 0;
  return n > 0 ? n : 1;
}

#if TILEFORGE_X86
// Hardware threads per core from CPUID: leaf 0xB level 0 (Intel) or 0x8000001E (AMD); 1 when neither answers.
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

// ---- threads ----------------------------------------------------------------------------------------------------

std::vector<int> usable_cpu_ids() {
  std::vector<int> ids;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) ids.push_back(i);
  }
#endif
  return ids;
}

// Pins the calling thread to one CPU so that two measuring threads never share a core while another sits idle.
void pin_to(int cpu) {
#if defined(__linux__)
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
#endif
}

// Runs body(index) on `threads` pinned threads released together; returns when all have finished.
template <class Body>
void run_team(int threads, const Body& body) {
  std::vector<int> cpus = usable_cpu_ids();
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> team;
  team.reserve(std::size_t(threads));
  for (int t = 0; t < threads; ++t) {
    team.emplace_back([&, t] {
      pin_to(cpus.empty() ? -1 : cpus[std::size_t(t) % cpus.size()]);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(t);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& th : team) th.join();
}

// ---- the FMA loop -------------------------------------------------------------------------------------------

// Baseline code: the compiler may pack these chains into SSE registers, but without FMA each step is a
// multiply and an add, as on a CPU that lacks FMA.
float fma_peak_loop_baseline(int64_t iterations, float seed, int* flops_per_iteration) {
  constexpr int kChains = 12;
  float acc[kChains];
  const float a = 0.999f * (seed > 0.0f ? 1.0f : -1.0f), b = 0.001f;
  for (int c = 0; c < kChains; ++c) acc[c] = seed + 0.01f * float(c);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;
  float total = 0.0f;
  for (float x : acc) total += x;
  *flops_per_iteration = 2 * kChains;
  return total;
}

using FmaLoop = float (*)(int64_t, float, int*);

FmaLoop loop_for(FmaIsa isa) {
  switch (isa) {
    case FmaIsa::avx512: return &fma_peak_loop_avx512;
    case FmaIsa::avx2: return &fma_peak_loop_avx2;
    case FmaIsa::scalar: return &fma_peak_loop_baseline;
  }
  return &fma_peak_loop_baseline;
}

bool isa_usable(FmaIsa isa) {
  switch (isa) {
    case FmaIsa::avx512: return cpu_isa().has_avx512();
    case FmaIsa::avx2: return cpu_isa().has_avx2();
    case FmaIsa::scalar: return true;
  }
  return false;
}

std::atomic<float> g_sink{0.0f};  // keeps every loop's result observable

// One timed run: every thread repeats chunks of about a millisecond until `seconds` have passed on its own clock;
// the team's rate is the sum of the threads' rates (they run at the same time).
double fma_trial_gflops(FmaLoop loop, int threads, double seconds, int64_t chunk) {
  std::vector<double> rates(std::size_t(threads), 0.0);
  run_team(threads, [&](int t) {
    int fpi = 0;
    double flops = 0;
    float sink = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    do {
      sink += loop(chunk, 1.0f + 0.001f * float(t), &fpi);
      flops += double(chunk) * fpi;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < seconds);
    rates[std::size_t(t)] = flops / elapsed;
    g_sink.store(sink, std::memory_order_relaxed);
  });
  double total = 0;
  for (double r : rates) total += r;
  return total / 1e9;
}

// ---- memory bandwidth -----------------------------------------------------------------------------------------

int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : 0;
}

// ---- the host profile ---------------------------------------------------------------------------------------

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

HwProfile build_host_profile(HostPeaks how) {
  const CpuIsa& isa = cpu_isa();
  HwProfile p;
  p.name = std::string(host_cpu_profile_name());
  p.display_name = isa.brand.empty() ? std::string("host CPU") : isa.brand;
  p.kind = "cpu";
  p.vendor = vendor_short_name(isa.vendor);
  p.arch = isa.x86_64_level >= 2 ? fmt::format("x86-64-v{}", isa.x86_64_level)
                                 : (isa.x86_64_level == 1 ? "x86-64" : "unknown");
  p.measured = true;
  p.notes = "detected on this host: CPUID, XCR0, sysfs; peak and bandwidth measured at start-up, the highest kept "
            "across processes; FMA, load and cache rates from the CPU's microarchitecture record (profiles/uarch)";

  const std::vector<int> ids = usable_cpu_ids();
  p.cores = usable_cpu_count();
  p.sources["cores"] =
      ids.empty() ? "std::thread::hardware_concurrency" : "sched_getaffinity (CPUs this process may use)";

  const std::string cpu_dir = "/sys/devices/system/cpu/cpu0";
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

  p.caches = read_sysfs_caches(cpu_dir);
  std::string cache_source = "sysfs: " + cpu_dir + "/cache";
  if (p.caches.empty()) {
    p.caches = cpuid_caches();
    cache_source = "cpuid cache leaves (4 on Intel, 0x8000001D on AMD)";
  }
  // Neither source answering (non-x86 without sysfs) leaves the list empty: the blocking model then says it has no
  // cache to size for, rather than sizing for guessed ones.
  for (std::size_t i = 0; i < p.caches.size(); ++i) p.sources[fmt::format("caches[{}]", i)] = cache_source;
  if (p.caches.empty()) p.sources["caches"] = "not detected: neither sysfs nor CPUID describes the caches";

  // What CPUID cannot report (FMA pipes and latency, load ports, cache rates) comes from the record of this CPU's
  // microarchitecture, or from its ISA class's record, said so, when no record names it.
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

  int smt = sysfs_threads_per_core(cpu_dir);
  p.sources["max_threads_per_core"] = "sysfs: topology/thread_siblings_list (hardware threads per core)";
#if TILEFORGE_X86
  if (!read_first_line(cpu_dir + "/topology/thread_siblings_list")) {
    smt = cpuid_threads_per_core(isa.vendor);
    p.sources["max_threads_per_core"] = "cpuid: hardware threads per core";
  }
#endif
  p.max_threads_per_core = smt;

  // AMX is the only CPU matrix unit the planner can target: TDPBF16PS multiplies a 16x32 bf16 tile by a
  // 32x16 one into 16x16 f32 (Intel SDM vol. 2, TDPBF16PS).
  if (isa.has_amx_bf16()) {
    p.matrix_units.push_back(MatrixUnit{"amx-bf16.tdpbf16ps", 16, 16, 32, DType::bf16, DType::f32, 0});
    p.sources["matrix_units[0]"] = "cpuid leaf 7 EDX (AMX-TILE, AMX-BF16), XCR0 tile state, arch_prctl granted";
  }

  const FmaIsa fma_isa = best_fma_isa();
  const std::string host_key = fmt::format("{} | {} cpus | {}", p.display_name, p.cores, to_string(fma_isa));
  if (how == HostPeaks::stored_or_nominal) {
    apply_stored_or_nominal_peaks(p, host_key);
    return p;
  }
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
  return p;
}

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

const CpuIsa& cpu_isa() {
  static const CpuIsa isa = detect_isa();
  return isa;
}

int usable_cpu_count() {
  std::size_t n = usable_cpu_ids().size();
  if (n == 0) n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
}

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

std::string_view to_string(FmaIsa isa) {
  switch (isa) {
    case FmaIsa::scalar: return "scalar";
    case FmaIsa::avx2: return "avx2";
    case FmaIsa::avx512: return "avx512";
  }
  return "?";
}

FmaIsa best_fma_isa() {
  if (cpu_isa().has_avx512()) return FmaIsa::avx512;
  if (cpu_isa().has_avx2()) return FmaIsa::avx2;
  return FmaIsa::scalar;
}

Expected<double> measure_fma_peak_gflops(FmaIsa isa, int threads, double seconds) {
  if (!isa_usable(isa)) {
    return unsupported(fmt::format("the {} FMA loop cannot run here: the CPU or the OS lacks {}", to_string(isa),
                                   isa == FmaIsa::avx512 ? "AVX-512 (F, BW, DQ, VL)" : "AVX2 and FMA"));
  }
  if (threads <= 0) threads = usable_cpu_count();
  if (!(seconds > 0)) seconds = 0.02;
  FmaLoop loop = loop_for(isa);
  // Size one chunk to about a millisecond, so that reading the clock costs nothing and the end is not overshot.
  int fpi = 0;
  int64_t probe = 1024;
  double probe_s = 0;
  for (;;) {
    const auto t0 = Clock::now();
    g_sink.store(loop(probe, 1.0f, &fpi), std::memory_order_relaxed);
    probe_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (probe_s > 2e-4 || probe > (int64_t(1) << 30)) break;
    probe *= 4;
  }
  const int64_t chunk = std::max<int64_t>(64, int64_t(double(probe) * 1e-3 / std::max(probe_s, 1e-9)));
  return fma_trial_gflops(loop, threads, seconds, chunk);
}

double measure_fma_peak_gflops(int threads, double seconds) {
  return measure_fma_peak_gflops(best_fma_isa(), threads, seconds).value();
}

double measure_read_bandwidth_gbps(int threads, int64_t bytes) {
  if (threads <= 0) threads = usable_cpu_count();
  const int64_t words = std::max<int64_t>(bytes / 8, int64_t(threads) * 512);
  std::unique_ptr<uint64_t[]> buffer(new uint64_t[std::size_t(words)]);
  uint64_t* data = buffer.get();
  auto slice = [&](int t) {
    const int64_t per = words / threads;
    const int64_t begin = per * t;
    return std::pair<int64_t, int64_t>{begin, t == threads - 1 ? words : begin + per};
  };
  // Each thread first touches its own slice, so on a NUMA machine the pages sit near the thread reading them.
  run_team(threads, [&](int t) {
    auto [b, e] = slice(t);
    for (int64_t i = b; i < e; ++i) data[i] = uint64_t(i);
  });
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<double> seconds(std::size_t(threads), 0.0);
    std::atomic<uint64_t> sink{0};
    run_team(threads, [&](int t) {
      auto [b, e] = slice(t);
      const auto t0 = Clock::now();
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int64_t i = b;
      for (; i + 4 <= e; i += 4) {
        s0 += data[i];
        s1 += data[i + 1];
        s2 += data[i + 2];
        s3 += data[i + 3];
      }
      for (; i < e; ++i) s0 += data[i];
      seconds[std::size_t(t)] = std::chrono::duration<double>(Clock::now() - t0).count();
      sink.fetch_add(s0 + s1 + s2 + s3, std::memory_order_relaxed);
    });
    // The team is done when its slowest thread is.
    const double slowest = *std::max_element(seconds.begin(), seconds.end());
    if (slowest > 0) best = std::max(best, double(words) * 8 / slowest / 1e9);
    g_sink.store(float(sink.load() & 1), std::memory_order_relaxed);
  }
  return best;
}

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
