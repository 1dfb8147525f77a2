// The sm90 family's host files' shared reads of a config and a problem (sm90_family.cpp, sm90_space.cpp): the
// register targets, parameter reads by literal name, and why TMA cannot read or store an operand in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tileforge/tileforge.hpp"

namespace tileforge::cuda::sm90_detail {

// setmaxnreg targets with two consumer warpgroups (the probe's, bench/results/h200/2026-12-01-sm90-probe: 40 for
// the producer, which only issues TMA copies; 232 for each consumer, which holds up to 128 f32 accumulators).
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;
// With three: the 65536 registers less the producer's 128 x 40 leave 157 per consumer thread, 152 in whole eights;
// beside the addressing and the barriers' phases (about 56 in the two-consumer kernel) that holds 96 accumulators.
constexpr int kConsumerRegs3 = 152;
constexpr int kMaxAccumulators3 = 96;
// With CONSUMER_K each warpgroup holds the whole tile: 128x128 (128 accumulators beside the hand-over and the fix-up's
// loads) spilled 444 bytes in the NVRTC build test, so its tiles hold at most 64 per thread.
constexpr int kMaxAccumulatorsK = 64;
// Registers per thread a kernel may use without setmaxnreg.
constexpr int kMaxRegistersPerThread = 255;

// Whether `key` is the literal `name`: lengths first, then a fixed-size compare the compiler inlines (a std::string
// compare calls memcmp). The constraints and Sm90ConfigView match parameter names this way thousands of times per
// plan.
template <std::size_t N>
inline bool named(std::string_view key, const char (&name)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), name, N - 1) == 0;
}

// A parameter of a complete config, by its literal name: a scan of the map's (at most fourteen) names. A map lookup
// built a std::string and called memcmp at each level.
template <std::size_t N>
inline int64_t p(const Config& c, const char (&name)[N]) {
  for (const auto& [key, value] : c.params) {
    if (named(key, name)) return value;
  }
  throw std::out_of_range(fmt::format("sm90 config lacks {}", name));
}

// Why TMA cannot read the operand with leading dimension `ld` (named `what`) in place: a row pitch that is not a
// multiple of 16 bytes; "" when it can.
inline std::string tma_ld_refusal(const Problem& q, int64_t ld, const char* what) {
  const int64_t elems = 16 / int64_t(size_of(q.precision.input));
  if (ld % elems == 0) return {};
  return fmt::format("{} = {} is not a multiple of {} elements (TMA reads rows 16 bytes apart)", what, ld, elems);
}

// A parameter that only some spaces declare, by its literal name, 0 where the config lacks it (a scan, as p() does).
template <std::size_t N>
inline int64_t p_or_zero(const Config& c, const char (&name)[N]) {
  for (const auto& [key, value] : c.params) {
    if (named(key, name)) return value;
  }
  return 0;
}

// SWAP_AB of a config, 0 where the space does not declare it.
inline int64_t swap_of(const Config& c) { return p_or_zero(c, "SWAP_AB"); }

// CONSUMER_COLS of a config, 0 where the space does not declare it: 1 when the consumer warpgroups split BLOCK_N.
inline int64_t consumer_cols_of(const Config& c) { return p_or_zero(c, "CONSUMER_COLS"); }

// CONSUMER_K of a config, 0 where the space does not declare it: 1 when the two consumer warpgroups take every other
// k-block of the whole tile.
inline int64_t consumer_k_of(const Config& c) { return p_or_zero(c, "CONSUMER_K"); }

// Why the staging epilogues cannot write this problem's C, or "" when they can. Where a TMA store cannot write C
// (ldc not a multiple of 8 elements, or C's base off 16 bytes), the warpgroups store the staged tile themselves.
inline std::string tma_store_refusal(const Problem& q) {
  if (q.precision.output == DType::f32) return "C is f32 and the staging epilogues write 16-bit tiles";
  return {};
}

}  // namespace tileforge::cuda::sm90_detail
