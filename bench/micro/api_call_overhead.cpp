// Host-side cost of an API call (issue 15's acceptance): a prepared plan's run, gemm() on a shape seen before, and
// prepare() of a new shape, on the CPU (tiny shapes) and on a GPU (call to return on a stream, beside cuBLAS).
//
//   tileforge_api_overhead [--reps N] [--json PATH] [--profile NAME [--nk N]]
//
// Medians of N timed calls each (after warm-up). On the GPU a call returns once its kernel is enqueued; the stream
// is synchronized every 32 calls, outside the timed region, so the launch queue never fills and the times are host
// time, not GPU time. --profile NAME times instead the host side of a new shape's GPU prepare for that chip record
// with no GPU present: dispatch's choice through the cuda backend, and the kernel's preparation up to the driver
// (legality, generated source, kernel-cache key), the same shapes as the GPU row; --nk N: only shapes Mx N x N.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backends/backend.hpp"
#include "dispatch/dispatch.hpp"
#include "hw/hw.hpp"
#include "tileforge/tileforge.hpp"
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "backends/cuda/common/cuda_common.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "hw/cuda_driver.hpp"
#endif

namespace tf = tileforge;
using Clock = std::chrono::steady_clock;

namespace {

struct Row {
  std::string device, what, shape;
  double median_us = 0, q1_us = 0, q3_us = 0;
  int reps = 0;
  std::string note;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::size_t(q * double(v.size() - 1))];
}

// Times `call` reps times (after `warm` untimed calls); `between`, when given, runs untimed every 32 calls.
Row time_calls(const std::string& device, const std::string& what, const std::string& shape, int reps,
               const std::function<void(int)>& call, const std::function<void()>& between = {}) {
  for (int i = 0; i < 10; ++i) call(i);
  if (between) between();
  std::vector<double> us;
  us.reserve(std::size_t(reps));
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    call(i);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (between && i % 32 == 31) between();
  }
  if (between) between();
  return Row{device, what, shape, quantile(us, 0.5), quantile(us, 0.25), quantile(us, 0.75), reps, ""};
}

void die(const std::string& what, const tf::Status& s) {
  std::fprintf(stderr, "tileforge_api_overhead: %s: %s\n", what.c_str(), s.to_string().c_str());
  std::exit(1);
}

tf::Problem tiny(int64_t m, int64_t n, int64_t k, tf::DType t) {
  tf::Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.precision = {t, t, tf::DType::f32};
  return p;
}

