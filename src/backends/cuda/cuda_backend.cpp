// tileforge's own CUDA backend: the sm80 and sm90 families' instances generated per Config, compiled with NVRTC
// through the kernel cache, checked against their resource estimates, and launched with cuLaunchKernelEx (sm90: with
// tensor maps built per call and thread-block clusters). Which family runs a problem is plan::family_for's answer.
#include "backends/cuda/cuda_backend.hpp"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

#include "backends/cuda/common/stream_workspace.hpp"
#include "backends/cuda/sm80/sm80_family.hpp"
#include "backends/cuda/sm90/sm90_family.hpp"
#include "plan/kernel_family.hpp"
#include "core/embedded.hpp"
#include "hw/cuda_device.hpp"
#include "hw/cuda_driver.hpp"
#include "jit/loader.hpp"
#include "jit/nvrtc.hpp"

namespace tileforge::cuda {
namespace {

// Each operand copied by COPY_AB gets rows padded to a multiple of this many elements (128 bytes), so that the
// copies start every row on a full cache line and the GEMM can read them 16 bytes at a time.
constexpr int64_t kCopyRowAlign = 64;

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

std::vector<jit::Header> kernel_headers() {
  std::vector<jit::Header> headers;
  for (const auto& [name, text] : embedded::embedded_kernel_headers()) headers.push_back({std::string(name), std::string(text)});
  return headers;
}

// The device's properties, queried once per ordinal (family_for asks on every space() and heuristic() call).
Expected<DeviceProperties> properties_of(int ordinal) {
  static std::mutex mutex;
  static std::map<int, DeviceProperties> known;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(ordinal); it != known.end()) return it->second;
  }
  auto props = query_device(ordinal);
  if (!props) return props.status();
  std::lock_guard lock(mutex);
  return known.emplace(ordinal, *props).first->second;
}

Expected<std::string> arch_of(int ordinal) {
  auto props = properties_of(ordinal);
  if (!props) return props.status();
  return nvrtc_arch(props->cc_major, props->cc_minor);
}

// One request for every path that compiles a kernel (prepare, utilities, compile-only), so that a kernel compiled
// ahead of time is found in the cache by the same key when prepare() later asks for it.
jit::CompileRequest request_for(const std::string& name, const std::string& source, const std::string& arch) {
  jit::CompileRequest req;
  req.name = name;
  req.source = source;
  req.headers = kernel_headers();
  req.arch = arch;
  return req;
}

Expected<jit::LoadedKernel> compile_and_load(const std::string& name, const std::string& source,
                                             const std::string& entry, int ordinal) {
  auto arch = arch_of(ordinal);
  if (!arch) return arch.status();
  return jit::load_kernel(request_for(name, source, *arch), entry, ordinal);
}

// Why a loaded instance must not run: its registers allow fewer threads per block than it launches; "" when not.
std::string threads_refusal(const jit::LoadedKernel& k, int threads, const Config& config) {
  if (k.max_threads_per_block > 0 && k.max_threads_per_block < threads) {
    return fmt::format("{} needs {} threads per block but its registers allow only {}", config.describe(), threads,
                       k.max_threads_per_block);
  }
  return {};
}

// The load width prepare() compiles an instance for: 16 bytes after COPY_AB, else the config's VEC_BYTES.
int prepared_vec(const Config& config) { return config.at("COPY_AB") ? 16 : int(config.at("VEC_BYTES")); }

// One operand as the copy kernel sees it: stored rows x cols with leading dimension ld.
struct StoredShape {
  int64_t rows, cols, ld, stride;
};
StoredShape stored_a(const Problem& p) {
  return a_row_major(p.layout) ? StoredShape{p.m, p.k, p.lda, p.stride_a} : StoredShape{p.k, p.m, p.lda, p.stride_a};
}
StoredShape stored_b(const Problem& p) {
  return b_row_major(p.layout) ? StoredShape{p.k, p.n, p.ldb, p.stride_b} : StoredShape{p.n, p.k, p.ldb, p.stride_b};
}

// COPY_AB's padded copies of A and B and the copy kernel, owned by a prepared kernel of either family: the buffers
// grow as needed, the kernel is loaded once (run() must not pay a cache lookup per call: every microsecond the host
// spends between launches is GPU time in a timed rep).
class OperandCopy {
 public:
  explicit OperandCopy(int ordinal) : ordinal_(ordinal) {}

  // The copies launched on `stream`: one pair per stream, so that calls on other streams, which may run at the same
  // time, never write the buffers this stream's kernel reads.
  Expected<std::pair<void*, void*>> buffers(CUstream stream, std::size_t a_bytes, std::size_t b_bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& [a, b] = buffers_[stream];
    for (auto [buf, bytes] : {std::pair{&a, a_bytes}, std::pair{&b, b_bytes}}) {
      if (buf->size() < bytes) {
        auto fresh = DeviceBuffer::allocate(bytes);
        if (!fresh) return fresh.status();
        *buf = std::move(*fresh);
      }
    }
    return std::pair<void*, void*>{a.data(), b.data()};
  }

  Expected<void*> copier() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!copier_) {
      auto k = utility_kernel("tf_copy_u16", ordinal_);
      if (!k) return k.status();
      copier_ = k->function;
    }
    return copier_;
  }

 private:
  int ordinal_;
  mutable std::mutex mutex_;
  mutable std::map<CUstream, std::pair<DeviceBuffer, DeviceBuffer>> buffers_;
  mutable void* copier_ = nullptr;
};

