// The CUDA rep timer: device memory for operands, events around each rep with a buffer of twice the L2
// overwritten just before it (cold L2, DESIGN.md's contract), and the float64 reference run on the device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "backends/cuda/cuda_backend.hpp"
#include "measure/timer.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge::measure {
namespace {

class GpuBuffer final : public OperandBuffer {
 public:
  // `stream` is the timer's: copies are ordered with the kernels launched and the events recorded on it.
  GpuBuffer(cuda::DeviceBuffer buf, std::size_t bytes, CUstream stream)
      : buf_(std::move(buf)), bytes_(bytes), stream_(stream) {}
  void* data() override { return buf_.data(); }
  std::size_t bytes() const override { return bytes_; }
  const void* host_view() const override { return nullptr; }
  Status upload(const void* host) override { return bytes_ ? buf_.upload(host, bytes_) : Status{}; }
  Status download(void* host) const override { return bytes_ ? buf_.download(host, bytes_) : Status{}; }
  Status copy_from(const OperandBuffer& other) override {
    if (other.bytes() != bytes_) return invalid_argument("copy between buffers of different sizes");
    if (bytes_ == 0) return {};
    const auto& api = **cuda::driver();
    // On the timer's stream, not the legacy default one: that stream is non-blocking, so a plain cuMemcpyDtoD would
    // not be ordered with the kernel that reads this buffer next, nor bracketed by the timer's events (the
    // bandwidth measurement times exactly this copy).
    return cuda::check(api.cuMemcpyDtoDAsync(buf_.get(),
                                             reinterpret_cast<CUdeviceptr>(const_cast<OperandBuffer&>(other).data()),
                                             bytes_, stream_),
                       "cuMemcpyDtoDAsync");
  }
  Status fill_bytes(unsigned char value) override { return bytes_ ? buf_.fill_bytes(value) : Status{}; }

 private:
  cuda::DeviceBuffer buf_;
  std::size_t bytes_;
  CUstream stream_;
};

// Mirrors tf::util::ErrorTotals in kernels/common/utility.cuh.
struct ErrorTotals {
  double sq_err;
  double sq_ref;
  unsigned long long max_scaled_bits;
  unsigned long long nan_count;
  unsigned long long checked;
};

class GpuTimer final : public RepTimer {
 public:
  static Expected<std::unique_ptr<RepTimer>> create(const Device& device) {
    auto timer = std::unique_ptr<GpuTimer>(new GpuTimer());
    timer->ordinal_ = device.ordinal;
    auto ctx = cuda::activate(device.ordinal);
    if (!ctx) return ctx.status();
    auto props = cuda::query_device(device.ordinal);
    if (!props) return props.status();
    timer->sms_ = props->sm_count;
    auto stream = cuda::Stream::create();
    if (!stream) return stream.status();
    timer->stream_ = std::move(*stream);
    auto start = cuda::Event::create(), stop = cuda::Event::create();
    if (!start) return start.status();
    if (!stop) return stop.status();
    timer->start_ = std::move(*start);
    timer->stop_ = std::move(*stop);
    // TILEFORGE_SCRUB picks the state the timed call starts from (the contract's write scrub unless it says otherwise;
    // the diagnostics say so on stderr): read scrubs the L2 by reads, so it holds clean lines and the timed kernel's
    // misses do not write dirty ones back (the difference between the two is the write-back a kernel pays under the
    // contract's scrub); warm scrubs nothing: a 30 us spin of one thread keeps the device busy while the host
    // enqueues the timed call, and the L2 holds the previous rep's operands.
    const char* mode = std::getenv("TILEFORGE_SCRUB");
    const std::string_view asked = mode ? mode : "";
    timer->mode_ = asked == "read" ? Scrub::read : asked == "warm" ? Scrub::warm : Scrub::write;
    if (timer->mode_ == Scrub::warm) {
      std::fprintf(stderr, "tileforge: TILEFORGE_SCRUB=warm: no L2 scrub, the operands stay in the L2 from rep to rep "
                           "(a diagnostic, not the benchmark contract's cold L2)\n");
    } else {
      // At least twice the L2 (60 MB on an H200), rounded up to whole MiB, so no operand line survives a scrub.
      const int64_t l2 = props->l2_bytes > 0 ? props->l2_bytes : (64 << 20);
      timer->scrub_bytes_ = std::size_t((2 * l2 + (1 << 20) - 1) >> 20 << 20);
      auto scrub = cuda::DeviceBuffer::allocate(timer->scrub_bytes_);
      if (!scrub) return scrub.status();
      timer->scrub_ = std::move(*scrub);
    }
    if (timer->mode_ == Scrub::read) {
      auto sink = cuda::DeviceBuffer::allocate(sizeof(unsigned));
      if (!sink) return sink.status();
      timer->sink_ = std::move(*sink);
      std::fprintf(stderr, "tileforge: TILEFORGE_SCRUB=read: the L2 is scrubbed by reads (a diagnostic, not the "
                           "benchmark contract's write scrub)\n");
    }
    auto kernel = cuda::utility_kernel(timer->scrub_entry(), device.ordinal);
    if (!kernel) return kernel.status();
    timer->scrub_fn_ = kernel->function;
    return std::unique_ptr<RepTimer>(std::move(timer));
  }

