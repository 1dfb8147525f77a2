// Copy bandwidth under the bench contract: two buffers of the timer's memory, the copy timed rep after rep.
#include "measure/bandwidth.hpp"

#include <fmt/format.h>

#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "hw/cuda_device.hpp"
#endif

namespace tileforge::measure {

Expected<CopyBandwidth> measure_copy_bandwidth(RepTimer& timer, const Contract& contract, std::size_t bytes) {
  if (bytes == 0) return invalid_argument("a bandwidth copy needs at least one byte");
  auto src = timer.allocate(bytes);
  if (!src) return src.status();
  auto dst = timer.allocate(bytes);
  if (!dst) return dst.status();
  // Both written once, so that no rep (warm-up included) pays for pages touched the first time.
  if (Status s = (*src)->fill_bytes(0x5A); !s) return s;
  if (Status s = (*dst)->fill_bytes(0xA5); !s) return s;
  // copy_from is ordered on the timer's stream, so the timer's events bracket exactly one copy.
  const std::vector<Interleaved> timed =
      time_interleaved(timer, contract, {[&] { return (*dst)->copy_from(**src); }});
  if (!timed[0].failure.ok()) return timed[0].failure;
  CopyBandwidth bw;
  bw.method = "copy";
  bw.bytes = bytes;
  bw.timing = summarize(timed[0].samples);
  if (bw.timing.median_ms <= 0) return not_available("the copy was not timed (no reps, or a zero median)");
  bw.gbps = 2.0 * double(bytes) / (bw.timing.median_ms * 1e-3) / 1e9;
  return bw;
}

std::size_t bandwidth_copy_bytes(int64_t l2_bytes) {
  const int64_t l2 = l2_bytes > 0 ? l2_bytes : (int64_t(64) << 20);
  return std::size_t((2 * l2 + (1 << 20) - 1) >> 20 << 20);
}

Expected<CopyBandwidth> measure_device_bandwidth(const Device& device, RepTimer& timer, const Contract& contract) {
  if (device.kind != "cuda")
    return not_available(fmt::format("device bandwidth is measured on CUDA devices only, not on '{}'", device.kind));
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
  // The L2 of the device that runs, not of the planning profile: --profile may name another chip.
  auto props = cuda::query_device(device.ordinal);
  if (!props) return props.status();
  auto bw = measure_copy_bandwidth(timer, contract, bandwidth_copy_bytes(props->l2_bytes));
  if (!bw) return bw.status();
  bw->method = fmt::format("device-to-device copy (cuMemcpyDtoDAsync) of twice the L2, {} MiB, read and write counted",
                           bw->bytes >> 20);
  return bw;
#else
  return not_available("this build has no CUDA support");
#endif
}

}  // namespace tileforge::measure
