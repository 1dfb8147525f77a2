// tileforge::prepare() and GemmPlan::run(): a GEMM prepared once (device, config, kernel) and run many times; gemm()
// is a process-wide cache of such plans, so that a shape seen before costs a lookup and the kernel's launch.
#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <tuple>

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "core/c_order.hpp"
#include "dispatch/dispatch.hpp"
#include "hw/hw_profile.hpp"
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
#include "hw/cuda_driver.hpp"
#endif

namespace tileforge {

struct GemmPlan::State {
  Problem described;  // as given to prepare()
  Problem checked;    // described, normalized: what the caller's pointers are checked against
  Problem run_as;     // normalized, C row-major: the transposed problem when C is column-major
  bool swap_ab = false;  // run_as is C^T = B^T A^T: the caller's B is its A
  std::string device_spec;
  Device device;
  Backend* backend = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::string source, reason;
  std::vector<std::string> notes;
  std::size_t workspace_bytes = 0;
  void* stream = nullptr;  // prepare()'s options: the defaults of run()
  void* workspace = nullptr;
  std::size_t workspace_size = 0;
};

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
// only read). `p` is the problem as the caller described it (normalized), with the caller's pointers.
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

Status check_pointers(const Problem& p, const void* a, const void* b, const void* c) {
  const bool product = p.m > 0 && p.n > 0 && p.k > 0;
  if (!a && product) return null_operand("a", p, false);
  if (!b && product) return null_operand("b", p, false);
  if (!c && p.m > 0 && p.n > 0) return null_operand("c", p, true);
  // Without a product A and B are not read, and C is only scaled by beta.
  if (product) return overlapping_operands(p, a, b, c);
  return {};
}

Status check_threads(int threads) {
  if (const int most = int(hw::bounds::threads.max); threads < 0 || threads > most) {
    return invalid_argument(fmt::format("options.threads = {} (allowed: 0 for all cores, or 1 to {})", threads, most));
  }
  return {};
}

// Opening a device reads its profile (never measuring: library calls plan on stored or nominal host peaks); keep
// one per setting for the process.
Expected<Device> cached_device(const std::string& spec, const std::string& profile, int threads) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, int>, Device> devices;
  std::lock_guard lock(mutex);
  const auto key = std::make_tuple(spec, profile, threads);
  if (auto it = devices.find(key); it != devices.end()) return it->second;
  auto device = open_device(spec, profile, threads, hw::HostPeaks::stored_or_nominal);
  if (!device) return device.status();
  devices.emplace(key, *device);
  return device;
}

// What the caller should know about the chip record the plan was made with.
std::vector<std::string> plan_notes(const Device& device) {
  std::vector<std::string> notes;
  if (device.kind == "cpu" && !device.profile.peaks.empty() && device.profile.peaks.front().source.starts_with("nominal")) {
    notes.push_back(fmt::format("planned on the host CPU's nominal peak, not a measured one: {}",
                                device.profile.peaks.front().source));
  }
  return notes;
}

GemmPlan::State* prepare_state(const Problem& described, const std::string& spec, const Options& options,
                               Status& status) {
  auto state = std::make_unique<GemmPlan::State>();
  state->described = described;
  state->checked = described.normalized();
  state->run_as = row_major_c(described.normalized());
  state->swap_ab = described.c_order == Order::col_major;
  state->device_spec = spec;
  state->stream = options.stream;
  state->workspace = options.workspace;
  state->workspace_size = options.workspace_bytes;
  auto device = cached_device(spec, options.profile, options.threads);
  if (!device) {
    status = device.status();
    return nullptr;
  }
  state->device = *device;
  Backend* ours = own_backend(device->kind);
  if (!ours) {
    status = unsupported(fmt::format("options.device '{}': tileforge has no backend for device kind '{}' in this build",
                                     options.device, device->kind));
    return nullptr;
  }
  if (Support ok = ours->available(); !ok) {
    status = not_available(fmt::format("{}: {}", ours->name(), ok.reason));
    return nullptr;
  }
  const Problem& p = state->run_as;
  if (Support ok = ours->supports(p, *device); !ok) {
    status = unsupported(fmt::format("{} cannot run {}: {}", ours->name(), p.describe(), ok.reason));
    return nullptr;
  }
  dispatch::DispatchOptions dispatch;
  dispatch.pins = options.set;
  dispatch.db = db::LocationRequest{options.db, options.no_db};
  dispatch.deterministic = options.deterministic;
  auto choice = dispatch::choose_config(p, *device, *ours, dispatch);
  if (!choice) {
    status = choice.status();
    return nullptr;
  }
  auto kernel = ours->prepare(p, choice->config, *device);
  if (!kernel) {
    status = kernel.status();
    return nullptr;
  }
  state->backend = ours;
  state->kernel = std::move(*kernel);
  state->source = choice->source;
  state->reason = choice->reason;
  state->notes = plan_notes(*device);
  state->workspace_bytes = state->kernel->workspace_bytes(p);
  status = Status::Ok();
  return state.release();
}