class CudaKernel final : public Kernel {
 public:
  CudaKernel(Config config, int ordinal, std::string arch)
      : Kernel(std::move(config)), ordinal_(ordinal), arch_(std::move(arch)), copy_(ordinal) {}

  struct Instance {
    jit::LoadedKernel loaded;
    GeneratedKernel generated;
  };

  int ordinal() const { return ordinal_; }
  // The instance for (vec, epilogue vec), compiled on first use: a pointer narrower than the config assumed
  // gets a narrower instance instead of a fault.
  Expected<const Instance*> instance(const Problem& p, int vec, int epi) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key = std::make_pair(vec, epi);
    if (auto it = instances_.find(key); it != instances_.end()) return &it->second;
    GeneratedKernel gen = sm80_source(p, config(), vec, epi);
    auto loaded = compile_and_load(gen.entry, gen.source, gen.entry, ordinal_);
    if (!loaded) return loaded.status();
    Status s = check_resources(*loaded, gen);
    if (!s) return s;
    auto [it, inserted] = instances_.emplace(key, Instance{std::move(*loaded), std::move(gen)});
    return &it->second;
  }

  const OperandCopy& operand_copy() const { return copy_; }

  mutable std::vector<std::string> warnings;

 private:
  Status check_resources(const jit::LoadedKernel& k, const GeneratedKernel& gen) const {
    const auto& r = k.resources;
    if (r.spills()) {
      return unsupported(fmt::format("{} spills ({} bytes stored, {} loaded; {} registers): refused before it runs "
                                     "(choose smaller tiles or fewer stages)",
                                     config().describe(), r.spill_store_bytes, r.spill_load_bytes, r.registers));
    }
    const int estimate = sm80_register_estimate(config(), arch_);
    if (r.registers > estimate) {
      warnings.push_back(fmt::format("{}: the compiler uses {} registers, above the estimate {} (the estimate is "
                                     "meant as an upper bound)",
                                     config().describe(), r.registers, estimate));
    }
    if (std::string why = threads_refusal(k, gen.threads, config()); !why.empty()) return unsupported(why);
    return {};
  }

  int ordinal_;
  std::string arch_;  // the NVRTC target, for the register estimate
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int, int>, Instance> instances_;
  OperandCopy copy_;
};

void note_once(std::vector<std::string>& said, std::string text) {
  for (const auto& w : said)
    if (w == text) return;
  std::fprintf(stderr, "tileforge: warning: %s\n", text.c_str());
  said.push_back(std::move(text));
}

// ---- sm80 ----------------------------------------------------------------------------------------------------

// Mirrors tf::sm80::Params in kernels/sm80/gemm.cuh field for field (passed by value as the only argument).
struct Sm80Params {
  const void* a;
  const void* b;
  void* c;
  int m, n, k;
  long long lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  float alpha, beta;
};

// Whether an operand must be copied for COPY_AB: its rows do not start on 32-byte sectors (TMA reads such rows
// slowly, sm90_cost_constants.hpp), or its base or batch stride is off 16 bytes. An operand whose rows are on sectors
// is read in place, which saves its read and write.
bool needs_copy(const StoredShape& shape, const void* base, int64_t batch) {
  return (shape.ld * 2) % 32 != 0 || reinterpret_cast<uintptr_t>(base) % 16 != 0 ||
         (batch > 1 && (shape.stride * 2) % 16 != 0);
}

// Which operands a config lets COPY_AB copy: sm80's COPY_AB = 1 and sm90's 1 both, sm90's 2 A only and 3 B only.
struct CopyWhich {
  bool a, b;
};
CopyWhich copy_which(const Config& c) {
  const int64_t v = c.get("COPY_AB").value_or(0);
  return {v == 1 || v == 2, v == 1 || v == 3};
}

// Copies those of A and B that `which` allows and that need it (needs_copy) into buffers whose rows are 128-byte
// aligned; `launch_p` gets their leading dimensions and the returned pointers are the ones to read.
Expected<std::pair<const void*, const void*>> copy_operands(const OperandCopy& copy, const Problem& p,
                                                            const GemmArgs& args, CopyWhich which,
                                                            Problem& launch_p) {
  const StoredShape sa = stored_a(p), sb = stored_b(p);
  const bool copy_a = which.a && needs_copy(sa, args.a, p.batch), copy_b = which.b && needs_copy(sb, args.b, p.batch);
  const int64_t lda = round_up(sa.cols, kCopyRowAlign), ldb = round_up(sb.cols, kCopyRowAlign);
  const int64_t stride_a = lda * sa.rows, stride_b = ldb * sb.rows;
  auto bufs = copy.buffers(static_cast<CUstream>(args.stream), copy_a ? std::size_t(stride_a * p.batch * 2) : 0,
                           copy_b ? std::size_t(stride_b * p.batch * 2) : 0);
  if (!bufs) return bufs.status();
  auto copier = copy.copier();
  if (!copier) return copier.status();
  std::pair<const void*, const void*> read{args.a, args.b};
  for (auto [wanted, src, dst, shape, ld_dst, stride_dst] :
       {std::tuple{copy_a, args.a, bufs->first, sa, lda, stride_a},
        std::tuple{copy_b, args.b, bufs->second, sb, ldb, stride_b}}) {
    if (!wanted) continue;
    const void* s = src;
    void* d = dst;
    // One matrix has no batch stride to honour (it may be anything, and would keep the kernel off its wide path).
    long long ld_src = shape.ld, st_src = p.batch > 1 ? shape.stride : 0, ldd = ld_dst, std_ = stride_dst;
    int rows = int(shape.rows), cols = int(shape.cols);
    void* kargs[] = {&s, &ld_src, &st_src, &d, &ldd, &std_, &rows, &cols};
    // The kernel moves 16 bytes per thread from 16-byte aligned rows and 4 otherwise (copy_rows_u16).
    const bool wide = reinterpret_cast<uintptr_t>(src) % 16 == 0 && (ld_src * 2) % 16 == 0 && (st_src * 2) % 16 == 0;
    const int64_t per_block = 256 * (wide ? 8 : 2);
    LaunchDims dims;
    dims.block[0] = 256;
    dims.grid[0] = unsigned(std::min<int64_t>((cols + per_block - 1) / per_block, 64));
    dims.grid[1] = unsigned(std::min<int64_t>(rows, 65535));
    dims.grid[2] = unsigned(p.batch);
    dims.stream = static_cast<CUstream>(args.stream);
    if (Status st = launch(static_cast<CUfunction>(*copier), dims, kargs, "tf_copy_u16"); !st) return st;
  }
  if (copy_a) {
    launch_p.lda = lda;
    launch_p.stride_a = stride_a;
    read.first = bufs->first;
  }
  if (copy_b) {
    launch_p.ldb = ldb;
    launch_p.stride_b = stride_b;
    read.second = bufs->second;
  }
  return read;
}

