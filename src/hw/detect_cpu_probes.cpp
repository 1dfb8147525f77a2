// Host CPU probes: usable CPUs, a team of pinned threads, and on it the FP32 FMA peak and memory read bandwidth.
// Hand-written: they measure what this host sustains now; packaged libraries (cpu_features, hwloc) only describe it.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "hw/detect_cpu_detail.hpp"
#include "hw/fma_peak_kernels.hpp"
#include "hw/hw.hpp"

namespace tileforge::hw {

namespace detail {

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

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;
using detail::usable_cpu_ids;

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

}  // namespace

int usable_cpu_count() {
  std::size_t n = usable_cpu_ids().size();
  if (n == 0) n = std::thread::hardware_concurrency();
  return n > 0 ? int(n) : 1;
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

}  // namespace tileforge::hw