  std::string_view cache_state() const override { return mode_ == Scrub::warm ? "warm" : "cold-l2"; }
  std::size_t held_bytes() const override { return scrub_bytes_; }
  void set_device_reference_limit(double multiply_adds) override { full_limit_ = multiply_adds; }
  int min_warmup_reps() const override { return 10; }
  void* stream() override { return stream_.get(); }

  Expected<double> time(const std::function<Status()>& call) override {
    if (Status s = scrub(); !s) return s;
    if (Status s = start_.record(stream_.get()); !s) return s;
    if (Status s = call(); !s) return s;
    if (Status s = stop_.record(stream_.get()); !s) return s;
    if (Status s = stop_.synchronize(); !s) return s;  // a kernel's fault surfaces here
    auto ms = cuda::Event::elapsed_ms(start_, stop_);
    if (!ms) return ms.status();
    return double(*ms);
  }

  Expected<std::unique_ptr<OperandBuffer>> allocate(std::size_t bytes) override {
    auto ctx = cuda::activate(ordinal_);
    if (!ctx) return ctx.status();
    auto buf = cuda::DeviceBuffer::allocate(std::max<std::size_t>(bytes, 256));
    if (!buf) return buf.status();
    return std::unique_ptr<OperandBuffer>(std::make_unique<GpuBuffer>(std::move(*buf), bytes, stream_.get()));
  }

  bool verifies_on_device() const override { return true; }
  std::string device_lost() const override { return cuda::context_lost(); }