Expected<std::unique_ptr<CudaKernel>> prepare_sm80(const Problem& p, const Config& config, int ordinal,
                                                   const std::string& arch) {
  auto kernel = std::make_unique<CudaKernel>(config, ordinal, arch);
  auto inst = kernel->instance(p, prepared_vec(config), epilogue_vec(p));
  if (!inst) return inst.status();
  if (config.at("COPY_AB")) {
    if (auto copier = kernel->operand_copy().copier(); !copier) return copier.status();
  }
  return kernel;
}

// `p` normalized, m and n > 0; the pointers checked.
Status run_sm80(const CudaKernel& kernel, const Problem& p, const GemmArgs& args) {
  const Config& c = kernel.config();
  const bool copy = c.at("COPY_AB") != 0 && p.k > 0;
  const void* a = args.a;
  const void* b = args.b;
  Problem launch_p = p;
  int vec = int(c.at("VEC_BYTES"));
  if (copy) {
    auto copied = copy_operands(kernel.operand_copy(), p, args, copy_which(c), launch_p);
    if (!copied) return copied.status();
    std::tie(a, b) = *copied;
    vec = 16;
  } else {
    const int allowed = max_vec_bytes(p, args.a, args.b);
    if (allowed < vec) {
      note_once(kernel.warnings, fmt::format("A or B is only {}-byte aligned; {} runs with {}-byte loads instead of {}",
                                             allowed, c.describe(), allowed, vec));
      vec = allowed;
    }
  }
  const int epi = epilogue_vec(p, args.c);
  auto inst = kernel.instance(p, vec, epi);
  if (!inst) return inst.status();

  Sm80Params params{};
  params.a = a;
  params.b = b;
  params.c = args.c;
  params.m = int(p.m);
  params.n = int(p.n);
  params.k = int(p.k);
  params.lda = launch_p.lda;
  params.ldb = launch_p.ldb;
  params.ldc = p.ldc;
  params.stride_a = launch_p.stride_a;
  params.stride_b = launch_p.stride_b;
  params.stride_c = p.stride_c;
  params.alpha = float(p.alpha);
  params.beta = float(p.beta);
  void* kernel_args[] = {&params};
  LaunchDims dims;
  const int64_t bm = c.at("BLOCK_M"), bn = c.at("BLOCK_N");
  dims.grid[0] = unsigned(((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn));
  dims.grid[1] = unsigned(p.batch);
  dims.block[0] = unsigned((*inst)->generated.threads);
  dims.dynamic_smem_bytes = unsigned((*inst)->generated.smem_bytes);
  dims.stream = static_cast<CUstream>(args.stream);
  return launch((*inst)->loaded.function, dims, kernel_args, (*inst)->generated.entry);
}

// ---- sm90 ----------------------------------------------------------------------------------------------------

// Mirrors tf::sm90::TmaDesc and tf::sm90::Params in kernels/sm90/gemm.cuh field for field: the tensor maps travel
// by value in the kernel's parameter space (__grid_constant__), where the TMA unit reads them.
struct alignas(64) Sm90TmaDesc {
  unsigned long long v[16];
};
struct Sm90Params {
  Sm90TmaDesc a, b, c;
  void* c_ptr;
  int m, n, k;
  long long ldc;
  float alpha, beta;
  int* counters;
  float* partials;
  int sk_tiles;
  int shared_sum;
};
static_assert(sizeof(Sm90TmaDesc) == sizeof(CUtensorMap), "a tensor map is 128 bytes");

// A 2-D map of a 16-bit matrix: `inner` contiguous elements per line, `outer` lines `ld` elements apart, 128-byte
// swizzle, out-of-bounds elements read as zero.
Status encode_map(Sm90TmaDesc& out, const void* ptr, DType type, int64_t inner, int64_t outer, int64_t ld,
                  const int box[2], std::string_view what) {
  auto d = driver();
  if (!d) return d.status();
  if (!(*d)->cuTensorMapEncodeTiled) {
    return unsupported("the CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0 or later is needed for TMA)");
  }
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(outer)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * 2};
  const cuuint32_t boxes[2] = {cuuint32_t(box[0]), cuuint32_t(box[1])};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = (*d)->cuTensorMapEncodeTiled(
      &map, type == DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      const_cast<void*>(ptr), dims, strides, boxes, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return check(r, fmt::format("cuTensorMapEncodeTiled({}: {} x {} elements, ld {}, box {} x {})", what, inner, outer,
                                ld, box[0], box[1]));
  }
  std::memcpy(&out, &map, sizeof out);
  return {};
}

