// The device's memory bandwidth as a bench run measures it: a device-to-device copy timed like the GEMMs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/backend.hpp"
#include "core/expected.hpp"
#include "measure/protocol.hpp"
#include "measure/timer.hpp"

namespace tileforge::measure {

// One copy-bandwidth measurement: what was copied, how it was timed, and the rate.
struct CopyBandwidth {
  std::string method;          // how it was measured, for the report ("device-to-device copy (cuMemcpyDtoDAsync) ...")
  std::size_t bytes = 0;       // the buffer copied
  Timing timing;               // the copy's reps under the contract: median, min, max, count
  double gbps = 0;             // 2 * bytes / median time in 10^9 bytes/s: every byte is read once and written once
};

// Copies one buffer of `bytes` into another of the timer's memory, rep after rep under the contract (warm-up, then
// at least min_reps and min_time_s, capped at max_time_s), as the GEMMs of a bench run are timed; the rate is over
// the median. invalid_argument for 0 bytes; the timer's Status when allocating or copying fails.
Expected<CopyBandwidth> measure_copy_bandwidth(RepTimer& timer, const Contract& contract, std::size_t bytes);

// The buffer that measures the memory rather than the cache: twice the L2, rounded up to whole MiB like the timer's
// scrub buffer, so that neither the reads nor the writes of one copy can be served by the L2 (64 MiB when the L2 is
// unknown, as the timer assumes).
std::size_t bandwidth_copy_bytes(int64_t l2_bytes);

// measure_copy_bandwidth on a CUDA device with bandwidth_copy_bytes of the L2 the driver reports (the running
// device's, whichever profile plans). not_available for any other device: a CPU's bandwidth is not measured here.
Expected<CopyBandwidth> measure_device_bandwidth(const Device& device, RepTimer& timer, const Contract& contract);

}  // namespace tileforge::measure