  Expected<verify::ErrorReport> verify_on_device(const Problem& problem, const OperandBuffer& a,
                                                 const OperandBuffer& b, const OperandBuffer& c_in,
                                                 const OperandBuffer& c_out,
                                                 std::unique_ptr<KeptReference>* kept) override {
    const Problem p = problem.normalized();
    verify::ErrorReport report;
    if (p.m == 0 || p.n == 0) return report;
    auto ptr = [](const OperandBuffer& buf) { return const_cast<OperandBuffer&>(buf).data(); };
    Operands ops{ptr(a), ptr(b), ptr(c_in)};
    // A large problem is checked on a sample of its rows (the host reference's rule, a larger limit): every time,
    // nothing kept, since the kept reference would hold every element.
    const int64_t rows = verify::covered_row_count(p, full_limit_);
    const bool sampled = rows < p.m;
    const DeviceReference* held = nullptr;
    if (kept && !sampled) {
      if (!*kept) {
        auto made = keep_reference(p, ops);
        if (!made) return made.status();
        *kept = std::move(*made);
      }
      held = dynamic_cast<const DeviceReference*>(kept->get());
      if (!held) return invalid_argument("kept reference: not one of this timer's (a device reference is needed)");
    }
    auto totals = cuda::DeviceBuffer::allocate(sizeof(ErrorTotals));
    if (!totals) return totals.status();
    if (Status s = totals->fill_bytes(0); !s) return s;
    void* pco = ptr(c_out);
    void* pt = totals->data();
    if (held && held->stored) {
      // Only the comparison: a pass over C and the kept values, memory-bound.
      int m = int(p.m), n = int(p.n), batch = int(p.batch);
      long long ldc = p.ldc, sc = p.stride_c;
      const void* pref = held->ref.data();
      const void* pbound = held->bound.data();
      void* args[] = {&pref, &pbound, &pco, &pt, &m, &n, &batch, &ldc, &sc};
      const int64_t blocks = (int64_t(p.m) * p.n * p.batch + 255) / 256;
      cuda::LaunchDims dims;
      dims.block[0] = 256;
      dims.grid[0] = unsigned(std::clamp<int64_t>(blocks, 1, int64_t(sms_) * 8));
      if (Status s = launch(fmt::format("tf_reference_compare_{}", to_string(p.precision.output)), dims, args); !s)
        return s;
    } else if (Status s = launch_reference("check", p, ops, pco, pt, int(rows)); !s) {
      return s;
    }
    if (Status s = stream_.synchronize(); !s) return s;
    ErrorTotals t{};
    if (Status s = totals->download(&t, sizeof(t)); !s) return s;
    double max_scaled = 0;
    std::memcpy(&max_scaled, &t.max_scaled_bits, sizeof(double));
    report.rel_error = t.sq_ref > 0 ? std::sqrt(t.sq_err / t.sq_ref) : std::sqrt(t.sq_err);
    report.max_scaled_error = max_scaled;
    report.nan_count = int64_t(t.nan_count);
    report.checked = int64_t(t.checked);
    report.full = !sampled;
    // The device pass keeps only the largest scaled error: an element over the worst-case bound shows there.
    report.over_bound = max_scaled > verify::worst_case_factor(p) ? 1 : 0;
    return report;
  }

 private:
  struct Operands {
    const void *a, *b, *c_in;
  };

  // The reference and bound of every element ([batch][m][n], float64) kept on the device; not `stored` where they
  // would take more than a quarter of the free memory (the kernels under test need theirs), and each check then
  // computes the reference again.
  struct DeviceReference final : KeptReference {
    cuda::DeviceBuffer ref, bound;
    bool stored = false;
  };

  static std::string reference_entry(std::string_view what, const Problem& p) {
    return fmt::format("tf_reference_{}_{}_{}_{}", what, to_string(p.precision.input), to_string(p.precision.output),
                       to_string(p.layout));
  }

  // tf_reference_check (outputs: C and the totals; a 16x16 tile of C per block) or tf_reference_store (outputs: the
  // reference and bound buffers; 64x64 tiles) on the problem's operands.
  // `rows`: the check's covered rows (m: every row); the store covers every row.
  Status launch_reference(std::string_view what, const Problem& p, const Operands& ops, void* out0, void* out1,
                          int rows = 0) {
    const void* pa = ops.a;
    const void* pb = ops.b;
    const void* pci = ops.c_in;
    int m = int(p.m), n = int(p.n), k = int(p.k), batch = int(p.batch);
    long long lda = p.lda, ldb = p.ldb, ldc = p.ldc, sa = p.stride_a, sb = p.stride_b, sc = p.stride_c;
    double alpha = p.alpha, beta = p.beta;
    const bool check = what == "check";
    void* check_args[] = {&pa, &pb, &pci, &out0, &out1, &m, &n, &k, &batch, &rows,
                          &lda, &ldb, &ldc, &sa, &sb, &sc, &alpha, &beta};
    void* store_args[] = {&pa, &pb, &pci, &out0, &out1, &m, &n, &k, &batch, &lda, &ldb, &ldc, &sa, &sb, &sc, &alpha, &beta};
    void** args = check ? check_args : store_args;
    const int64_t tile = check ? 16 : 64;
    const int64_t covered = check ? rows : p.m;
    // The grid's y and z stop at cuda::kMaxGridYZ: the kernels walk row tiles and batches beyond them.
    cuda::LaunchDims dims;
    dims.block[0] = 16;
    dims.block[1] = 16;
    dims.grid[0] = unsigned((p.n + tile - 1) / tile);
    dims.grid[1] = unsigned(std::min((covered + tile - 1) / tile, cuda::kMaxGridYZ));
    dims.grid[2] = unsigned(std::min<int64_t>(p.batch, cuda::kMaxGridYZ));
    return launch(reference_entry(what, p), dims, args);
  }

