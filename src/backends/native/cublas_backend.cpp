// NVIDIA's libraries as backends: `cublas` (cublasGemmEx's default heuristic, the call a CUDA user makes) and
// `cublaslt` (the fastest of cuBLASLt's top heuristic algorithms, each timed on the caller's operands). Both are
// opened at run time, so one binary runs on machines without them. A kernel's first call is run with CUPTI's kernel
// records on (cupti_kernels.hpp), so that implementation() names the kernels the library launched.
#include <cublasLt.h>
#include <cublas_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <functional>
#include <mutex>

#include <fmt/format.h>

#include "backends/native/cupti_kernels.hpp"
#include "backends/native/native_backends.hpp"
#include "core/half.hpp"
#include "hw/cuda_driver.hpp"

namespace tileforge {
namespace {

// Entry points of libcublas and libcublasLt, resolved by name (the _v2 symbols are the current ABI).
struct CublasApi {
  std::string cublas_path, lt_path;
  int version = 0;
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasGetVersion_v2) get_version = nullptr;
  // Spelled out: the C++ headers overload cublasGemmStridedBatchedEx, so decltype cannot name one of them.
  cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long int, const void*,
                                         cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                         long long int, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
  decltype(&::cublasLtCreate) lt_create = nullptr;
  decltype(&::cublasLtMatmulDescCreate) lt_desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) lt_desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) lt_desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) lt_layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) lt_layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) lt_layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) lt_pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) lt_pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) lt_pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) lt_heuristic = nullptr;
  decltype(&::cublasLtMatmul) lt_matmul = nullptr;
};

void* open_first(std::initializer_list<const char*> names, std::string& opened) {
  for (const char* n : names) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) {
      opened = n;
      return h;
    }
  }
  return nullptr;
}

const Expected<CublasApi>& cublas_api() {
  static const Expected<CublasApi> api = []() -> Expected<CublasApi> {
    CublasApi a;
    void* lt = open_first({"libcublasLt.so.13", "libcublasLt.so.12"}, a.lt_path);
    void* h = open_first({"libcublas.so.13", "libcublas.so.12"}, a.cublas_path);
    if (!h || !lt) return not_available(fmt::format("cuBLAS not found (libcublas.so.13/12, libcublasLt.so.13/12): {}", dlerror()));
    bool missing = false;
    std::string which;
    auto sym = [&](void* lib, auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) {
        missing = true;
        which += std::string(" ") + name;
      }
    };
    sym(h, a.create, "cublasCreate_v2");
    sym(h, a.set_stream, "cublasSetStream_v2");
    sym(h, a.get_version, "cublasGetVersion_v2");
    sym(h, a.gemm_strided_batched, "cublasGemmStridedBatchedEx");
    sym(h, a.status_string, "cublasGetStatusString");
    sym(lt, a.lt_create, "cublasLtCreate");
    sym(lt, a.lt_desc_create, "cublasLtMatmulDescCreate");
    sym(lt, a.lt_desc_destroy, "cublasLtMatmulDescDestroy");
    sym(lt, a.lt_desc_set, "cublasLtMatmulDescSetAttribute");
    sym(lt, a.lt_layout_create, "cublasLtMatrixLayoutCreate");
    sym(lt, a.lt_layout_destroy, "cublasLtMatrixLayoutDestroy");
    sym(lt, a.lt_layout_set, "cublasLtMatrixLayoutSetAttribute");
    sym(lt, a.lt_pref_create, "cublasLtMatmulPreferenceCreate");
    sym(lt, a.lt_pref_destroy, "cublasLtMatmulPreferenceDestroy");
    sym(lt, a.lt_pref_set, "cublasLtMatmulPreferenceSetAttribute");
    sym(lt, a.lt_heuristic, "cublasLtMatmulAlgoGetHeuristic");
    sym(lt, a.lt_matmul, "cublasLtMatmul");
    if (missing) return not_available(fmt::format("cuBLAS is missing entry points:{}", which));
    return a;
  }();
  return api;
}

Status cublas_check(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  const auto& api = cublas_api();
  const char* text = api.ok() ? api->status_string(s) : "unknown";
  return {Code::launch_failed, fmt::format("{}: cuBLAS status {} ({})", what, int(s), text)};
}

cudaDataType data_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

// cuBLAS is column-major and C is row-major here: C^T (N x M) = op(B)^T op(A)^T, so B is cuBLAS's first operand.
// A row-major B (K x N) read column-major is B^T, which is what the first operand must be: no transpose.
cublasOperation_t op_first(const Problem& p) { return b_row_major(p.layout) ? CUBLAS_OP_N : CUBLAS_OP_T; }
cublasOperation_t op_second(const Problem& p) { return a_row_major(p.layout) ? CUBLAS_OP_N : CUBLAS_OP_T; }

