// The list of backends in this build, the native library for a problem, and opening a device by name.
#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/native/native_backends.hpp"
#include "core/parse.hpp"
#include "hw/hw.hpp"

namespace tileforge {
namespace {

std::vector<std::unique_ptr<Backend>> make_all() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(cpu::make_cpu_backend());
  v.push_back(make_openblas_backend());
#if defined(TILEFORGE_HAVE_ONEDNN)
  v.push_back(make_onednn_backend());
#endif
  return v;
}

}  // namespace

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

Expected<Device> open_device(std::string_view spec, std::string_view profile, int threads) {
  if (threads < 0) return invalid_argument(fmt::format("--threads {} is negative (allowed: 0 for all cores, or >= 1)", threads));
  Device d;
  if (spec == "cpu" || spec == "auto") {
    d.kind = "cpu";
    d.name = "cpu";
    d.threads = threads;
    d.profile = hw::host_cpu_profile();
  } else if (spec == "cuda" || spec.starts_with("cuda:")) {
    if (spec.starts_with("cuda:")) {
      auto n = parse_int(spec.substr(5), "--device cuda:N ordinal");
      if (!n || *n < 0) return invalid_argument(fmt::format("--device '{}': N must be a non-negative integer", spec));
    }
    return not_available(fmt::format("--device '{}': no CUDA device (this build has no CUDA backend yet)", spec));
  } else {
    return invalid_argument(fmt::format("--device '{}' is not a known device (allowed: cpu, cuda, cuda:N, auto)", spec));
  }
  if (!profile.empty()) {
    auto p = hw::load_profile(profile);
    if (!p) return p.status();
    d.profile = std::move(*p);
  }
  return d;
}

}  // namespace tileforge