  Status launch(const std::string& entry, cuda::LaunchDims dims, void** args) {
    auto kernel = cuda::utility_kernel(entry, ordinal_);
    if (!kernel) return kernel.status();
    dims.stream = stream_.get();
    return cuda::launch(static_cast<CUfunction>(kernel->function), dims, args, entry);
  }

  Expected<std::unique_ptr<KeptReference>> keep_reference(const Problem& p, const Operands& ops) {
    auto out = std::make_unique<DeviceReference>();
    const std::size_t bytes = std::size_t(p.m) * std::size_t(p.n) * std::size_t(p.batch) * sizeof(double);
    auto free = cuda::free_device_memory();
    if (!free) return free.status();
    if (2 * bytes > *free / 4) return std::unique_ptr<KeptReference>(std::move(out));
    auto ref = cuda::DeviceBuffer::allocate(bytes);
    if (!ref) return ref.status();
    auto bound = cuda::DeviceBuffer::allocate(bytes);
    if (!bound) return bound.status();
    out->ref = std::move(*ref);
    out->bound = std::move(*bound);
    if (Status s = launch_reference("store", p, ops, out->ref.data(), out->bound.data()); !s) return s;
    out->stored = true;
    return std::unique_ptr<KeptReference>(std::move(out));
  }

  GpuTimer() = default;

  Status scrub() {
    void* buf = scrub_.data();
    long long words = (long long)(scrub_bytes_ / 4);
    unsigned value = ++scrub_round_;
    void* sink = sink_.data();
    void* write_args[] = {&buf, &words, &value};
    void* read_args[] = {&buf, &words, &value, &sink};
    long long spin_ns = 30000;
    void* spin_args[] = {&spin_ns};
    const bool warm = mode_ == Scrub::warm;
    void** args = warm ? spin_args : mode_ == Scrub::read ? read_args : write_args;
    cuda::LaunchDims dims;
    dims.block[0] = warm ? 1 : 512;
    dims.grid[0] = warm ? 1u : unsigned(std::max(1, sms_ * 4));
    dims.stream = stream_.get();
    return cuda::launch(static_cast<CUfunction>(scrub_fn_), dims, args, scrub_entry());
  }

  const char* scrub_entry() const {
    return mode_ == Scrub::warm ? "tf_spin" : mode_ == Scrub::read ? "tf_scrub_l2_read" : "tf_scrub_l2";
  }

  int ordinal_ = 0;
  int sms_ = 1;
  cuda::Stream stream_;
  cuda::Event start_, stop_;
  cuda::DeviceBuffer scrub_;
  std::size_t scrub_bytes_ = 0;
  // Above 1e12 multiply-adds the device reference checks a sample of rows: about 4 s of the check kernel's float64
  // (0.5 TFLOP/s on an H200) per verification, where 70000^3 took some 10 minutes for each backend.
  double full_limit_ = 1e12;
  void* scrub_fn_ = nullptr;
  unsigned scrub_round_ = 0;
  // The L2's state before each timed call (TILEFORGE_SCRUB): the contract's write scrub, a read scrub, or a spin
  // instead of either (warm: no scrub buffer held).
  enum class Scrub { write, read, warm };
  Scrub mode_ = Scrub::write;
  cuda::DeviceBuffer sink_;       // the read scrub's never-written result
};

}  // namespace

Expected<std::unique_ptr<RepTimer>> make_cuda_timer(const Device& device) { return GpuTimer::create(device); }

}  // namespace tileforge::measure
