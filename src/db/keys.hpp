// Keys of the tuning DB: the device fingerprint, the problem signature, its alignment class and shape bucket.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::db {

// What a measurement depends on besides the problem: the chip, how fast it was clocked, and the software that
// compiled and ran the kernel. Two machines with equal fingerprints are expected to measure alike.
struct Fingerprint {
  std::string kind;     // "cpu" or "gpu" (the profile's kind)
  std::string name;     // "NVIDIA H200", "AMD EPYC 7B13"
  std::string arch;     // "sm_90a", "x86-64-v3": records are shared across fingerprints of one arch only
  int cores = 0;        // SMs or CPU cores
  int clock_mhz = 0;    // boost clock; 0 when the machine exposes none
  std::string driver;   // GPU driver version; empty on CPUs
  std::string toolkit;  // CUDA toolkit (NVRTC) version, or the compiler that built the CPU kernels

  // Stable text: a JSON array of the fields in the order above ("[\"gpu\",\"NVIDIA H200\",...]").
  std::string key() const;
  // 16 lowercase hex digits: FNV-1a 64 of key(). Stable across builds and machines.
  std::string hash() const;
  // "NVIDIA H200 (sm_90a, 132 cores, 1980 MHz, driver 550.54.15, toolkit 12.4)"
  std::string describe() const;
  bool operator==(const Fingerprint&) const = default;
};

// The fingerprint of the device's planning profile. CPUs report their brand (the profile's display name) since
// Device::name is just "cpu". `driver` and `toolkit` come from the backend that runs the kernels.
Fingerprint fingerprint_of(const Device& device, std::string driver = {}, std::string toolkit = {});

// The widest of 16, 8, 4, 2 bytes that divides every leading dimension of A, B and C in bytes, and, when
// batch > 1, every batch stride in bytes (tight values filled in first). Base pointers are assumed aligned to
// 16 bytes (every allocator tileforge targets gives at least that); a caller with a less aligned pointer must
// not use a record of a higher class. See docs/TUNING-DB.md.
int alignment_class(const Problem& problem);

// The problem as the DB keys it: everything that changes which kernel is legal or fastest, nothing else
// (alpha and beta are left out: they change the epilogue's arithmetic, not the choice of tiles).
struct Signature {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  DType input = DType::f32, output = DType::f32, accum = DType::f32;
  Layout layout = Layout::RR;
  int align = 16;

  // "4096x4096x4096 f16->f16 acc f32 RR align 16", with " batch B" after the shape when batch > 1.
  std::string key() const;
  // "4096x4096x4096", or "4096x4096x4096 batch 8".
  std::string shape() const;
  // The bucket this signature falls in: each of M, N, K rounded up to a power of two (at least 16), batch
  // rounded up to a power of two; dtypes, layout and alignment class unchanged.
  Signature bucket() const;
  bool operator==(const Signature&) const = default;
};

Signature signature_of(const Problem& problem);
// The problem a signature describes, with tight leading dimensions (normalized() fills them in); alpha 1, beta 0.
Problem problem_of(const Signature& signature);
// Smallest power of two >= max(v, floor) (v <= 2^62).
int64_t round_up_pow2(int64_t v, int64_t floor);
// Sum over M, N, K and batch of |log2(a) - log2(b)|: how far apart two shapes are, scale-free.
double log_distance(const Signature& a, const Signature& b);

// FNV-1a 64 of text, as 16 lowercase hex digits.
std::string fnv1a_hex(std::string_view text);

}  // namespace tileforge::db
