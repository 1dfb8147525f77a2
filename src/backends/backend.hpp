// The backend interface every chip family and every vendor library implements, and their parameter spaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.hpp"
#include "hw/hw_profile.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge {

// Where a GEMM runs and which chip record plans it.
struct Device {
  std::string kind = "cpu";   // "cpu" or "cuda"
  int ordinal = 0;
  std::string name = "cpu";   // what ran: "cpu" or the GPU's name as its driver reports it
  hw::HwProfile profile;      // the profile used for planning and peaks (the running device's unless --profile)
  int threads = 0;            // CPU threads to use; 0 = all cores
};

// The CPU threads a GEMM on `device` runs with: the requested count, else every core of the host CPU as detected
// (whichever chip record plans it); 0 on GPUs. The cpu backend, dispatch, tune and bench all use this one rule.
int effective_threads(const Device& device);

// Yes, or no with the reason.
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return ok; }
};

// A parameter's declared values, immutable and shared by every copy of its space: a CPU family declares some 13,000
// block sizes, and a new shape's dispatch copied its space three times (a fifth of its time, docs/PERF-LOG.md). Reads
// as a const std::vector<int64_t>.
class ParamValues {
 public:
  ParamValues() : values_(none()) {}
  ParamValues(std::vector<int64_t> values)  // NOLINT(google-explicit-constructor): declared as a list of values
      : values_(std::make_shared<const std::vector<int64_t>>(std::move(values))) {}
  ParamValues(std::initializer_list<int64_t> values) : ParamValues(std::vector<int64_t>(values)) {}
  operator const std::vector<int64_t>&() const { return *values_; }  // NOLINT(google-explicit-constructor)
  const std::vector<int64_t>& get() const { return *values_; }
  std::vector<int64_t>::const_iterator begin() const { return values_->begin(); }
  std::vector<int64_t>::const_iterator end() const { return values_->end(); }
  std::size_t size() const { return values_->size(); }
  bool empty() const { return values_->empty(); }
  int64_t front() const { return values_->front(); }
  int64_t back() const { return values_->back(); }
  int64_t operator[](std::size_t i) const { return (*values_)[i]; }
  const int64_t* data() const { return values_->data(); }
  friend bool operator==(const ParamValues& a, const ParamValues& b) { return a.get() == b.get(); }

 private:
  static const std::shared_ptr<const std::vector<int64_t>>& none() {
    static const auto none = std::make_shared<const std::vector<int64_t>>();
    return none;
  }
  std::shared_ptr<const std::vector<int64_t>> values_;
};

// One tunable parameter: its legal values and the decision layer it belongs to (DESIGN.md's four layers).
struct ParamDecl {
  std::string name;
  ParamValues values;
  std::string layer;  // "hardware mapping", "data scheduling", "compute pipeline", "parameter adaptation"
  std::string doc;
};

// A parameter's legal values for messages: "6, 12, 14", or "8 to 4096 in steps of 8" for long evenly spaced runs.
std::string values_text(const std::vector<int64_t>& values);

// The four layers of a decision (DESIGN.md): where each parameter and each constraint of a family belongs.
enum class Layer : int { hardware_mapping = 0, data_scheduling = 1, compute_pipeline = 2, parameter_adaptation = 3 };
inline constexpr std::string_view kLayerNames[] = {"hardware mapping", "data scheduling", "compute pipeline",
                                                   "parameter adaptation"};
inline std::string_view layer_name(Layer layer) { return kLayerNames[int(layer)]; }

// A small predicate over a whole Config, with the text a user sees when it fails, tagged with the layer of the
// decision it limits (first, so that a family cannot leave it out).
struct Constraint {
  Layer layer;
  std::string text;  // "MC % MR == 0"
  std::function<bool(const Config&)> holds;
  // The parameters `holds` reads, whatever their values, when the family declares them (empty: not declared). A
  // walk of the product that needs no rejection list (dispatch) checks such a constraint as soon as these are set and
  // skips every combination below a failing value at once; a walk that lists the rejections evaluates it once per
  // combination of these parameters' values and looks the rest up.
  std::vector<std::string> reads = {};
};

// The walk of a parameter product with one config updated in place (a map per combination cost most of a walk's
// time), shared by ParamSpace::enumerate and the planner's walks (plan/candidates.cpp). Every combination of
// `lists` (one list of values per parameter, each non-empty; the first parameter varies fastest), written through
// `slot` (where each parameter's value lives in the config being walked, set to the first combination by the
// caller) before `fn(index)` is called with the combination's indices into `lists`; the walk stops after the last
// combination or when fn returns false.
template <class Lists, class Fn>
void walk_product(const std::vector<int64_t*>& slot, const Lists& lists, Fn&& fn) {
  const std::size_t n = slot.size();
  std::vector<std::size_t> index(n, 0);
  while (fn(static_cast<const std::size_t*>(index.data()))) {
    std::size_t i = 0;
    for (; i < n; ++i) {
      const auto& values = lists[i];
      if (++index[i] < std::size_t(values.size())) {
        *slot[i] = values[index[i]];
        break;
      }
      index[i] = 0;
      *slot[i] = values[0];
    }
    if (i == n) return;
  }
}