// Runs a prepared state on the caller's pointers with these scalars.
Status run_state(const GemmPlan::State& s, double alpha, double beta, const void* a, const void* b, void* c,
                 void* stream, void* workspace, std::size_t workspace_bytes) {
  if (Status st = check_pointers(s.checked, a, b, c); !st) return st;
  if (workspace && workspace_bytes < s.workspace_bytes) {
    return invalid_argument(fmt::format("workspace_bytes = {} is smaller than the {} bytes this plan needs (allowed: "
                                        ">= {}, or no workspace: the kernel keeps its own per stream)",
                                        workspace_bytes, s.workspace_bytes, s.workspace_bytes));
  }
  Problem p = s.run_as;
  p.alpha = alpha;
  p.beta = beta;
  GemmArgs args;
  args.a = s.swap_ab ? b : a;
  args.b = s.swap_ab ? a : b;
  args.c = c;
  args.stream = stream ? stream : s.stream;
  args.workspace = workspace ? workspace : s.workspace;
  args.workspace_bytes = workspace ? workspace_bytes : s.workspace_size;
  return s.backend->run(*s.kernel, p, args);
}

Status no_plan() {
  return invalid_argument("the plan is empty (allowed: a plan returned by tileforge::prepare() whose status() is ok)");
}

// Options::device "auto" with pointers in hand: the GPU that holds A, else the CPU.
std::string resolve_device(const Options& options, const void* a) {
  if (options.device != "auto") return options.device;
#if defined(TILEFORGE_HAVE_CUDA_TOOLKIT)
  if (a) {
    if (auto ordinal = cuda::device_of_pointer(a); ordinal && *ordinal >= 0) return fmt::format("cuda:{}", *ordinal);
  }
#endif
  return "cpu";
}

// Options::device "auto" without pointers (prepare): the first GPU when one is usable, else the CPU.
std::string resolve_device(const Options& options) {
  if (options.device != "auto") return options.device;
  Backend* cuda = own_backend("cuda");
  return cuda && cuda->available() ? std::string("cuda:0") : std::string("cpu");
}

// gemm()'s cache key: every field of the call a prepared plan depends on (alpha and beta only as "reads C or not";
// the scalars, the stream and the workspace are passed at run time), compared without formatting a string on the
// hot path.
struct CallKey {
  int64_t m, n, k, batch, lda, ldb, ldc, stride_a, stride_b, stride_c;
  int input, output, accum, layout, c_order, reads_c, threads, no_db, deterministic;
  std::string device, profile, db;
  std::vector<std::pair<std::string, int64_t>> pins;
  auto operator<=>(const CallKey&) const = default;
};

CallKey call_key(const Problem& p, const std::string& device, const Options& o) {
  return CallKey{p.m,          p.n,           p.k,          p.batch,         p.lda,         p.ldb,
                 p.ldc,        p.stride_a,    p.stride_b,   p.stride_c,      int(p.precision.input),
                 int(p.precision.output),    int(p.precision.accum),        int(p.layout), int(p.c_order),
                 p.beta != 0.0, o.threads,    o.no_db,      o.deterministic, device,        o.profile,     o.db,
                 o.set};
}

}  // namespace

