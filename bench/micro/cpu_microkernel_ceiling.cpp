// The CPU micro-kernels' ceilings, to tell a kernel's own limit from its loop nest's: every kernel of the families
// the host runs, on one core, (1) with all its panels in L1, (2) over an A block in L2 as the driver's inner loop
// walks it, (3) the same with C's rows 16 KB apart as in a 4096-wide C, and (4) the whole GEMM (tileforge::gemm,
// this kernel and KC pinned) at 2048^3 on one thread and on all the process's cores, each against the FMA peak
// measured the same way.
//
//   build/tileforge_cpu_micro [SECONDS]     (seconds per measurement, default 0.2)
//
// Prints one line per (kernel, KC): GFLOP/s and the fraction of the peak (cores x one core's peak for (4)).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/microkernel.hpp"
#include "hw/hw.hpp"
#include "tileforge/tileforge.hpp"
#include "verify/verify.hpp"

namespace {

using namespace tileforge;
using Clock = std::chrono::steady_clock;

// n random floats in [-1, 1) from the operands' generator (not zeros: an FMA on zeros can take a faster path on
// some cores), with 16 floats of slack so that aligned() can start the data on a 64-byte boundary.
std::vector<float> random_floats(std::size_t n, uint64_t& seed) {
  std::vector<float> v(n + 16);
  verify::fill_random(v.data(), DType::f32, int64_t(v.size()), seed++);
  return v;
}

// The first 64-byte aligned float of v.
float* aligned(std::vector<float>& v) {
  auto p = reinterpret_cast<std::uintptr_t>(v.data());
  return reinterpret_cast<float*>((p + 63) & ~std::uintptr_t(63));
}

// Best rate over batches of `body` (each doing `flops`) run for about `seconds` in all.
template <class F>
double best_gflops(double flops, double seconds, F&& body) {
  body();  // warm up caches and the core's clock
  double best = 0;
  const auto stop = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < stop) {
    const auto t0 = Clock::now();
    body();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) best = std::max(best, flops / s / 1e9);
  }
  return best;
}

// tileforge::gemm at n^3 (f32, RR) with the kernel and KC pinned, on `threads` threads: the best of three calls.
double gemm_gflops(int mr, int nr, int kc, int threads, int64_t n, uint64_t& seed) {
  static std::vector<float> a, b, c;
  if (a.size() != std::size_t(n * n)) {
    a = random_floats(std::size_t(n * n), seed);
    b = random_floats(std::size_t(n * n), seed);
    c = random_floats(std::size_t(n * n), seed);
  }
  Problem p;
  p.m = p.n = p.k = n;
  Options o;
  o.device = "cpu";
  o.threads = threads;
  o.no_db = true;
  o.set = {{"MR", mr}, {"NR", nr}, {"KC", kc}};
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    const auto t0 = Clock::now();
    const Status st = gemm(p, a.data(), b.data(), c.data(), o);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!st.ok()) {
      std::fprintf(stderr, "gemm failed: %s\n", st.to_string().c_str());
      return 0;
    }
    if (rep > 0) best = std::max(best, p.flops() / s / 1e9);  // the first call plans and touches the pages
  }
  return best;
}

