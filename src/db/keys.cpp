// Fingerprints, signatures, alignment classes and shape buckets: pure functions, no database.
#include "db/keys.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tileforge::db {

std::string fnv1a_hex(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

std::string Fingerprint::key() const {
  // NOTE: the order and the types are part of the on-disk format (hashes in every DB); never reorder.
  nlohmann::json j = nlohmann::json::array({kind, name, arch, cores, clock_mhz, driver, toolkit});
  return j.dump();
}

std::string Fingerprint::hash() const { return fnv1a_hex(key()); }

std::string Fingerprint::describe() const {
  std::string s = fmt::format("{} ({}, {} cores", name.empty() ? "unnamed device" : name, arch, cores);
  if (clock_mhz > 0) s += fmt::format(", {} MHz", clock_mhz);
  if (!driver.empty()) s += fmt::format(", driver {}", driver);
  if (!toolkit.empty()) s += fmt::format(", toolkit {}", toolkit);
  return s + ")";
}

Fingerprint fingerprint_of(const Device& device, std::string driver, std::string toolkit) {
  const hw::HwProfile& p = device.profile;
  Fingerprint f;
  f.kind = p.kind.empty() ? (device.kind == "cuda" ? "gpu" : device.kind) : p.kind;
  // Device::name is "cpu" for every CPU; the profile's display name carries the brand.
  f.name = (device.kind == "cpu" || device.name.empty()) ? p.display_name : device.name;
  if (f.name.empty()) f.name = p.name;
  f.arch = p.arch;
  f.cores = p.cores;
  f.clock_mhz = int(std::lround(p.boost_clock_ghz * 1000.0));
  f.driver = std::move(driver);
  f.toolkit = std::move(toolkit);
  return f;
}

namespace {

// The widest of 16, 8, 4, 2, 1 dividing `bytes` (0 divides by everything).
int widest_divisor(uint64_t bytes) {
  for (int w : {16, 8, 4, 2})
    if (bytes % uint64_t(w) == 0) return w;
  return 1;
}

}  // namespace

int alignment_class(const Problem& problem) {
  const Problem q = problem.normalized();
  const uint64_t in = size_of(q.precision.input), out = size_of(q.precision.output);
  int w = 16;
  w = std::min(w, widest_divisor(uint64_t(q.lda) * in));
  w = std::min(w, widest_divisor(uint64_t(q.ldb) * in));
  w = std::min(w, widest_divisor(uint64_t(q.ldc) * out));
  // With one matrix the batch stride is never applied, so its value (a span by default) must not lower the class.
  if (q.batch > 1) {
    w = std::min(w, widest_divisor(uint64_t(q.stride_a) * in));
    w = std::min(w, widest_divisor(uint64_t(q.stride_b) * in));
    w = std::min(w, widest_divisor(uint64_t(q.stride_c) * out));
  }
  return w;
}

Problem problem_of(const Signature& s) {
  Problem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.batch = s.batch;
  p.precision = {s.input, s.output, s.accum};
  p.layout = s.layout;
  return p;
}

Signature signature_of(const Problem& problem) {
  Signature s;
  s.m = problem.m;
  s.n = problem.n;
  s.k = problem.k;
  s.batch = problem.batch;
  s.input = problem.precision.input;
  s.output = problem.precision.output;
  s.accum = problem.precision.accum;
  s.layout = problem.layout;
  s.align = alignment_class(problem);
  return s;
}

std::string Signature::shape() const {
  std::string s = fmt::format("{}x{}x{}", m, n, k);
  if (batch > 1) s += fmt::format(" batch {}", batch);
  return s;
}

std::string Signature::key() const {
  return fmt::format("{} {}->{} acc {} {} align {}", shape(), to_string(input), to_string(output), to_string(accum),
                     to_string(layout), align);
}

int64_t round_up_pow2(int64_t v, int64_t floor) {
  int64_t p = 1;
  const int64_t target = std::max(v, floor);
  while (p < target && p < (int64_t(1) << 62)) p <<= 1;
  return p;
}

Signature Signature::bucket() const {
  Signature b = *this;
  // NOTE: 16 is the smallest tile edge any family uses: below it every size runs the same partial tile.
  b.m = round_up_pow2(m, 16);
  b.n = round_up_pow2(n, 16);
  b.k = round_up_pow2(k, 16);
  b.batch = round_up_pow2(batch, 1);
  return b;
}

double log_distance(const Signature& a, const Signature& b) {
  auto d = [](int64_t x, int64_t y) {
    return std::abs(std::log2(double(std::max<int64_t>(x, 1))) - std::log2(double(std::max<int64_t>(y, 1))));
  };
  return d(a.m, b.m) + d(a.n, b.n) + d(a.k, b.k) + d(a.batch, b.batch);
}

}  // namespace tileforge::db