void cpu_rows(int reps, std::vector<Row>& rows) {
  tf::Options o;
  o.device = "cpu";
  const tf::Problem p = tiny(16, 16, 16, tf::DType::f32);
  std::vector<float> a(1 << 16, 0.5f), b(1 << 16, 0.25f), c(1 << 16);
  const auto t0 = Clock::now();
  const tf::GemmPlan plan = tf::prepare(p, o);
  const double first_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  if (!plan) die("prepare", plan.status());
  rows.push_back(Row{"cpu", "first prepare() of the process (device opened, nothing measured)", "16x16x16 f32",
                     first_us, first_us, first_us, 1, plan.notes().empty() ? "host peaks stored by an earlier measuring process" : "host peak nominal"});
  rows.push_back(time_calls("cpu", "GemmPlan::run (kernel included)", "16x16x16 f32", reps,
                            [&](int) { (void)plan.run(a.data(), b.data(), c.data()); }));
  rows.push_back(time_calls("cpu", "gemm(), shape seen before (kernel included)", "16x16x16 f32", reps,
                            [&](int) { (void)tf::gemm(p, a.data(), b.data(), c.data(), o); }));
  // New shapes: each call a shape this process has not planned (M = 17, 18, ...); prepare() only, no kernel.
  const int fresh = std::min(reps, 1000);
  rows.push_back(time_calls("cpu", "prepare() of a new shape (DB lookup + planner + kernel selection)", "Mx16x16 f32",
                            fresh, [&](int i) { (void)tf::prepare(tiny(1000 + i, 16, 16, tf::DType::f32), o); }));
}

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
void gpu_rows(int reps, std::vector<Row>& rows) {
  namespace cu = tf::cuda;
  auto d = cu::driver();
  if (!d || cu::device_count() == 0) {
    std::printf("GPU rows skipped: %s\n", d ? "no CUDA device" : d.status().to_string().c_str());
    return;
  }
  if (auto ctx = cu::activate(0); !ctx) die("activate", ctx.status());
  const tf::Problem p = tiny(64, 64, 64, tf::DType::f16);
  auto a = cu::DeviceBuffer::allocate(64 * 64 * 2), b = cu::DeviceBuffer::allocate(64 * 64 * 2),
       c = cu::DeviceBuffer::allocate(64 * 64 * 2);
  if (!a || !b || !c) die("cuMemAlloc", !a ? a.status() : !b ? b.status() : c.status());
  for (auto* buf : {&*a, &*b, &*c}) (void)buf->fill_bytes(0x3c);  // 0x3c3c: f16 1.06
  auto owned = cu::Stream::create();
  if (!owned) die("stream", owned.status());
  CUstream stream = owned->get();
  auto sync = [&] { (void)(*d)->cuStreamSynchronize(stream); };
  tf::Options o;
  o.device = "cuda:0";
  o.stream = stream;
  const tf::GemmPlan plan = tf::prepare(p, o);
  if (!plan) die("prepare (cuda)", plan.status());
  const std::string shape = "64x64x64 f16";
  if (tf::Status s = plan.run(a->data(), b->data(), c->data(), stream); !s) die("plan.run (cuda)", s);
  sync();
  Row ours = time_calls("cuda:0", "GemmPlan::run, call to return", shape, reps,
                        [&](int) { (void)plan.run(a->data(), b->data(), c->data(), stream); }, sync);
  ours.note = plan.config().describe();
  rows.push_back(ours);
  rows.push_back(time_calls("cuda:0", "gemm(), shape seen before, call to return", shape, reps,
                            [&](int) { (void)tf::gemm(p, a->data(), b->data(), c->data(), o); }, sync));
  // New shapes (M = 1000, 1001, ...): dispatch, the planner over the sm90 space, and the kernel. Run the tool twice
  // with one TILEFORGE_CACHE_DIR: the first run compiles each config the planner picks, the second takes every
  // kernel from the cache (issue 15's "new shape, not counting a JIT compile"); prepare() only.
  const int fresh = std::min(reps, 100);
  Row fresh_row = time_calls("cuda:0", "prepare() of a new shape (DB lookup + planner + kernel from the cache)",
                             "Mx256x256 f16", fresh,
                             [&](int i) { (void)tf::prepare(tiny(1000 + i, 256, 256, tf::DType::f16), o); });
  fresh_row.note = "kernels compiled by this run are in it: time a second run with the same kernel cache";
  rows.push_back(fresh_row);
  if (tf::Backend* cublas = tf::find_backend("cublas"); cublas && cublas->available()) {
    auto device = tf::open_device("cuda:0");
    if (!device) die("open cuda:0", device.status());
    auto kernel = cublas->prepare(p, tf::Config{}, *device);
    if (!kernel) die("cublas prepare", kernel.status());
    const tf::GemmArgs args{a->data(), b->data(), c->data(), stream};
    Row native = time_calls("cuda:0", "cuBLAS: cublasSetStream + cublasGemmStridedBatchedEx, call to return", shape,
                            reps, [&](int) { (void)cublas->run(**kernel, p, args); }, sync);
    native.note = "through the native backend (argument check, set stream, one cuBLAS call)";
    rows.push_back(native);
  }
}
#endif

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
// The host side of a new shape's GPU prepare for a chip record, with no GPU: the device carries the record but not
// the kind "cuda", so that the families answer for the record (runs_on) rather than for a device that is absent.
// Each call is a shape this process has not seen (M = 1000, 1001, ... across warm-up and timed calls).
void profile_rows(const std::string& name, int64_t only_nk, int reps, std::vector<Row>& rows) {
  auto profile = tf::hw::load_profile(name);
  if (!profile) die("--profile " + name, profile.status());
  tf::Device device;
  device.kind = "cpu";
  device.name = profile->name;
  device.profile = *profile;
  tf::Backend* cuda = tf::find_backend("cuda");
  if (!cuda) die("cuda backend", tf::unsupported("this build has no cuda backend"));
  tf::dispatch::DispatchOptions options;
  int64_t next = 1000;
  const std::string label = fmt::format("{} (no device)", profile->name);
  const int fresh = std::min(reps, 100);
  // The GPU row's shapes, and large ones, where the search meets more configs it cannot rule out at once.
  for (const int64_t nk : {256, 4096}) {
    if (only_nk > 0 && nk != only_nk) continue;
    std::string picked;
    rows.push_back(time_calls(label, "dispatch's choice of a new shape (DB lookup + planner)",
                              fmt::format("Mx{}x{} f16", nk, nk), fresh, [&](int) {
                                auto c = tf::dispatch::choose_config(tiny(next++, nk, nk, tf::DType::f16), device,
                                                                     *cuda, options);
                                if (!c) die("choose_config", c.status());
                                picked = c->source;
                              }));
    rows.back().note = "source " + picked;
  }
  // Then as the backend's prepare() goes on for an sm90 pick, up to the driver: the config checked again, the
  // instance's source generated, its kernel-cache key (a module already loaded is found by it).
  auto nvrtc = tf::jit::Nvrtc::get();
  if (!nvrtc) {
    std::printf("kernel rows skipped: %s\n", nvrtc.status().to_string().c_str());
    return;
  }
  if (only_nk > 0 && only_nk != 256) return;
  std::string entry;
  rows.push_back(time_calls(label, "dispatch's choice and the kernel up to the driver (check, source, cache key)",
                            "Mx256x256 f16", fresh, [&](int) {
                              const tf::Problem p = tiny(next++, 256, 256, tf::DType::f16);
                              auto c = tf::dispatch::choose_config(p, device, *cuda, options);
                              if (!c) die("choose_config", c.status());
                              if (c->config.family != "sm90") die("family", tf::unsupported(c->config.describe()));
                              const tf::ParamSpace space = cuda->space(p, device);
                              if (tf::Status s = space.check(c->config); !s) die("check", s);
                              const tf::cuda::Sm90Source src = tf::cuda::sm90_source(p, c->config);
                              if (tf::cuda::detail::kernel_key(src.source, profile->arch, **nvrtc).empty()) {
                                die("key", tf::Status());
                              }
                              entry = src.entry;
                            }));
  rows.back().note = "last: " + entry;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  int reps = 5000;
  std::string json_path, profile;
  int64_t nk = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--profile" && i + 1 < argc) {
      profile = argv[++i];
    } else if (arg == "--nk" && i + 1 < argc) {
      nk = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: tileforge_api_overhead [--reps N (100 to 1000000)] [--json PATH] [--profile NAME [--nk N]]\n");
      return 2;
    }
  }
  if (reps < 100 || reps > 1000000) {
    std::fprintf(stderr, "tileforge_api_overhead: --reps %d (allowed: 100 to 1000000)\n", reps);
    return 2;
  }
  std::vector<Row> rows;
  if (!profile.empty()) {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    profile_rows(profile, nk, reps, rows);
#else
    std::fprintf(stderr, "tileforge_api_overhead: --profile needs a build with the CUDA toolkit\n");
    return 2;
#endif
  } else {
    cpu_rows(reps, rows);
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    gpu_rows(reps, rows);
#endif
  }
  std::printf("| device | call | shape | median us | q1 us | q3 us | reps | note |\n|---|---|---|---|---|---|---|---|\n");
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    std::printf("| %s | %s | %s | %.2f | %.2f | %.2f | %d | %s |\n", r.device.c_str(), r.what.c_str(), r.shape.c_str(),
                r.median_us, r.q1_us, r.q3_us, r.reps, r.note.c_str());
    out.push_back({{"device", r.device}, {"call", r.what}, {"shape", r.shape}, {"median_us", r.median_us},
                   {"q1_us", r.q1_us}, {"q3_us", r.q3_us}, {"reps", r.reps}, {"note", r.note}});
  }
  if (!json_path.empty()) {
    std::FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "tileforge_api_overhead: --json %s: cannot write\n", json_path.c_str());
      return 1;
    }
    std::fputs((out.dump(2) + "\n").c_str(), f);
    std::fclose(f);
  }
  return 0;
}
