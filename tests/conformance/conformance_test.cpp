// Every backend in the build, ours and vendor alike, over one table of cases against the float64 reference (as
// ggml runs every backend against the CPU); a backend that cannot run a case skips it with its own reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "measure/timer.hpp"
#include "conformance/conformance_cases.hpp"
#include "dispatch/dispatch.hpp"
#include "support/test_support.hpp"
#include "verify/verify.hpp"

namespace tileforge::conformance {
namespace {

struct Param {
  std::string backend;
  Case c;
};

// Failure messages name the backend and the case instead of dumping the struct's bytes.
[[maybe_unused]] void PrintTo(const Param& p, std::ostream* os) { *os << p.backend << " " << p.c.name; }

// The backends this build has, then the known ones it lacks, so that a backend left out of the build shows as
// skipped rather than vanishing from the list.
std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend* b : all_backends()) names.emplace_back(b->name());
  for (const char* known : {"cpu", "cuda", "openblas", "onednn", "cublas", "cublaslt"}) {
    if (!find_backend(known)) names.emplace_back(known);
  }
  return names;
}

std::vector<Param> all_params() {
  std::vector<Param> params;
  const std::vector<Case> cases = all_cases();
  for (const std::string& backend : backend_names()) {
    for (const Case& c : cases) params.push_back({backend, c});
  }
  return params;
}

// The same operands for a case on every backend, different operands for different cases.
uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Devices and their operand memory are opened once per process: a GPU timer holds a stream and an L2-sized
// buffer, and the host profile is detected once. Kept for the whole process on purpose (never destroyed), so
// that no CUDA object outlives the driver at exit.
const Expected<Device>& device_for(std::string_view kind, int threads) {
  static auto* devices = new std::map<std::pair<std::string, int>, Expected<Device>>();
  const std::pair<std::string, int> key{std::string(kind), kind == "cpu" ? threads : 0};
  auto it = devices->find(key);
  if (it == devices->end()) it = devices->emplace(key, open_device(kind, {}, key.second)).first;
  return it->second;
}

measure::RepTimer* timer_for(const Device& device) {
  static auto* timers = new std::map<std::string, std::unique_ptr<measure::RepTimer>>();
  auto it = timers->find(device.kind);
  if (it == timers->end()) {
    auto t = measure::make_timer(device);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    if (!t.ok()) return nullptr;
    it = timers->emplace(device.kind, std::move(*t)).first;
  }
  return it->second.get();
}

// Memory on the backend's device (host memory on the CPU, device memory on a GPU) holding `host`.
std::unique_ptr<measure::OperandBuffer> place(measure::RepTimer& timer, const std::vector<unsigned char>& host) {
  auto buf = timer.allocate(host.size());
  EXPECT_TRUE(buf.ok()) << buf.status().to_string();
  if (!buf.ok()) return nullptr;
  if (!host.empty()) {
    Status s = (*buf)->upload(host.data());
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return std::move(*buf);
}

std::vector<unsigned char> fetch(const measure::OperandBuffer& buf) {
  std::vector<unsigned char> host(buf.bytes());
  if (!host.empty()) {
    Status s = buf.download(host.data());
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return host;
}

// C sits between two guards, so that a write before its first or past its last element shows.
constexpr std::size_t kGuard = 64;  // keeps C as aligned as the allocation (64 bytes on the host, more on GPUs)
constexpr unsigned char kGuardByte = 0xA5;

// Which elements of a C buffer the problem writes: every other element (row padding, gaps between batch entries)
// must keep its value.
std::vector<bool> written_elements(const Problem& p, std::size_t elements) {
  std::vector<bool> mask(elements, false);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) mask[std::size_t(b * p.stride_c + i * p.ldc + j)] = true;
    }
  }
  return mask;
}