struct ParamSpace {
  std::string family;
  std::vector<ParamDecl> params;
  std::vector<Constraint> constraints;
  // The family's version: tuned records of another version are never dispatched (docs/TUNING-DB.md). Last, so that
  // brace-initialized spaces {family, params, constraints} keep their meaning.
  int version = 1;

  const ParamDecl* find(std::string_view name) const;
  // Every parameter declared and present, each value legal, every constraint holds; else names what failed.
  Status check(const Config& config) const;
  // check(config).ok() without composing the message of a refusal: for heuristics that try many configs, where most
  // are refused and formatting the reason was half the cost of dispatch's plan of a new GPU shape.
  bool admits(const Config& config) const;
  // `base` with the pins applied; an unknown name or illegal value is refused with the allowed values.
  Expected<Config> pin(Config base, const std::vector<std::pair<std::string, int64_t>>& pins) const;
  // Every legal combination (the Cartesian product filtered by the constraints, the first parameter varying fastest),
  // up to `limit`. The parameters are set from the last to the first and a constraint that declares its reads is
  // checked once they are set, so that a failing value skips every combination below it (constraint_levels).
  std::vector<Config> enumerate(std::size_t limit = 1u << 20) const;
  // The same over `values` (one non-empty list per declared parameter, in declaration order) in place of the declared
  // ones: the planner's walk of a product narrowed by pins.
  std::vector<Config> enumerate(const std::vector<std::vector<int64_t>>& values, std::size_t limit) const;
  // For each parameter index j, the constraints (indices, ascending) that can be checked once parameters j..n-1 are
  // set in such a walk: those whose declared reads start at j; those without declared reads, or reading a name the
  // space does not declare, at 0 (with every parameter set). n + 1 entries, the last empty.
  std::vector<std::vector<std::size_t>> constraint_levels() const;
};

// A prepared, runnable kernel: compiled or selected for one Problem and Config. Backends subclass it.
class Kernel {
 public:
  explicit Kernel(Config config) : config_(std::move(config)) {}
  virtual ~Kernel() = default;
  const Config& config() const { return config_; }
  // Device scratch a run of `problem` needs (split-K / stream-K partial sums); 0 for kernels that need none.
  virtual std::size_t workspace_bytes(const Problem& problem) const { return 0; }
  // What a vendor library chose to run, in its own words ("brg:avx512_core" for oneDNN, OpenBLAS's core kernels,
  // cuBLASLt's algorithm): shown beside our config (issue 17); "" when the library does not say.
  virtual std::string implementation() const { return {}; }
  // Why implementation() says less than it could ("kernel name not captured: CUPTI not found ..."), or "": bench
  // shows it among the row's warnings, never as a failure.
  virtual std::string implementation_note() const { return {}; }

 private:
  Config config_;
};

// The caller's buffers: host pointers on the CPU, device pointers on GPUs. Backends receive C row-major
// (Problem::c_order == row_major): the API runs a column-major C as the transposed problem.
struct GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  void* stream = nullptr;  // GPU stream; unused on the CPU
  // The caller's device scratch, used in stream order instead of the kernel's own per-stream workspace; null: the
  // kernel's own. At least Kernel::workspace_bytes(problem) when given.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "cpu", "cuda", "openblas", "onednn", "cublas"
  virtual bool native() const = 0;            // a vendor library: compared against, never tuned, never "ours"
  virtual std::string_view device_kind() const = 0;  // "cpu" or "cuda"
  // Whether the library or hardware this backend needs is present at run time (with the reason if not).
  virtual Support available() const = 0;
  virtual Support supports(const Problem& problem, const Device& device) const = 0;
  // Legal parameter space for this problem on this device (empty for vendor libraries).
  virtual ParamSpace space(const Problem& problem, const Device& device) const = 0;
  // The backend's own choice without measurement: the analytic model (CPU) or a documented heuristic.
  virtual Expected<Config> heuristic(const Problem& problem, const Device& device) const = 0;
  virtual Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config,
                                                    const Device& device) = 0;
  virtual Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) = 0;
};

// All backends compiled into this build, in a fixed order (ours first, then vendor libraries).
const std::vector<Backend*>& all_backends();
Backend* find_backend(std::string_view name);
// tileforge's own backend for a device kind ("cpu" -> "cpu", "cuda" -> "cuda"); nullptr when none is built.
Backend* own_backend(std::string_view device_kind);
// The vendor library a user of this device would call for this precision (DESIGN.md: OpenBLAS for FP32 on
// x86, oneDNN for BF16/FP16, cuBLAS on NVIDIA), and the other vendor libraries measured as peers.
struct NativeChoice {
  Backend* native = nullptr;        // nullptr when none exists or none is loadable; `missing` says why
  std::string missing;
  std::vector<Backend*> peers;      // available peers that support the problem
};
NativeChoice native_for(const Problem& problem, const Device& device);

// Opens the device named by `spec` ("cpu", "cuda", "cuda:N", "auto": the best device present) and attaches the
// planning profile: `profile` (a builtin name or a JSON file) or, when empty, the running device's own.
// Unknown specs are refused with the allowed values; "cuda" without a GPU says "no CUDA device". `peaks`: whether the
// host CPU's peak and bandwidth are measured (the tool) or taken stored or nominal (library calls: hw.hpp).
Expected<Device> open_device(std::string_view spec, std::string_view profile = {}, int threads = 0,
                             hw::HostPeaks peaks = hw::HostPeaks::measure);

}  // namespace tileforge