Support common_support(const Problem& p, const Device& device) {
  if (device.kind != "cuda") return Support::no("cuBLAS runs on CUDA devices only");
  if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX || p.lda > INT_MAX || p.ldb > INT_MAX || p.ldc > INT_MAX ||
      p.batch > INT_MAX) {
    return Support::no("sizes and leading dimensions must fit a 32-bit int for cublasGemmEx");
  }
  if (p.precision.accum == DType::f16 && (p.precision.input != DType::f16 || p.precision.output != DType::f16)) {
    return Support::no("cuBLAS accumulates in f16 only with f16 inputs and output");
  }
  // The BLAS convention leaves A and B unread when alpha is 0 (docs/NUMERICS.md); measured on an H200 with cuBLAS
  // 13.1, cuBLASLt and some cublasGemmEx paths read them anyway (NaN operands made C NaN), so such calls are not
  // compared: a wrapper that scaled C itself would no longer be the vendor's call.
  if (p.alpha == 0.0 && p.k > 0 && p.m > 0 && p.n > 0) {
    return Support::no("cuBLAS and cuBLASLt read A and B when alpha = 0 (NaN operands propagate), against the BLAS "
                       "convention: not compared");
  }
  return Support::yes();
}

class VendorKernel final : public Kernel {
 public:
  using Kernel::Kernel;
  // cuBLASLt: descriptors and the chosen algorithm, made on the first run (the choice times the candidates).
  mutable std::mutex mutex;
  mutable bool chosen = false;
  mutable cublasLtMatmulAlgo_t algo{};
  mutable std::string algo_note;
  mutable cublasLtMatmulDesc_t desc = nullptr;
  mutable cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  mutable cuda::DeviceBuffer workspace, scratch;
  // The kernels the first call launched, as CUPTI named them ("nvjet_hsh_... (tile 256x128, ...)"), or why not.
  mutable std::atomic<bool> captured{false};
  mutable std::string kernels, capture_note;
  std::string implementation() const override {
    std::lock_guard lock(mutex);
    std::string lt = chosen ? "cuBLASLt " + algo_note : std::string();
    if (kernels.empty()) return lt;
    return lt.empty() ? kernels : kernels + "; " + lt;
  }
  std::string implementation_note() const override {
    std::lock_guard lock(mutex);
    return capture_note;
  }
  ~VendorKernel() override {
    const auto& api = cublas_api();
    if (!api.ok()) return;
    if (desc) api->lt_desc_destroy(desc);
    for (auto* l : {la, lb, lc})
      if (l) api->lt_layout_destroy(l);
  }
};

// Runs a kernel's first call with its kernels captured (only that call: CUPTI is off again before it returns, so
// timed calls run untraced) and keeps their names, or why there are none; `library` is an address in the library
// that launches them, for finding CUPTI beside it. Called with k.mutex held.
Status first_call(const VendorKernel& k, void* stream, const void* library, const std::function<Status()>& launch) {
  auto captured = native_detail::capture_kernel_names(launch, stream, library);
  k.captured = true;
  if (captured.names) {
    k.kernels = native_detail::describe_kernels(*captured.names);
  } else if (captured.launched && !native_detail::kernel_capture_disabled()) {
    k.capture_note = "kernel name not captured: " + captured.names.status().message();
  }
  return captured.launched;
}

class CublasBase : public Backend {
 public:
  bool native() const override { return true; }
  std::string_view device_kind() const override { return "cuda"; }
  Support available() const override {
    auto d = cuda::driver();
    if (!d) return Support::no(d.status().message());
    const auto& api = cublas_api();
    if (!api.ok()) return Support::no(api.status().message());
    return Support::yes();
  }
  Support supports(const Problem& p, const Device& device) const override { return common_support(p, device); }
  ParamSpace space(const Problem&, const Device&) const override { return ParamSpace{std::string(name()), {}, {}}; }
  Expected<Config> heuristic(const Problem& p, const Device& device) const override {
    if (Support s = supports(p, device); !s) return unsupported(s.reason);
    return Config{std::string(name()), {}};
  }
  Expected<std::unique_ptr<Kernel>> prepare(const Problem& p, const Config& config, const Device& device) override {
    if (Status s = p.validate(); !s) return s;
    if (Support s = available(); !s) return not_available(s.reason);
    if (Support s = supports(p, device); !s) return unsupported(s.reason);
    ordinal_ = device.ordinal;
    return std::unique_ptr<Kernel>(std::make_unique<VendorKernel>(Config{std::string(name()), {}}));
  }