class Sm90Kernel final : public Kernel {
 public:
  Sm90Kernel(Config config, int ordinal, jit::LoadedKernel loaded, Sm90Source source, int max_clusters,
             hw::HwProfile profile, std::string arch)
      : Kernel(std::move(config)),
        copy_(ordinal),
        ordinal_(ordinal),
        loaded_(std::move(loaded)),
        source_(std::move(source)),
        max_clusters_(max_clusters),
        profile_(std::move(profile)),
        arch_(std::move(arch)) {}

  int ordinal() const { return ordinal_; }
  // Split-K tiles are summed by their last slice even where every slice could sum its share.
  void keep_last_slice_sum() { shared_sum_refused_ = true; }
  void launch_uncooperatively() { cooperative_ = false; }

  Status run(const Problem& p, const GemmArgs& args) const {
    // COPY_AB: A and B (1), A (2) or B (3) are copied first (on the caller's stream) into buffers whose rows are
    // 128-byte aligned, and the tensor maps read the copies: leading dimensions TMA cannot take, unaligned bases, or
    // rows off 128 bytes, which slow TMA's reads (an operand already on 128-byte rows is read in place).
    const void* a_ptr = args.a;
    const void* b_ptr = args.b;
    Problem lp = p;
    if (config().get("COPY_AB").value_or(0) != 0) {
      auto copied = copy_operands(copy_, p, args, copy_which(config()), lp);
      if (!copied) return copied.status();
      std::tie(a_ptr, b_ptr) = *copied;
    }
    // TMA reads A and B from 16-byte aligned bases; the epilogue writes C by TMA (16 bytes) or element by element.
    const uintptr_t a = reinterpret_cast<uintptr_t>(a_ptr), b = reinterpret_cast<uintptr_t>(b_ptr),
                    c = reinterpret_cast<uintptr_t>(args.c);
    const bool tma_store = config().at("EPILOGUE") != kSm90EpilogueDirect && p.beta == 0.0;
    const uintptr_t c_align = tma_store ? 16 : size_of(p.precision.output);
    if (a % 16 != 0 || b % 16 != 0 || c % c_align != 0) {
      return run_fallback(p, args,
                          fmt::format("A, B or C is not aligned for {} (A and B need 16 bytes for TMA, C {} bytes)",
                                      config().describe(), c_align));
    }
    std::lock_guard lock(mutex_);
    if (!cached_ || cached_a_ != a_ptr || cached_b_ != b_ptr || cached_c_ != args.c || !same_shape(lp)) {
      if (Status s = build_params(lp, a_ptr, b_ptr, args.c); !s) return s;
      cached_ = true;
      cached_a_ = a_ptr;
      cached_b_ = b_ptr;
      cached_c_ = args.c;
      cached_p_ = lp;
    }
    params_.alpha = float(p.alpha);
    params_.beta = float(p.beta);
    const Sm90Schedule sched = sm90_schedule(p, config(), max_clusters_);
    params_.sk_tiles = int(sched.sk_tiles);
    if (sched.workspace_bytes > 0) {
      auto ws = workspaces_.get(args, sched.workspace_bytes, sched.counter_bytes, config().describe());
      if (!ws) return ws.status();
      params_.counters = static_cast<int*>(*ws);
      params_.partials = reinterpret_cast<float*>(static_cast<char*>(*ws) + sched.counter_bytes);
    } else {
      params_.counters = nullptr;
      params_.partials = nullptr;
    }
    void* kernel_args[] = {&params_};
    const int64_t cs = source_.cluster;
    LaunchDims dims;
    dims.grid[0] = unsigned(sched.clusters * cs);
    dims.block[0] = unsigned(source_.threads);
    dims.dynamic_smem_bytes = unsigned(source_.smem_bytes);
    if (cs > 1) dims.cluster[0] = unsigned(cs);
    dims.stream = static_cast<CUstream>(args.stream);
    // The shared sum has the slices of a tile wait for one another, so every CTA must be resident at once: a
    // cooperative launch, which fails rather than queue CTAs. Where the driver refuses it (another kernel holding
    // SMs, or no cooperative launch with clusters), the last slice to arrive sums instead, which waits for nothing.
    params_.shared_sum = sched.shared_sum && !shared_sum_refused_ ? 1 : 0;
    dims.cooperative = params_.shared_sum != 0 && cooperative_;
    Status launched = launch(loaded_.function, dims, kernel_args, source_.entry);
    if (!launched && dims.cooperative) {
      note_once(warnings_, fmt::format("{}: the cooperative launch of the shared split-K sum failed ({}); the last "
                                       "slice of each tile sums it instead",
                                       config().describe(), launched.message()));
      shared_sum_refused_ = true;
      params_.shared_sum = 0;
      dims.cooperative = false;
      launched = launch(loaded_.function, dims, kernel_args, source_.entry);
    }
    return launched;
  }

  std::size_t workspace_bytes(const Problem& p) const override {
    return std::size_t(sm90_schedule(p, config(), max_clusters_).workspace_bytes);
  }