// ---- GemmPlan ---------------------------------------------------------------------------------------------------

GemmPlan::GemmPlan() : status_(no_plan()) {}

const Problem& GemmPlan::problem() const {
  static const Problem empty;
  return state_ ? state_->described : empty;
}
const Config& GemmPlan::config() const {
  static const Config empty;
  return state_ ? state_->kernel->config() : empty;
}
std::string GemmPlan::device() const {
  if (!state_) return {};
  return state_->device.kind == "cpu" ? std::string("cpu") : fmt::format("{}:{}", state_->device.kind, state_->device.ordinal);
}
const std::string& GemmPlan::source() const {
  static const std::string empty;
  return state_ ? state_->source : empty;
}
const std::string& GemmPlan::reason() const {
  static const std::string empty;
  return state_ ? state_->reason : empty;
}
const std::vector<std::string>& GemmPlan::notes() const {
  static const std::vector<std::string> empty;
  return state_ ? state_->notes : empty;
}
std::size_t GemmPlan::workspace_bytes() const { return state_ ? state_->workspace_bytes : 0; }

Status GemmPlan::run(const void* a, const void* b, void* c, void* stream, void* workspace,
                     std::size_t workspace_bytes) const {
  if (!state_) return status_.ok() ? no_plan() : status_;
  try {
    return run_state(*state_, state_->described.alpha, state_->described.beta, a, b, c, stream, workspace,
                     workspace_bytes);
  } catch (const std::bad_alloc&) {
    return Status(Code::internal, "out of memory");
  } catch (const std::exception& e) {
    return Status(Code::internal, e.what());
  }
}

GemmPlan prepare(const Problem& problem, const Options& options) {
  GemmPlan plan;
  try {
    if (Status s = problem.validate(); !s) {
      plan.status_ = s;
      return plan;
    }
    if (Status s = check_threads(options.threads); !s) {
      plan.status_ = s;
      return plan;
    }
    Status status;
    GemmPlan::State* state = prepare_state(problem, resolve_device(options), options, status);
    plan.status_ = status;
    if (state) plan.state_.reset(state);
  } catch (const std::bad_alloc&) {
    plan.status_ = Status(Code::internal, "out of memory");
  } catch (const std::exception& e) {
    plan.status_ = Status(Code::internal, e.what());
  }
  return plan;
}

// ---- gemm() -----------------------------------------------------------------------------------------------------

Status gemm(const Problem& problem, const void* a, const void* b, void* c, const Options& options) {
  try {
    if (Status s = problem.validate(); !s) return s;
    if (Status s = check_threads(options.threads); !s) return s;
    const Problem p = problem.normalized();
    // A plan per call setting and shape for the process: the tuning DB and the planner are consulted once per shape,
    // so a record tuned later by another process is used from the next process on.
    static std::shared_mutex mutex;
    static std::map<CallKey, std::shared_ptr<const GemmPlan::State>> plans;
    const std::string spec = resolve_device(options, a);
    CallKey key = call_key(p, spec, options);
    std::shared_ptr<const GemmPlan::State> state;
    {
      std::shared_lock lock(mutex);
      if (auto it = plans.find(key); it != plans.end()) state = it->second;
    }
    if (!state) {
      // Pointers before a plan is made: a bad call opens no device. (run_state checks them on every call.)
      if (Status st = check_pointers(p, a, b, c); !st) return st;
      // Prepared outside the lock (a GPU kernel's JIT compile takes seconds); two threads preparing one shape at once
      // get the same plan, and the first one stored is kept.
      Status status;
      std::shared_ptr<const GemmPlan::State> fresh(prepare_state(p, spec, options, status));
      if (!fresh) return status;
      std::unique_lock lock(mutex);
      state = plans.emplace(std::move(key), std::move(fresh)).first->second;
    }
    return run_state(*state, p.alpha, p.beta, a, b, c, options.stream, options.workspace, options.workspace_bytes);
  } catch (const std::bad_alloc&) {
    return Status(Code::internal, "out of memory");
  } catch (const std::exception& e) {
    return Status(Code::internal, e.what());
  }
}

}  // namespace tileforge