 protected:
  Status ensure_handles() {
    std::lock_guard<std::mutex> lock(mutex_);
    auto ctx = cuda::activate(ordinal_);
    if (!ctx) return ctx.status();
    const auto& api = *cublas_api();
    if (!handle_) {
      if (Status s = cublas_check(api.create(&handle_), "cublasCreate"); !s) return s;
    }
    if (!lt_) {
      if (Status s = cublas_check(api.lt_create(&lt_), "cublasLtCreate"); !s) return s;
    }
    return {};
  }
  int ordinal_ = 0;
  std::mutex mutex_;
  cublasHandle_t handle_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
};

class CublasBackend final : public CublasBase {
 public:
  std::string_view name() const override { return "cublas"; }
  Status run(const Kernel& base, const Problem& problem, const GemmArgs& args) override {
    const auto* k = dynamic_cast<const VendorKernel*>(&base);  // any kernel runs; only ours records its first call
    if (Status s = problem.validate(); !s) return s;
    const Problem p = problem.normalized();
    if (p.m == 0 || p.n == 0) return {};
    if (Status s = ensure_handles(); !s) return s;
    const auto& api = *cublas_api();
    if (Status s = cublas_check(api.set_stream(handle_, static_cast<cudaStream_t>(args.stream)), "cublasSetStream"); !s) return s;
    const bool f16_acc = p.precision.accum == DType::f16;
    const float alpha32 = float(p.alpha), beta32 = float(p.beta);
    const uint16_t alpha16 = float_to_f16(alpha32), beta16 = float_to_f16(beta32);
    const void* alpha = f16_acc ? static_cast<const void*>(&alpha16) : &alpha32;
    const void* beta = f16_acc ? static_cast<const void*>(&beta16) : &beta32;
    const cublasComputeType_t compute = f16_acc ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F;
    auto gemm = [&] {
      return cublas_check(api.gemm_strided_batched(handle_, op_first(p), op_second(p), int(p.n), int(p.m), int(p.k),
                                                   alpha, args.b, data_type(p.precision.input), int(p.ldb), p.stride_b,
                                                   args.a, data_type(p.precision.input), int(p.lda), p.stride_a, beta,
                                                   args.c, data_type(p.precision.output), int(p.ldc), p.stride_c,
                                                   int(p.batch), compute, CUBLAS_GEMM_DEFAULT),
                          "cublasGemmStridedBatchedEx");
    };
    if (k && !k->captured) {
      std::lock_guard lock(k->mutex);
      if (!k->captured) {
        return first_call(*k, args.stream, reinterpret_cast<const void*>(api.gemm_strided_batched), gemm);
      }
    }
    return gemm();
  }
};


// cuBLASLt with its own search: the top heuristic algorithms are each timed on the caller's operands (writing a
// scratch D, so C is never touched twice) and the fastest is kept for the kernel's life.
class CublasLtBackend final : public CublasBase {
 public:
  std::string_view name() const override { return "cublaslt"; }

  Status run(const Kernel& base, const Problem& problem, const GemmArgs& args) override {
    const auto* k = dynamic_cast<const VendorKernel*>(&base);
    if (!k) return invalid_argument("kernel was not prepared by the cublaslt backend");
    if (Status s = problem.validate(); !s) return s;
    const Problem p = problem.normalized();
    if (p.m == 0 || p.n == 0) return {};
    if (Status s = ensure_handles(); !s) return s;
    std::lock_guard<std::mutex> lock(k->mutex);
    if (!k->chosen) {
      if (Status s = choose(*k, p, args); !s) return s;
    }
    // After the choice, so that only the chosen algorithm's call is captured, not the candidates' timing runs.
    if (!k->captured) {
      return first_call(*k, args.stream, reinterpret_cast<const void*>(cublas_api()->lt_matmul),
                        [&] { return matmul(*k, p, args, &k->algo, args.c); });
    }
    return matmul(*k, p, args, &k->algo, args.c);
  }

 private:
  static constexpr int kCandidates = 8;
  static constexpr std::size_t kWorkspaceBytes = 32u << 20;