  const Sm90Source& source() const { return source_; }
  const jit::LoadedKernel& loaded() const { return loaded_; }
  const OperandCopy& operand_copy() const { return copy_; }

 private:
  bool same_shape(const Problem& p) const {
    const Problem& q = cached_p_;
    return q.m == p.m && q.n == p.n && q.k == p.k && q.lda == p.lda && q.ldb == p.ldb && q.ldc == p.ldc &&
           q.layout == p.layout && q.precision.input == p.precision.input && q.precision.output == p.precision.output;
  }

  Status build_params(const Problem& p, const void* a, const void* b, void* c) const {
    std::memset(&params_, 0, sizeof params_);
    const DType in = p.precision.input;
    if (a_row_major(p.layout)) {
      if (Status s = encode_map(params_.a, a, in, p.k, p.m, p.lda, source_.a_box, "A"); !s) return s;
    } else {
      if (Status s = encode_map(params_.a, a, in, p.m, p.k, p.lda, source_.a_box, "A"); !s) return s;
    }
    if (b_row_major(p.layout)) {
      if (Status s = encode_map(params_.b, b, in, p.n, p.k, p.ldb, source_.b_box, "B"); !s) return s;
    } else {
      if (Status s = encode_map(params_.b, b, in, p.k, p.n, p.ldb, source_.b_box, "B"); !s) return s;
    }
    if (config().at("EPILOGUE") != kSm90EpilogueDirect && p.precision.output != DType::f32) {
      if (Status s = encode_map(params_.c, c, p.precision.output, p.n, p.m, p.ldc, source_.c_box, "C"); !s) return s;
    }
    params_.c_ptr = c;
    params_.m = int(p.m);
    params_.n = int(p.n);
    params_.k = int(p.k);
    params_.ldc = p.ldc;
    return {};
  }

  // The sm80 family's heuristic config for the problem, prepared on first use, runs what this kernel cannot.
  Status run_fallback(const Problem& p, const GemmArgs& args, const std::string& why) const {
    const CudaKernel* k = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!fallback_) {
        const Config c = sm80_heuristic(p, profile_);
        auto prepared = prepare_sm80(p, c, ordinal_, arch_);
        if (!prepared) {
          return Status(prepared.status().code(), fmt::format("{}, and the sm80 fallback could not be prepared: {}", why,
                                                              prepared.status().message()));
        }
        fallback_ = std::move(*prepared);
      }
      k = fallback_.get();
      note_once(warnings_, fmt::format("{}: running the sm80 family's {} instead", why, k->config().describe()));
    }
    return run_sm80(*k, p, args);
  }

  OperandCopy copy_;
  int ordinal_;
  jit::LoadedKernel loaded_;
  Sm90Source source_;
  int max_clusters_;
  hw::HwProfile profile_;
  std::string arch_;
  mutable std::mutex mutex_;
  mutable Sm90Params params_{};
  mutable bool cached_ = false;
  mutable const void* cached_a_ = nullptr;
  mutable const void* cached_b_ = nullptr;
  mutable const void* cached_c_ = nullptr;
  mutable Problem cached_p_;
  mutable std::unique_ptr<CudaKernel> fallback_;
  mutable std::vector<std::string> warnings_;
  mutable bool shared_sum_refused_ = false;
  bool cooperative_ = true;
  StreamWorkspaces workspaces_;
};

// Why a compiled sm90 instance must not run: spills, serialized wgmma, too few threads; "" when it may.
std::string sm90_refusal(const Config& config, const jit::FunctionResources* r, const std::vector<std::string>& warnings) {
  if (r && r->spills()) {
    return fmt::format("{} spills ({} bytes stored, {} loaded; {} registers)", config.describe(), r->spill_store_bytes,
                       r->spill_load_bytes, r->registers);
  }
  for (const std::string& w : warnings) {
    if (w.find("wgmma") != std::string::npos && w.find("serializ") != std::string::npos) {
      return fmt::format("{}: ptxas serializes its wgmma instructions ({})", config.describe(), w);
    }
  }
  return {};
}

