// The list of backends in this build, the native library for a problem, and opening a device by name.
#include <algorithm>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "backends/cuda/cuda_backend.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"
#endif
#include "backends/native/native_backends.hpp"
#include "core/parse.hpp"
#include "hw/hw.hpp"

namespace tileforge {
namespace {

std::vector<std::unique_ptr<Backend>> make_all() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(cpu::make_cpu_backend());
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
  v.push_back(cuda::make_cuda_backend());
#endif
  v.push_back(make_openblas_backend());
#if defined(TILEFORGE_HAVE_ONEDNN)
  v.push_back(make_onednn_backend());
#endif
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
  v.push_back(make_cublas_backend());
  v.push_back(make_cublaslt_backend());
#endif
  return v;
}

}  // namespace

int effective_threads(const Device& device) {
  if (device.threads > 0) return device.threads;
  // The cores of the CPU that runs the threads, whichever chip record plans them (--profile).
  if (device.kind == "cpu") return std::max(1, hw::usable_cpu_count());
  return 0;
}

const std::vector<Backend*>& all_backends() {
  static const std::vector<std::unique_ptr<Backend>> owned = make_all();
  static const std::vector<Backend*> list = [] {
    std::vector<Backend*> l;
    for (const auto& b : owned) l.push_back(b.get());
    return l;
  }();
  return list;
}

Backend* find_backend(std::string_view name) {
  for (Backend* b : all_backends())
    if (b->name() == name) return b;
  return nullptr;
}

Backend* own_backend(std::string_view device_kind) {
  for (Backend* b : all_backends())
    if (!b->native() && b->device_kind() == device_kind) return b;
  return nullptr;
}

NativeChoice native_for(const Problem& problem, const Device& device) {
  NativeChoice choice;
  // The library a user of this chip would call for this precision, then the others as peers.
  std::vector<std::string_view> order;
  if (device.kind == "cpu") {
    if (problem.precision.input == DType::f32) {
      order = {"openblas", "onednn"};
    } else {
      order = {"onednn", "openblas"};
    }
  } else if (device.kind == "cuda") {
    order = {"cublas", "cublaslt"};
  }
  if (order.empty()) {
    choice.missing = fmt::format("no vendor library is known for device kind {}", device.kind);
    return choice;
  }
  std::vector<std::string> why;
  for (std::size_t i = 0; i < order.size(); ++i) {
    Backend* b = find_backend(order[i]);
    std::string reason;
    if (!b) {
      reason = fmt::format("{}: not built into this tileforge", order[i]);
    } else if (Support s = b->available(); !s) {
      reason = fmt::format("{}: {}", order[i], s.reason);
    } else if (Support s = b->supports(problem, device); !s) {
      reason = fmt::format("{}: {}", order[i], s.reason);
    }
    if (i == 0) {
      if (reason.empty()) {
        choice.native = b;
      } else {
        choice.missing = reason;
      }
    } else if (reason.empty()) {
      choice.peers.push_back(b);
    }
  }
  return choice;
}

namespace {

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
Expected<Device> open_cuda(int ordinal, int threads) {
  const int count = cuda::cuda_device_count();
  if (count == 0) {
    auto d = cuda::driver();
    return not_available(fmt::format("no CUDA device ({})", d ? "the driver reports none" : d.status().message()));
  }
  if (ordinal >= count) {
    return invalid_argument(fmt::format("--device cuda:{}: only {} CUDA device(s) (allowed: cuda:0 .. cuda:{})", ordinal,
                                        count, count - 1));
  }
  auto props = cuda::query_device(ordinal);
  if (!props) return props.status();
  hw::GpuProperties gpu;
  gpu.name = props->name;
  gpu.cc_major = props->cc_major;
  gpu.cc_minor = props->cc_minor;
  gpu.sm_count = props->sm_count;
  gpu.clock_ghz = props->clock_khz / 1e6;
  gpu.smem_per_sm_bytes = props->smem_per_sm_bytes;
  gpu.smem_per_block_bytes = props->smem_per_block_optin_bytes;
  gpu.registers_per_sm = props->registers_per_sm;
  gpu.max_threads_per_sm = props->max_threads_per_sm;
  gpu.l2_bytes = props->l2_bytes;
  gpu.mem_bandwidth_gbps = 2.0 * props->memory_clock_khz * 1e3 * props->memory_bus_bits / 8 / 1e9;
  Device d;
  d.kind = "cuda";
  d.ordinal = ordinal;
  d.name = props->name;
  d.threads = threads;
  d.profile = hw::gpu_profile_from_properties(gpu);
  return d;
}
#endif

Expected<Device> open_cpu(int threads, hw::HostPeaks peaks) {
  Device d;
  d.kind = "cpu";
  d.name = "cpu";
  d.threads = threads;
  d.profile = hw::host_cpu_profile(peaks);
  return d;
}

}  // namespace

Expected<Device> open_device(std::string_view spec, std::string_view profile, int threads, hw::HostPeaks peaks) {
  if (threads < 0) return invalid_argument(fmt::format("--threads {} is negative (allowed: 0 for all cores, or >= 1)", threads));
  Expected<Device> d = invalid_argument("");
  if (spec == "cpu") {
    d = open_cpu(threads, peaks);
  } else if (spec == "auto") {
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    Backend* cuda = own_backend("cuda");
    d = (cuda && cuda->available()) ? open_cuda(0, threads) : open_cpu(threads, peaks);
#else
    d = open_cpu(threads, peaks);
#endif
  } else if (spec == "cuda" || spec.starts_with("cuda:")) {
    int ordinal = 0;
    if (spec.starts_with("cuda:")) {
      auto n = parse_int(spec.substr(5), "--device cuda:N ordinal");
      if (!n || *n < 0 || *n > 1024) {
        return invalid_argument(fmt::format("--device '{}': N must be a non-negative integer (allowed: cpu, cuda, cuda:N, auto)", spec));
      }
      ordinal = int(*n);
    }
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
    d = open_cuda(ordinal, threads);
#else
    return not_available(fmt::format("--device '{}': no CUDA device (this build has no CUDA backend)", spec));
#endif
  } else {
    return invalid_argument(fmt::format("--device '{}' is not a known device (allowed: cpu, cuda, cuda:N, auto)", spec));
  }
  if (!d) return d.status();
  if (!profile.empty()) {
    auto p = hw::load_profile(profile);
    if (!p) return p.status();
    // A record of another kind of chip cannot describe this device: its peaks and limits would plan kernels that
    // cannot run here (a GPU record on the CPU asked the CPU family for 8670-row blocks). Planning for a chip that
    // is not present is `plan --profile`'s job.
    const std::string_view want = d->kind == "cpu" ? "cpu" : "gpu";
    if (p->kind != want) {
      return invalid_argument(fmt::format(
          "--profile {} is a {} record and --device {} is a {} (allowed: a {} record, e.g. {}; to plan for {} "
          "without it: tileforge plan --profile {})",
          p->name, p->kind, spec, want, want, want == "cpu" ? "host or generic-avx512" : "h200", p->name, p->name));
    }
    d->profile = std::move(*p);
  }
  return d;
}

}  // namespace tileforge
