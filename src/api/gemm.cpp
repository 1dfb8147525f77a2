// tileforge::gemm(): validates the call, opens the device once per setting, and runs our own kernel with the config
// dispatch chooses (tuning DB record, planner's pick or heuristic, with any pins on top).
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <tuple>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "dispatch/dispatch.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge {
namespace {

// A and B are read only when there is a product to form (M, N, K > 0); C is touched only when M, N > 0.
Status null_operand(const char* pointer, const Problem& p, bool c) {
  return invalid_argument(fmt::format("{} is null with M, N, K = {}, {}, {} (allowed: a non-null pointer when {})", pointer,
                                      p.m, p.n, p.k, c ? "M > 0 and N > 0" : "M, N and K are all > 0"));
}

// The bytes an operand's `batch` matrices span, from `base`: [begin, end).
struct Bytes {
  uintptr_t begin = 0, end = 0;
};
Bytes bytes_of(const void* base, int64_t span, int64_t stride, int64_t batch, DType t) {
  // validate() keeps (batch - 1) * stride + span below 2^60 elements, so the byte count fits int64_t.
  const int64_t elements = span == 0 ? 0 : (batch - 1) * stride + span;
  const auto begin = reinterpret_cast<uintptr_t>(base);
  return {begin, begin + uintptr_t(elements) * uintptr_t(size_of(t))};
}

// C is written block by block while A and B are still being read (and packed): C sharing bytes with either would
// read partly written results, so it is refused rather than computed wrong. A and B may share storage (both are
// only read).
Status overlapping_operands(const Problem& p, const void* a, const void* b, const void* c) {
  const Bytes cb = bytes_of(c, p.span_c(), p.stride_c, p.batch, p.precision.output);
  for (auto [name, x] : {std::pair{"a", bytes_of(a, p.span_a(), p.stride_a, p.batch, p.precision.input)},
                         std::pair{"b", bytes_of(b, p.span_b(), p.stride_b, p.batch, p.precision.input)}}) {
    if (x.begin < x.end && cb.begin < cb.end && x.begin < cb.end && cb.begin < x.end) {
      return invalid_argument(fmt::format(
          "c overlaps {}: c spans bytes [{:#x}, {:#x}) and {} [{:#x}, {:#x}) (allowed: c in storage that shares no "
          "byte with a or b; gemm() reads a and b while it writes c)",
          name, cb.begin, cb.end, name, x.begin, x.end));
    }
  }
  return {};
}

// Opening a device reads its profile (and on a CPU measures its peak once); keep one per setting for the process.
Expected<Device> cached_device(const std::string& spec, const std::string& profile, int threads) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, int>, Device> devices;
  std::lock_guard lock(mutex);
  const auto key = std::make_tuple(spec, profile, threads);
  if (auto it = devices.find(key); it != devices.end()) return it->second;
  auto device = open_device(spec, profile, threads);
  if (!device) return device.status();
  devices.emplace(key, *device);
  return device;
}

// Dispatch queries the tuning DB (a few SQLite statements) and builds the backend's parameter space: a program that
// calls gemm() in a loop pays that once per shape and setting, not per call. So a record tuned later by another
// process is used from the next process on.
Expected<Config> dispatched_config(const Problem& p, const Device& device, Backend& ours, const Options& options) {
  dispatch::DispatchOptions dispatch;
  dispatch.pins = options.set;
  dispatch.db = db::LocationRequest{options.db, options.no_db};
  return dispatch::remembered_choice(p, device, ours, dispatch);
}

}  // namespace

Status gemm(const Problem& problem, const void* a, const void* b, void* c, const Options& options) {
  try {
    if (Status s = problem.validate(); !s) return s;
    const Problem p = problem.normalized();
    const bool product = p.m > 0 && p.n > 0 && p.k > 0;
    if (!a && product) return null_operand("a", p, false);
    if (!b && product) return null_operand("b", p, false);
    if (!c && p.m > 0 && p.n > 0) return null_operand("c", p, true);
    // Without a product A and B are not read, and C is only scaled by beta.
    if (product) {
      if (Status s = overlapping_operands(p, a, b, c); !s) return s;
    }
    if (const int most = int(hw::bounds::threads.max); options.threads < 0 || options.threads > most) {
      return invalid_argument(
          fmt::format("options.threads = {} (allowed: 0 for all cores, or 1 to {})", options.threads, most));
    }
    // NOTE: gemm() takes host pointers, so "auto" means the CPU here until device pointers arrive with the GPU path.
    const std::string spec = options.device == "auto" ? "cpu" : options.device;
    auto device = cached_device(spec, options.profile, options.threads);
    if (!device) return device.status();
    Backend* ours = own_backend(device->kind);
    if (!ours) {
      return unsupported(fmt::format("options.device '{}': tileforge has no backend for device kind '{}' in this build",
                                     options.device, device->kind));
    }
    if (Support ok = ours->available(); !ok) return not_available(fmt::format("{}: {}", ours->name(), ok.reason));
    if (Support ok = ours->supports(p, *device); !ok) {
      return unsupported(fmt::format("{} cannot run {}: {}", ours->name(), p.describe(), ok.reason));
    }
    auto config = dispatched_config(p, *device, *ours, options);
    if (!config) return config.status();
    auto kernel = ours->prepare(p, *config, *device);
    if (!kernel) return kernel.status();
    return ours->run(**kernel, p, GemmArgs{a, b, c, nullptr});
  } catch (const std::bad_alloc&) {
    return Status(Code::internal, "out of memory");
  } catch (const std::exception& e) {
    return Status(Code::internal, e.what());
  }
}

}  // namespace tileforge
