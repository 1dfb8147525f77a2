// Software identity of a device and kernel family versions, for tuning records and their lookup.
#include "tune/identity.hpp"

#include <fmt/format.h>

#include "bench/report.hpp"
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "hw/cuda_device.hpp"
#include "jit/nvrtc.hpp"
#endif

namespace tileforge::tune {

Software software_of(const Device& device) {
  Software s;
  if (device.kind == "cpu") {
    // The micro-kernels are compiled with the library: its compiler is what could change their speed.
    s.toolkit = bench::compiler_id();
    return s;
  }
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
  if (device.kind == "cuda") {
    if (auto props = cuda::query_device(device.ordinal); props && props->driver_version > 0) {
      s.driver = fmt::format("{}.{}", props->driver_version / 1000, props->driver_version % 1000 / 10);
    }
    if (auto nvrtc = jit::Nvrtc::get(); nvrtc) s.toolkit = fmt::format("NVRTC {}.{}", (*nvrtc)->major(), (*nvrtc)->minor());
  }
#endif
  return s;
}

db::Fingerprint fingerprint(const Device& device) {
  Software s = software_of(device);
  return db::fingerprint_of(device, std::move(s.driver), std::move(s.toolkit));
}

int64_t family_version(std::string_view family) {
  // One line per family; bump a number when a parameter of that family changes meaning.
  if (family == "sm80") return 1;
  if (family == "cpu-avx512" || family == "cpu-avx2" || family == "cpu-generic") return 1;
  return 0;
}

}  // namespace tileforge::tune