// `whole_gemm`: also time tileforge::gemm with this family's kernels, which the planner uses only for the host's
// widest ISA (the narrower family's kernels cannot be pinned through the public API on a wider host).
void run_family(std::string_view family, hw::FmaIsa isa, double seconds, bool whole_gemm) {
  // The best of five short measurements: another process taking the core for a moment only lowers a reading.
  double peak = 0;
  for (int i = 0; i < 5; ++i) {
    const auto p = hw::measure_fma_peak_gflops(isa, 1, std::max(0.05, seconds / 2));
    if (!p.ok()) {
      std::printf("%s: skipped (%s)\n", std::string(family).c_str(), p.status().to_string().c_str());
      return;
    }
    peak = std::max(peak, *p);
  }
  std::printf("%s: FMA peak on one core %.1f GFLOP/s (best of 5)\n", std::string(family).c_str(), peak);
  uint64_t seed = 42;
  for (const cpu::MicroKernel& mk : cpu::microkernels_for(family)) {
    for (int kc : {128, 256, 432}) {
      const int mr = mk.mr, nr = mk.nr;
      // L1: one A micro-panel, one B micro-panel and the C tile, reused call after call (beta = 1, as every KC
      // pass after the first).
      auto a = random_floats(std::size_t(mr) * kc, seed), b = random_floats(std::size_t(kc) * nr, seed),
           c = random_floats(std::size_t(mr) * nr, seed);
      float *ap = aligned(a), *bp = aligned(b), *cp = aligned(c);
      constexpr int kCalls = 256;
      const double call_flops = 2.0 * mr * nr * kc;
      const double l1 = best_gflops(call_flops * kCalls, seconds, [&] {
        for (int i = 0; i < kCalls; ++i) mk.compute(kc, ap, bp, nr, cp, nr, 1.0f, 1.0f);
      });
      // L2: an A block of ~1 MB walked micro-panel by micro-panel against one B micro-panel, C rows NR apart in a
      // compact block, as the driver's ir loop does for one NR-panel.
      const int panels = std::max(1, int((1 << 20) / (4 * mr * kc)));
      auto ab = random_floats(std::size_t(panels) * mr * kc, seed), cb = random_floats(std::size_t(panels) * mr * nr, seed);
      float *abp = aligned(ab), *cbp = aligned(cb);
      const double l2 = best_gflops(call_flops * panels, seconds, [&] {
        for (int p = 0; p < panels; ++p)
          mk.compute(kc, abp + std::size_t(p) * mr * kc, bp, nr, cbp + std::size_t(p) * mr * nr, nr, 1.0f, 1.0f);
      });
      // The same with C's rows 16 KB apart (ldc = 4096 floats), so each tile's rows sit on different pages and
      // come from wherever the lines of a large C are.
      constexpr int64_t kWideLdc = 4096;
      std::vector<float> cw(std::size_t(panels) * mr * kWideLdc + 16, 0.5f);
      float* cwp = aligned(cw);
      const double l2_wide_c = best_gflops(call_flops * panels, seconds, [&] {
        for (int p = 0; p < panels; ++p)
          mk.compute(kc, abp + std::size_t(p) * mr * kc, bp, nr, cwp + std::size_t(p) * mr * kWideLdc, kWideLdc,
                     1.0f, 1.0f);
      });
      std::printf("  %2dx%-2d KC %3d  L1 %6.1f (%5.1f%%)  A in L2 %6.1f (%5.1f%%)  + C rows 16 KB apart %6.1f (%5.1f%%)",
                  mr, nr, kc, l1, 100.0 * l1 / peak, l2, 100.0 * l2 / peak, l2_wide_c, 100.0 * l2_wide_c / peak);
      if (whole_gemm) {
        const int cores = hw::usable_cpu_count();
        const double one = gemm_gflops(mr, nr, kc, 1, 2048, seed);
        const double all = cores > 1 ? gemm_gflops(mr, nr, kc, cores, 2048, seed) : one;
        std::printf("  GEMM 2048^3: 1 thread %6.1f (%5.1f%%), %d threads %6.1f (%5.1f%%)", one, 100.0 * one / peak,
                    cores, all, 100.0 * all / (cores * peak));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.2;
  if (!(seconds > 0) || seconds > 60) {
    std::fprintf(stderr, "tileforge_cpu_micro: SECONDS must be in (0, 60], got '%s'\n", argv[1]);
    return 2;
  }
  const auto& isa = hw::cpu_isa();
  if (isa.has_avx512()) run_family("cpu-avx512", hw::FmaIsa::avx512, seconds, true);
  if (isa.has_avx2()) run_family("cpu-avx2", hw::FmaIsa::avx2, seconds, !isa.has_avx512());
  return 0;
}
