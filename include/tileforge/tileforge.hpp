// tileforge public C++ API: the GEMM description (Problem), a kernel choice (Config), Status, and gemm().
#pragma once

#include <cstdint>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The library is built with hidden visibility: what this header declares is its exported interface.
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

namespace tileforge {

// ---- element types and layouts ------------------------------------------------------------------

enum class DType { f32, f16, bf16 };

// Row (R) or column (C) major storage of A then B. C's storage order is Problem::c_order.
enum class Layout { RR, RC, CR, CC };

// Storage order of one matrix: C's in Problem (BLAS and cuBLAS callers keep C column-major).
enum class Order { row_major, col_major };

std::string_view to_string(DType);
std::string_view to_string(Layout);
std::string_view to_string(Order);  // "row-major", "col-major"
std::size_t size_of(DType);
bool a_row_major(Layout);
bool b_row_major(Layout);

// ---- status -------------------------------------------------------------------------------------

enum class Code {
  ok = 0,
  invalid_argument,   // the caller's description is wrong; the message names the argument and what is allowed
  unsupported,        // valid, but no backend or kernel can run it
  not_available,      // a library, device or file that is needed is missing
  compile_failed,     // run-time code generation failed (the log path is in the message)
  launch_failed,      // a kernel or vendor call failed at run time
  io_error,           // a file could not be read or written
  internal,
};

std::string_view to_string(Code);

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::ok; }
  explicit operator bool() const { return ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: lda = 3 is smaller than the row length K = 4 (allowed: lda >= 4)".
  std::string to_string() const;

 private:
  Code code_ = Code::ok;
  std::string message_;
};

Status invalid_argument(std::string message);
Status unsupported(std::string message);
Status not_available(std::string message);

// ---- the problem --------------------------------------------------------------------------------

// The precision policy: input type of A and B, output type of C, accumulator type. The planner never changes it.
struct Precision {
  DType input = DType::f32;
  DType output = DType::f32;
  DType accum = DType::f32;
};

// C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b], for b in [0, batch). A is M x K, B is K x N, C is M x N.
// Leading dimensions of 0 mean "tight" (the row length of the stored layout); batch strides of 0 mean
// "tight" (one whole matrix after the other, using the leading dimension).
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  Precision precision;
  Layout layout = Layout::RR;
  // C column-major is run as the transposed problem C^T = B^T A^T with row-major C^T: the same kernels, A and B
  // swapped (gemm() and prepare() do it; DB records and plans are those of the transposed shape).
  Order c_order = Order::row_major;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  double alpha = 1.0, beta = 0.0;

  // The smallest legal leading dimensions for this layout (max(1, row length)).
  int64_t min_lda() const;
  int64_t min_ldb() const;
  int64_t min_ldc() const;
  // Copy with leading dimensions and batch strides filled in where they were 0.
  Problem normalized() const;
  // Elements each operand spans for one batch entry (so a buffer of that many elements suffices).
  int64_t span_a() const;
  int64_t span_b() const;
  int64_t span_c() const;
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
  // Checks sizes, leading dimensions, strides, overflow and the precision policy.
  Status validate() const;
  std::string describe() const;  // "4096x4096x4096 f16->f16 acc f32 RR ld 4096/4096/4096" (+ " C col-major")
};

// ---- a kernel choice ----------------------------------------------------------------------------

// A flat record: the kernel family plus named integer parameters (BLOCK_M, MR, KC, STAGES, ...).
struct Config {
  std::string family;
  std::map<std::string, int64_t> params;

  std::optional<int64_t> get(const std::string& name) const;
  int64_t at(const std::string& name) const;  // throws std::out_of_range naming the parameter
  std::string describe() const;                // "cpu-avx2 MR=6 NR=16 ..."
  bool operator==(const Config&) const = default;
};

// ---- calling it ---------------------------------------------------------------------------------