Expected<std::unique_ptr<Kernel>> prepare_sm90(const Problem& p, const Config& config, const Device& device,
                                               const std::string& arch) {
  if (arch != "sm_90a") {
    return unsupported(fmt::format("the sm90 family's kernels need an sm_90a GPU; this one compiles for {}", arch));
  }
  const Sm90Source src = sm90_source(p, config);
  auto loaded = compile_and_load(src.entry, src.source, src.entry, device.ordinal);
  if (!loaded) return loaded.status();
  if (std::string why = sm90_refusal(config, &loaded->resources, loaded->warnings); !why.empty()) {
    return unsupported(why + ": refused before it runs");
  }
  if (std::string why = threads_refusal(*loaded, src.threads, config); !why.empty()) return unsupported(why);
  auto props = properties_of(device.ordinal);
  if (!props) return props.status();
  int max_clusters = std::max(1, props->sm_count / src.cluster);
  auto d = driver();
  if (!d) return d.status();
  // The shared memory the kernel asks for, raised before the occupancy query (which reads it from the function).
  if (Status s = check((*d)->cuFuncSetAttribute(loaded->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 int(src.smem_bytes)),
                       fmt::format("{}: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = {})", src.entry,
                                   src.smem_bytes));
      !s) {
    return s;
  }
  if (src.cluster > 1 && (*d)->cuOccupancyMaxActiveClusters) {
    CUlaunchConfig lc{};
    lc.gridDimX = unsigned(max_clusters * src.cluster);
    lc.gridDimY = lc.gridDimZ = 1;
    lc.blockDimX = unsigned(src.threads);
    lc.blockDimY = lc.blockDimZ = 1;
    lc.sharedMemBytes = unsigned(src.smem_bytes);
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = unsigned(src.cluster);
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    lc.attrs = &attr;
    lc.numAttrs = 1;
    int n = 0;
    if ((*d)->cuOccupancyMaxActiveClusters(&n, loaded->function, &lc) == CUDA_SUCCESS && n > 0) {
      max_clusters = std::min(max_clusters, n);
    }
  }
  auto kernel = std::make_unique<Sm90Kernel>(config, device.ordinal, std::move(*loaded), src, max_clusters,
                                             device.profile, arch);
  // Diagnostics only, read when a kernel is prepared (TILEFORGE_SM90_SHARED_SUM): "0", the last slice sums every
  // split-K tile even where the shared sum could run, to time the two and compare their bits in one process;
  // "uncooperative", unsafe beside other kernels, the shared sum launched without the cooperative attribute, to time
  // what that attribute costs.
  if (const char* v = std::getenv("TILEFORGE_SM90_SHARED_SUM")) {
    if (std::string_view(v) == "0") kernel->keep_last_slice_sum();
    if (std::string_view(v) == "uncooperative") kernel->launch_uncooperatively();
  }
  if (config.get("COPY_AB").value_or(0) != 0) {
    if (auto copier = kernel->operand_copy().copier(); !copier) return copier.status();
  }
  return std::unique_ptr<Kernel>(std::move(kernel));
}

// The family that runs a problem on a device: plan::family_for's answer, unless TILEFORGE_CUDA_FAMILY names another
// registered CUDA family that fits, runs on the device and takes the problem (to compare families in one run).
const plan::KernelFamily* cuda_family(const Problem& p, const Device& device) {
  if (const char* forced = std::getenv("TILEFORGE_CUDA_FAMILY"); forced && *forced && std::string_view(forced) != "auto") {
    const plan::KernelFamily* f = plan::find_family(forced);
    if (f && f->backend() == "cuda" && f->fit(device.profile).ok && f->runs_on(device) && f->supports(p).empty()) {
      return f;
    }
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr, "tileforge: warning: TILEFORGE_CUDA_FAMILY=%s: not a CUDA family that runs %s here; "
                   "choosing the family as usual\n", forced, p.describe().c_str());
    });
  }
  return plan::family_for("cuda", p, device);
}

// Families with code of their own (prepare, run, compile_ahead): every registered CUDA family but the two this
// backend builds in.
bool plugged(std::string_view family) { return family != "sm80" && family != "sm90"; }