  Status describe(const VendorKernel& k, const Problem& p) {
    const auto& api = *cublas_api();
    const bool f16_acc = p.precision.accum == DType::f16;
    if (Status s = cublas_check(api.lt_desc_create(&k.desc, f16_acc ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F,
                                                   f16_acc ? CUDA_R_16F : CUDA_R_32F),
                                "cublasLtMatmulDescCreate");
        !s)
      return s;
    const cublasOperation_t ta = op_first(p), tb = op_second(p);
    api.lt_desc_set(k.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    api.lt_desc_set(k.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    // Column-major views: first operand B (N x K, or K x N when transposed), second A, output C^T (N x M).
    auto layout = [&](cublasLtMatrixLayout_t* l, DType t, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
      Status s = cublas_check(api.lt_layout_create(l, data_type(t), uint64_t(rows), uint64_t(cols), ld),
                              "cublasLtMatrixLayoutCreate");
      if (s && p.batch > 1) {
        const int32_t count = int32_t(p.batch);
        api.lt_layout_set(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
        api.lt_layout_set(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
      }
      return s;
    };
    const bool b_n = ta == CUBLAS_OP_N, a_n = tb == CUBLAS_OP_N;
    if (Status s = layout(&k.lb, p.precision.input, b_n ? p.n : p.k, b_n ? p.k : p.n, p.ldb, p.stride_b); !s) return s;
    if (Status s = layout(&k.la, p.precision.input, a_n ? p.k : p.m, a_n ? p.m : p.k, p.lda, p.stride_a); !s) return s;
    return layout(&k.lc, p.precision.output, p.n, p.m, p.ldc, p.stride_c);
  }

  Status matmul(const VendorKernel& k, const Problem& p, const GemmArgs& args, const cublasLtMatmulAlgo_t* algo,
                void* d) {
    const auto& api = *cublas_api();
    const bool f16_acc = p.precision.accum == DType::f16;
    const float alpha32 = float(p.alpha), beta32 = float(p.beta);
    const uint16_t alpha16 = float_to_f16(alpha32), beta16 = float_to_f16(beta32);
    const void* alpha = f16_acc ? static_cast<const void*>(&alpha16) : &alpha32;
    const void* beta = f16_acc ? static_cast<const void*>(&beta16) : &beta32;
    return cublas_check(api.lt_matmul(lt_, k.desc, alpha, args.b, k.lb, args.a, k.la, beta, args.c, k.lc, d, k.lc, algo,
                                      k.workspace.data(), k.workspace.size(), static_cast<cudaStream_t>(args.stream)),
                        "cublasLtMatmul");
  }

  Status choose(const VendorKernel& k, const Problem& p, const GemmArgs& args) {
    const auto& api = *cublas_api();
    if (Status s = describe(k, p); !s) return s;
    auto ws = cuda::DeviceBuffer::allocate(kWorkspaceBytes);
    if (!ws) return ws.status();
    k.workspace = std::move(*ws);
    cublasLtMatmulPreference_t pref = nullptr;
    if (Status s = cublas_check(api.lt_pref_create(&pref), "cublasLtMatmulPreferenceCreate"); !s) return s;
    const uint64_t ws_bytes = kWorkspaceBytes;
    api.lt_pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes));
    cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
    int returned = 0;
    Status hs = cublas_check(api.lt_heuristic(lt_, k.desc, k.lb, k.la, k.lc, k.lc, pref, kCandidates, results, &returned),
                             "cublasLtMatmulAlgoGetHeuristic");
    api.lt_pref_destroy(pref);
    if (!hs) return hs;
    if (returned == 0) return unsupported("cuBLASLt offers no algorithm for " + p.describe());

    // Time each candidate on a scratch D (C is read as the beta input only), 2 warm-up + 5 timed runs each.
    auto scratch = cuda::DeviceBuffer::allocate(std::size_t(p.stride_c * p.batch) * size_of(p.precision.output));
    if (!scratch) return scratch.status();
    auto start = cuda::Event::create(), stop = cuda::Event::create();
    if (!start || !stop) return start ? stop.status() : start.status();
    const CUstream stream = static_cast<CUstream>(args.stream);
    float best_ms = 0;
    int best = -1;
    for (int i = 0; i < returned; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      bool ok = true;
      for (int w = 0; w < 2 && ok; ++w) ok = matmul(k, p, args, &results[i].algo, scratch->data()).ok();
      if (!ok) continue;
      if (!start->record(stream)) continue;
      for (int r = 0; r < 5 && ok; ++r) ok = matmul(k, p, args, &results[i].algo, scratch->data()).ok();
      if (!ok || !stop->record(stream) || !stop->synchronize()) continue;
      auto ms = cuda::Event::elapsed_ms(*start, *stop);
      if (ms && (best < 0 || *ms < best_ms)) {
        best_ms = *ms;
        best = i;
      }
    }
    if (best < 0) return {Code::launch_failed, "none of cuBLASLt's algorithms ran for " + p.describe()};
    k.algo = results[best].algo;
    k.algo_note = fmt::format("heuristic #{} of {}", best, returned);
    k.chosen = true;
    return {};
  }
};
}  // namespace

std::unique_ptr<Backend> make_cublas_backend() { return std::make_unique<CublasBackend>(); }
std::unique_ptr<Backend> make_cublaslt_backend() { return std::make_unique<CublasLtBackend>(); }

std::string cublas_library_description() {
  const auto& api = cublas_api();
  if (!api.ok()) return api.status().message();
  return fmt::format("{} / {}", api->cublas_path, api->lt_path);
}

}  // namespace tileforge