// Runs `config` once on the operands (poisoned as the case needs) in the device's memory, and checks everything
// the call may and may not change against the float64 reference.
void run_and_check(Backend& backend, const Device& device, const testing::Operands& ops, const verify::Reference& ref,
                   const Config& config) {
  const Problem& p = ops.problem;
  std::vector<unsigned char> c_before(kGuard + ops.c.size() + kGuard, kGuardByte);
  if (!ops.c.empty()) std::memcpy(c_before.data() + kGuard, ops.c.data(), ops.c.size());

  measure::RepTimer* timer = timer_for(device);
  ASSERT_NE(timer, nullptr);
  auto a = place(*timer, ops.a), b = place(*timer, ops.b), cbuf = place(*timer, c_before);
  ASSERT_TRUE(a && b && cbuf);

  auto kernel = backend.prepare(p, config, device);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  const GemmArgs args{a->data(), b->data(), static_cast<unsigned char*>(cbuf->data()) + kGuard, timer->stream()};
  // Through the device's timer, which waits for a GPU to finish (a kernel's fault surfaces here).
  auto ran = timer->time([&] { return backend.run(**kernel, p, args); });
  ASSERT_TRUE(ran.ok()) << ran.status().to_string();

  const std::vector<unsigned char> c_after = fetch(*cbuf);
  ASSERT_EQ(c_after.size(), c_before.size());
  EXPECT_TRUE(fetch(*a) == ops.a) << "A was modified";
  EXPECT_TRUE(fetch(*b) == ops.b) << "B was modified";

  // Nothing outside the elements of C changes: guards, row padding, gaps between batch entries.
  const std::size_t es = size_of(p.precision.output);
  const std::vector<bool> written = written_elements(p, ops.c.size() / es);
  int64_t stray = 0;
  std::size_t first_stray = 0;
  for (std::size_t i = 0; i < c_after.size(); ++i) {
    const bool inside = i >= kGuard && i < kGuard + ops.c.size() && written[(i - kGuard) / es];
    if (!inside && c_after[i] != c_before[i] && stray++ == 0) first_stray = i;
  }
  EXPECT_EQ(stray, 0) << "bytes outside C's elements were written, the first at byte " << first_stray
                      << " of the buffer (C starts at byte " << kGuard << ", " << ops.c.size() << " bytes)";

  const verify::ErrorReport r = verify::compare(p, c_after.data() + kGuard, ref);
  EXPECT_TRUE(r.full);
  EXPECT_EQ(r.checked, p.batch * p.m * p.n);
  EXPECT_EQ(r.nan_count, 0);
  // With f16 accumulation the policy has no ceiling of its own (only twice the native error, unknown here), so
  // that case is held to NaN, non-finite and the per-element worst-case bound.
  const Status ok = verify::check(p, r);
  EXPECT_TRUE(ok.ok()) << ok.to_string();
}

class Backends : public ::testing::TestWithParam<Param> {};

TEST_P(Backends, MatchFloat64Reference) {
  const std::string& name = GetParam().backend;
  const Case& c = GetParam().c;
  Backend* backend = find_backend(name);
  if (!backend) GTEST_SKIP() << name << ": not in this build";
  const Expected<Device>& device = device_for(backend->device_kind(), c.threads);
  if (!device) GTEST_SKIP() << name << ": " << device.status().message();
  if (Support s = backend->available(); !s) GTEST_SKIP() << name << ": " << s.reason;

  testing::Operands ops = testing::make_operands(c.problem, seed_of(c.name));
  const Problem& p = ops.problem;
  if (Support s = backend->supports(p, *device); !s) GTEST_SKIP() << name << ": " << s.reason;
  SCOPED_TRACE(name + " " + p.describe());

  // Poison what the BLAS conventions say is not read (docs/NUMERICS.md): C when beta = 0, so that every element
  // must be written; A and B when alpha = 0 or K = 0. Reading any of them puts NaN into the result.
  const DType in = p.precision.input, out = p.precision.output;
  if (p.alpha == 0 || p.k == 0) {
    verify::fill_poison(ops.a.data(), in, int64_t(ops.a.size() / size_of(in)));
    verify::fill_poison(ops.b.data(), in, int64_t(ops.b.size() / size_of(in)));
  }
  if (p.beta == 0) verify::fill_poison(ops.c.data(), out, int64_t(ops.c.size() / size_of(out)));
  const verify::Reference ref = testing::reference_for(ops);

  // A vendor library runs its own call. Ours runs what dispatch chooses with no tuning DB (the planner's pick, what
  // a user gets), and its own heuristic as well where that differs (what dispatch falls back to).
  auto heuristic = backend->heuristic(p, *device);
  ASSERT_TRUE(heuristic.ok()) << heuristic.status().to_string();
  std::vector<std::pair<Config, std::string>> configs;
  if (!backend->native()) {
    dispatch::DispatchOptions options;
    options.db.disabled = true;
    auto choice = dispatch::choose_config(p, *device, *backend, options);
    ASSERT_TRUE(choice.ok()) << choice.status().to_string();
    configs.emplace_back(choice->config, choice->source);
  }
  if (configs.empty() || configs[0].first != *heuristic) configs.emplace_back(*heuristic, "heuristic");
  for (const auto& [config, source] : configs) {
    SCOPED_TRACE(config.describe() + " (" + source + ")");
    run_and_check(*backend, *device, ops, ref, config);
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, Backends, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return info.param.backend + "_" + info.param.c.name;
                         });

}  // namespace
}  // namespace tileforge::conformance