std::string cuda_family_names() {
  std::string out;
  for (const plan::KernelFamily* f : plan::families()) {
    if (f->backend() == "cuda") out += (out.empty() ? "" : ", ") + std::string(f->name());
  }
  return out;
}

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  bool native() const override { return false; }
  std::string_view device_kind() const override { return "cuda"; }

  Support available() const override {
    auto d = driver();
    if (!d) return Support::no(d.status().message());
    if (cuda_device_count() == 0) return Support::no("no CUDA device");
    auto nvrtc = jit::Nvrtc::get();
    if (!nvrtc) return Support::no(nvrtc.status().message());
    return Support::yes();
  }

  Support supports(const Problem& p, const Device& device) const override {
    if (device.kind != "cuda") return Support::no(fmt::format("the cuda backend runs on CUDA devices, not {}", device.kind));
    const Problem q = p.normalized();
    if (cuda_family(q, device)) return Support::yes();
    // Why not: the first CUDA family that fits the chip record says it.
    for (const plan::KernelFamily* f : plan::families()) {
      if (f->backend() != "cuda" || !f->fit(device.profile).ok) continue;
      if (plan::SupportGap gap = f->supports(q); !gap.empty()) return Support::no(gap.why);
      if (Support s = f->runs_on(device); !s) return s;
    }
    return Support::no(fmt::format("no CUDA kernel family plans for {} ({})", device.profile.name, device.profile.arch));
  }

  ParamSpace space(const Problem& p, const Device& device) const override {
    const Problem q = p.normalized();
    const plan::KernelFamily* f = cuda_family(q, device);
    if (f && f->name() == "sm90") return sm90_space(q, device.profile);
    if (f && plugged(f->name())) return f->candidates(q, device.profile, 0).space;
    return sm80_space(q, device.profile);
  }

  Expected<Config> heuristic(const Problem& p, const Device& device) const override {
    if (Support s = supports(p, device); !s) return unsupported(s.reason);
    const Problem q = p.normalized();
    const plan::KernelFamily* f = cuda_family(q, device);
    if (f && plugged(f->name())) {
      const plan::FamilySpace fs = f->candidates(q, device.profile, 0);
      if (fs.reference) return *fs.reference;
      return unsupported(fmt::format("family {} has no pick of its own", f->name()));
    }
    Config c = f && f->name() == "sm90" ? sm90_heuristic(q, device.profile) : sm80_heuristic(q, device.profile);
    if (c.family.empty()) {
      return unsupported(fmt::format("no {} config fits {} on {}", f ? f->name() : "sm80", p.describe(),
                                     device.profile.name));
    }
    return c;
  }

  Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config, const Device& device) override {
    if (Status s = problem.validate(); !s) return s;
    if (device.kind != "cuda") return unsupported(fmt::format("the cuda backend runs on CUDA devices, not {}", device.kind));
    const Problem p = problem.normalized();
    auto arch = arch_of(device.ordinal);
    if (!arch) return arch.status();
    if (config.family == "sm90") {
      const plan::KernelFamily* f = plan::find_family("sm90");
      if (plan::SupportGap gap = f->supports(p); !gap.empty()) return unsupported(gap.why);
      if (Status s = sm90_space(p, device.profile).check(config); !s) return s;
      auto k = prepare_sm90(p, config, device, *arch);
      if (k) return k;
      // A kernel that does not compile or may not run: the sm80 family runs the problem, and says so.
      const Status why = k.status();
      if (!plan::find_family("sm80")->supports(p).empty()) return why;
      const Config fallback = sm80_heuristic(p, device.profile);
      auto f80 = prepare_sm80(p, fallback, device.ordinal, *arch);
      if (!f80) return why;
      std::fprintf(stderr, "tileforge: warning: %s could not be prepared (%s); running the sm80 family's %s instead\n",
                   config.describe().c_str(), why.message().c_str(), fallback.describe().c_str());
      return std::unique_ptr<Kernel>(std::move(*f80));
    }
    if (config.family != "sm80") {
      // A plugged-in family brings its own code.
      const plan::KernelFamily* f = plan::find_family(config.family);
      if (!f || f->backend() != name()) {
        return invalid_argument(fmt::format("family '{}' is not run by the cuda backend (allowed: {})", config.family,
                                            cuda_family_names()));
      }
      if (plan::SupportGap gap = f->supports(p); !gap.empty()) return unsupported(gap.why);
      return f->prepare(p, config, device);
    }
    if (plan::SupportGap gap = plan::find_family("sm80")->supports(p); !gap.empty()) return unsupported(gap.why);
    if (Status s = sm80_space(p, device.profile).check(config); !s) return s;
    auto k = prepare_sm80(p, config, device.ordinal, *arch);
    if (!k) return k.status();
    return std::unique_ptr<Kernel>(std::move(*k));
  }

  Status run(const Kernel& base, const Problem& problem, const GemmArgs& args) override {
    const auto* k80 = dynamic_cast<const CudaKernel*>(&base);
    const auto* k90 = dynamic_cast<const Sm90Kernel*>(&base);
    const plan::KernelFamily* own = nullptr;
    if (!k80 && !k90) {
      own = plan::find_family(base.config().family);
      if (!own || own->backend() != name() || !plugged(own->name())) {
        return invalid_argument("kernel was not prepared by the cuda backend");
      }
    }
    if (Status s = problem.validate(); !s) return s;
    Problem p = problem.normalized();
    if (p.m == 0 || p.n == 0) return {};
    if (own) {
      if (p.alpha == 0.0) {
        return invalid_argument(fmt::format("the {} kernel does not run alpha = 0 (prepare an sm80 config)", own->name()));
      }
      return own->run(base, p, args);
    }
    // The BLAS convention (docs/NUMERICS.md): with alpha = 0 neither A nor B is read, and C = beta C. The sm80
    // kernel with K = 0 computes exactly that; the sm90 family does not take alpha = 0.
    if (p.alpha == 0.0) {
      if (k90) return invalid_argument("the sm90 kernel does not run alpha = 0 (prepare an sm80 config)");
      p.k = 0;
    }
    auto ctx = activate(k80 ? k80->ordinal() : k90->ordinal());
    if (!ctx) return ctx.status();
    if (p.k > 0) {
      if (Status s = check_device_pointer(args.a, "A"); !s) return s;
      if (Status s = check_device_pointer(args.b, "B"); !s) return s;
    }
    if (Status s = check_device_pointer(args.c, "C"); !s) return s;
    if (k90) return k90->run(p, args);
    return run_sm80(*k80, p, args);
  }
};

std::string utility_source(const std::string& entry) {
  if (entry == "tf_copy_u16") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_copy_u16(const unsigned short* src, long long ld_src, long long stride_src,"
           " unsigned short* dst, long long ld_dst, long long stride_dst, int rows, int cols) {\n"
           "  tf::util::copy_rows_u16(src, ld_src, stride_src, dst, ld_dst, stride_dst, rows, cols);\n}\n";
  }
  if (entry == "tf_scrub_l2") {
    return "#include \"common/utility.cuh\"\n"
           "extern \"C\" __global__ void tf_scrub_l2(unsigned* buf, long long words, unsigned value) {\n"
           "  tf::util::scrub(buf, words, value);\n}\n";
  }
  // tf_reference_check_<in>_<out>_<layout>
  const std::string prefix = "tf_reference_check_";
  if (entry.rfind(prefix, 0) == 0) {
    auto rest = entry.substr(prefix.size());
    auto tag = [](std::string_view t) { return t == "f32" ? 0 : t == "f16" ? 1 : 2; };
    auto u1 = rest.find('_'), u2 = rest.find('_', u1 + 1);
    if (u1 == std::string::npos || u2 == std::string::npos) return {};
    const std::string in = rest.substr(0, u1), out = rest.substr(u1 + 1, u2 - u1 - 1), layout = rest.substr(u2 + 1);
    if (layout.size() != 2) return {};
    return fmt::format(
        "#include \"common/utility.cuh\"\n"
        "extern \"C\" __global__ void __launch_bounds__(256) {entry}(const void* a, const void* b, const void* c_in,"
        " const void* c_out, tf::util::ErrorTotals* totals, int m, int n, int k, long long lda, long long ldb,"
        " long long ldc, long long sa, long long sb, long long sc, double alpha, double beta) {{\n"
        "  tf::util::reference_check<{in}, {out}, {arow}, {brow}>(a, b, c_in, c_out, totals, m, n, k, lda, ldb, ldc,"
        " sa, sb, sc, alpha, beta);\n}}\n",
        fmt::arg("entry", entry), fmt::arg("in", tag(in)), fmt::arg("out", tag(out)),
        fmt::arg("arow", layout[0] == 'R' ? "true" : "false"), fmt::arg("brow", layout[1] == 'R' ? "true" : "false"));
  }
  return {};
}

}  // namespace