struct Options {
  // cpu | cuda[:N] | auto. auto: the GPU that holds A when A is a CUDA device pointer (the driver says so), else the
  // CPU. cuda[:N] needs device pointers on that GPU (checked: a host pointer is refused, not crashed on).
  std::string device = "auto";
  std::string profile;          // chip record for planning; empty = the running device's
  std::vector<std::pair<std::string, int64_t>> set;  // pinned parameters (--set NAME=VALUE)
  int threads = 0;              // CPU threads; 0 = all cores
  // The tuning DB the config is looked up in (read only, never created): empty = $TILEFORGE_DB, else
  // $XDG_CACHE_HOME/tileforge/tune.db or ~/.cache/tileforge/tune.db. Without a record the planner chooses.
  std::string db;
  bool no_db = false;           // ignore every tuning DB: the planner chooses (pins still apply)
  // Results bit-identical from run to run (the default): split-K and stream-K sum a tile's slices in a fixed order.
  // false allows configs that sum them by float atomics in the order they arrive where that is faster (REDUCE 1
  // of the sm90 family); their DB records and pins are refused while this is true.
  bool deterministic = true;
  // CUDA: the stream the kernel is launched on, a cudaStream_t or CUstream passed as void* (no CUDA header is
  // needed to compile against tileforge); nullptr: the legacy default stream. Unused on the CPU.
  void* stream = nullptr;
  // CUDA: device scratch for split-K / stream-K partial sums, used in stream order; at least
  // GemmPlan::workspace_bytes(). Null: the kernel keeps its own, one per stream, allocated on first use.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Runs one GEMM with tileforge's own kernels. A, B, C hold `batch` matrices as the Problem describes (host pointers
// on the CPU, device pointers on a GPU: see Options::device); C is written in place. On a GPU the call returns once
// the kernel is enqueued on options.stream. Returns a Status naming the bad argument on invalid input.
// The config comes from the tuning DB (this shape on this machine, its shape bucket, or the same architecture
// elsewhere), else from the planner, with `set` pinned on top; it is chosen once per shape and setting per process.
// Nothing is measured inside the call: without stored host measurements the CPU is planned on its nominal peak
// (`tileforge devices` measures and stores them). Nothing is written but the CUDA kernel cache.
Status gemm(const Problem& problem, const void* a, const void* b, void* c, const Options& options = {});

// A GEMM prepared once, as a cuBLASLt matmul descriptor or a oneDNN primitive is: the device opened, the config
// chosen (DB, planner, pins), the kernel compiled or selected. run() then goes straight to the kernel. Copies share
// one prepared kernel; run() may be called from many threads at once (on a GPU, each with its own stream).
class GemmPlan {
 public:
  GemmPlan();  // an empty plan: status() is invalid_argument and run() refuses
  explicit operator bool() const { return status_.ok(); }
  const Status& status() const { return status_; }  // why prepare() failed
  const Problem& problem() const;                    // as described to prepare()
  const Config& config() const;                      // the kernel that runs (of the row-major C problem it runs as)
  std::string device() const;                        // "cpu", "cuda:0"
  const std::string& source() const;                 // "db-exact", "db-bucket", "db-arch", "planner", "pinned", ...
  const std::string& reason() const;                 // one line: why this config
  const std::vector<std::string>& notes() const;     // what the caller should know (a nominal peak, a fallback)
  // Device scratch a run needs when the caller supplies it (0: none, or the kernel's own suffices).
  std::size_t workspace_bytes() const;
  // Runs the prepared GEMM on a, b, c with the problem's alpha and beta. stream/workspace as in Options (null
  // stream: the one given to prepare()). Pointers are checked for null, overlap and, on a GPU, device residence.
  Status run(const void* a, const void* b, void* c, void* stream = nullptr, void* workspace = nullptr,
             std::size_t workspace_bytes = 0) const;

  struct State;  // the prepared kernel and what it runs on (library-internal)

 private:
  friend GemmPlan prepare(const Problem& problem, const Options& options);
  std::shared_ptr<const State> state_;
  Status status_;
};

// Prepares `problem` for repeated runs with `options` (device, profile, pins, DB; threads on the CPU). A failure is
// in the returned plan's status(). (Named prepare, not plan: tileforge::plan is the planner's namespace.)
GemmPlan prepare(const Problem& problem, const Options& options = {});

// The tool's version string ("0.1.0").
std::string_view version();

}  // namespace tileforge

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