Expected<UtilityKernel> utility_kernel(const std::string& entry, int ordinal) {
  const std::string source = utility_source(entry);
  if (source.empty()) return invalid_argument(fmt::format("unknown utility kernel '{}'", entry));
  auto loaded = compile_and_load(entry, source, entry, ordinal);
  if (!loaded) return loaded.status();
  return UtilityKernel{loaded->function};
}

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

Expected<std::string> target_arch(const Device& device) {
  if (device.kind == "cuda") return arch_of(device.ordinal);
  if (device.profile.kind == "gpu" && device.profile.vendor == "nvidia" && !device.profile.arch.empty()) {
    return device.profile.arch;
  }
  return invalid_argument(fmt::format("no NVRTC target for device {} with profile {} (an NVIDIA GPU profile or a "
                                      "CUDA device is needed)",
                                      device.kind, device.profile.name));
}

namespace {

// One source through the kernel cache for `arch`; an instance that spills is refused (it would be slow whatever its
// tiles promise). `warnings`: the compiler's, for the family's own refusals.
Expected<CompiledInstance> compile_cached(const std::string& entry, const std::string& source, const std::string& arch,
                                          jit::KernelCache* cache, std::vector<std::string>* warnings) {
  auto nvrtc = jit::Nvrtc::get();
  if (!nvrtc) return nvrtc.status();
  if (Status s = (*nvrtc)->check_arch(arch); !s) return s;
  auto compiled = (cache ? *cache : jit::KernelCache::shared()).get(request_for(entry, source, arch));
  if (!compiled) return compiled.status();
  CompiledInstance out;
  out.entry = entry;
  out.cache_hit = compiled->cache_hit;
  out.compile_seconds = compiled->compile_seconds;
  out.cache_entry = compiled->entry_path;
  if (warnings) *warnings = compiled->report.warnings;
  if (const jit::FunctionResources* r = compiled->resources(entry)) {
    out.registers = r->registers;
    if (r->spills()) {
      return unsupported(fmt::format("spills ({} bytes stored, {} loaded; {} registers): refused before it runs "
                                     "(choose smaller tiles or fewer stages)",
                                     r->spill_store_bytes, r->spill_load_bytes, r->registers));
    }
  }
  return out;
}

}  // namespace

Expected<jit::LoadedKernel> load_generated(const std::string& entry, const std::string& source, int ordinal,
                                           const Config& config, int threads) {
  auto loaded = compile_and_load(entry, source, entry, ordinal);
  if (!loaded) return loaded.status();
  const jit::FunctionResources& r = loaded->resources;
  if (r.spills()) {
    return unsupported(fmt::format("{} spills ({} bytes stored, {} loaded; {} registers): refused before it runs "
                                   "(choose smaller tiles or fewer stages)",
                                   config.describe(), r.spill_store_bytes, r.spill_load_bytes, r.registers));
  }
  if (std::string why = threads_refusal(*loaded, threads, config); !why.empty()) return unsupported(why);
  return loaded;
}

Expected<CompiledInstance> compile_generated(const std::string& entry, const std::string& source,
                                             const std::string& arch, jit::KernelCache* cache) {
  auto out = compile_cached(entry, source, arch, cache, nullptr);
  if (!out && out.status().code() == Code::unsupported) return unsupported(entry + " " + out.status().message());
  return out;
}

Expected<int> sm_count(int ordinal) {
  auto props = properties_of(ordinal);
  if (!props) return props.status();
  return props->sm_count;
}

Expected<CompiledInstance> compile_instance(const Problem& problem, const Config& config, const std::string& arch,
                                            jit::KernelCache* cache) {
  if (Status s = problem.validate(); !s) return s;
  const Problem p = problem.normalized();
  if (config.family != "sm80" && config.family != "sm90") {
    return invalid_argument(fmt::format("the cuda backend compiles families sm80 and sm90, not '{}'", config.family));
  }
  if (config.family == "sm90" && arch != "sm_90a") {
    return unsupported(fmt::format("the sm90 family compiles for sm_90a only, not {}", arch));
  }
  std::string entry, source;
  if (config.family == "sm90") {
    const Sm90Source gen = sm90_source(p, config);
    entry = gen.entry;
    source = gen.source;
  } else {
    const GeneratedKernel gen = sm80_source(p, config, prepared_vec(config), epilogue_vec(p));
    entry = gen.entry;
    source = gen.source;
  }
  std::vector<std::string> warnings;
  auto out = compile_cached(entry, source, arch, cache, &warnings);
  if (!out) {
    if (out.status().code() == Code::unsupported && out.status().message().find("spills") != std::string::npos) {
      return unsupported(config.describe() + " " + out.status().message());
    }
    return out.status();
  }
  if (config.family == "sm90") {
    if (std::string why = sm90_refusal(config, nullptr, warnings); !why.empty()) {
      return unsupported(why + ": refused before it runs");
    }
  }
  return out;
}

}  // namespace tileforge::cuda
