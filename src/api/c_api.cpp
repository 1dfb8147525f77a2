// The C API: argument checks named after the C parameters, then tileforge::gemm(); no exception crosses it.
#include "tileforge/tileforge.h"

#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "hw/hw_profile.hpp"
#include "tileforge/tileforge.hpp"

// Many threads may call one handle: the settings are read under a shared lock and written under an exclusive one,
// and each calling thread has its own last error (as errno is per thread).
struct tfContext {
  std::shared_mutex settings_mutex;
  tileforge::Options options;  // guarded by settings_mutex

  std::mutex errors_mutex;
  std::map<std::thread::id, std::string> last_errors;  // guarded by errors_mutex; nodes stay put

  tileforge::Options settings() {
    std::shared_lock lock(settings_mutex);
    return options;
  }
  template <typename F>
  void update(F&& f) {
    std::unique_lock lock(settings_mutex);
    f(options);
  }
  std::string& last_error() {
    std::lock_guard lock(errors_mutex);
    return last_errors[std::this_thread::get_id()];
  }
};

// A prepared GEMM (cublasLtMatmul's descriptors and algorithm in one): run from any thread, on any stream.
struct tfGemmPlan {
  tfHandle_t handle = nullptr;
  tileforge::GemmPlan plan;
  std::string description;
};

namespace {

using tileforge::Code;
using tileforge::DType;
using tileforge::Status;

static_assert(int(TF_STATUS_INVALID_ARGUMENT) == int(Code::invalid_argument) &&
              int(TF_STATUS_UNSUPPORTED) == int(Code::unsupported) &&
              int(TF_STATUS_NOT_AVAILABLE) == int(Code::not_available) &&
              int(TF_STATUS_COMPILE_FAILED) == int(Code::compile_failed) &&
              int(TF_STATUS_LAUNCH_FAILED) == int(Code::launch_failed) &&
              int(TF_STATUS_IO_ERROR) == int(Code::io_error) && int(TF_STATUS_INTERNAL) == int(Code::internal),
              "tfStatus_t mirrors tileforge::Code");

tfStatus_t finish(tfHandle_t handle, const Status& status) {
  std::string& last = handle->last_error();
  if (status.ok()) last.clear();
  else last = status.to_string();
  return tfStatus_t(int(status.code()));
}

Status bad(std::string message) { return tileforge::invalid_argument(std::move(message)); }

bool to_dtype(tfDataType t, DType* out) {
  switch (t) {
    case TF_R_32F: *out = DType::f32; return true;
    case TF_R_16F: *out = DType::f16; return true;
    case TF_R_16BF: *out = DType::bf16; return true;
  }
  return false;
}

Status check_ld(const char* fn, const char* name, int64_t ld, int64_t min, const char* what) {
  if (ld < min) {
    return bad(fmt::format("{}: {} = {} is smaller than {} (allowed: {} >= {})", fn, name, ld, what, name, min));
  }
  return {};
}

Status check_stride(const char* fn, const char* name, int64_t stride, int64_t span, int64_t batch) {
  if (batch > 1 && stride < span) {
    return bad(fmt::format("{}: {} = {} is smaller than one matrix ({} elements) (allowed: {} >= {})", fn, name, stride,
                           span, name, span));
  }
  return {};
}

bool layout_ok(tfLayout l) { return l == TF_ROW_MAJOR || l == TF_COL_MAJOR; }

// The call's description checked argument by argument (named as the C parameters) and turned into a Problem.
Status describe_call(const char* fn, tfLayout layoutA, tfLayout layoutB, tfLayout layoutC, int64_t m, int64_t n,
                     int64_t k, const void* alpha, tfDataType Atype, int64_t lda, int64_t strideA, tfDataType Btype,
                     int64_t ldb, int64_t strideB, const void* beta, tfDataType Ctype, int64_t ldc, int64_t strideC,
                     int64_t batch, tfComputeType computeType, tileforge::Problem* out) {
  for (auto [name, l] : {std::pair{"layoutA", layoutA}, std::pair{"layoutB", layoutB}, std::pair{"layoutC", layoutC}}) {
    if (!layout_ok(l)) return bad(fmt::format("{}: {} = {} (allowed: TF_ROW_MAJOR, TF_COL_MAJOR)", fn, name, int(l)));
  }
  DType in{}, in_b{}, out_t{};
  const char* dtypes = "TF_R_32F, TF_R_16F, TF_R_16BF";
  if (!to_dtype(Atype, &in)) return bad(fmt::format("{}: Atype = {} (allowed: {})", fn, int(Atype), dtypes));
  if (!to_dtype(Btype, &in_b)) return bad(fmt::format("{}: Btype = {} (allowed: {})", fn, int(Btype), dtypes));
  if (!to_dtype(Ctype, &out_t)) return bad(fmt::format("{}: Ctype = {} (allowed: {})", fn, int(Ctype), dtypes));
  if (in_b != in) {
    return bad(fmt::format("{}: Btype = {} differs from Atype = {} (allowed: Btype == Atype)", fn, int(Btype), int(Atype)));
  }
  DType accum{};
  if (computeType == TF_COMPUTE_32F) accum = DType::f32;
  else if (computeType == TF_COMPUTE_16F) accum = DType::f16;
  else return bad(fmt::format("{}: computeType = {} (allowed: TF_COMPUTE_32F, TF_COMPUTE_16F)", fn, int(computeType)));
  if (!alpha) return bad(fmt::format("{}: alpha is null (allowed: a pointer to a float)", fn));
  if (!beta) return bad(fmt::format("{}: beta is null (allowed: a pointer to a float)", fn));

  tileforge::Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.precision = {in, out_t, accum};
  const bool a_row = layoutA == TF_ROW_MAJOR, b_row = layoutB == TF_ROW_MAJOR;
  p.layout = a_row ? (b_row ? tileforge::Layout::RR : tileforge::Layout::RC)
                   : (b_row ? tileforge::Layout::CR : tileforge::Layout::CC);
  p.c_order = layoutC == TF_ROW_MAJOR ? tileforge::Order::row_major : tileforge::Order::col_major;
  p.alpha = *static_cast<const float*>(alpha);
  p.beta = *static_cast<const float*>(beta);
  if (batch < 1) return bad(fmt::format("{}: batchCount = {} (allowed: batchCount >= 1)", fn, batch));
  for (auto [name, v] : {std::pair{"m", m}, std::pair{"n", n}, std::pair{"k", k}}) {
    if (v < 0) return bad(fmt::format("{}: {} = {} is negative (allowed: {} >= 0)", fn, name, v, name));
  }
  // As cuBLAS does, leading dimensions are explicit: 0 is not "tight" here.
  if (Status s = check_ld(fn, "lda", lda, p.min_lda(),
                          a_row ? "k, the row length of row-major A" : "m, the column length of column-major A");
      !s)
    return s;
  if (Status s = check_ld(fn, "ldb", ldb, p.min_ldb(),
                          b_row ? "n, the row length of row-major B" : "k, the column length of column-major B");
      !s)
    return s;
  if (Status s = check_ld(fn, "ldc", ldc, p.min_ldc(),
                          layoutC == TF_ROW_MAJOR ? "n, the row length of row-major C"
                                                  : "m, the column length of column-major C");
      !s)
    return s;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = ldc;
  if (Status s = check_stride(fn, "strideA", strideA, p.span_a(), batch); !s) return s;
  if (Status s = check_stride(fn, "strideB", strideB, p.span_b(), batch); !s) return s;
  if (Status s = check_stride(fn, "strideC", strideC, p.span_c(), batch); !s) return s;
  if (batch > 1) {
    p.stride_a = strideA;
    p.stride_b = strideB;
    p.stride_c = strideC;
  }
  if (Status s = p.validate(); !s) return bad(fmt::format("{}: {}", fn, s.message()));
  *out = p;
  return {};
}

// A and B are read only when there is a product to form; C only when it has elements.
Status check_operands(const char* fn, const tileforge::Problem& p, const void* A, const void* B, const void* C) {
  const bool product = p.m > 0 && p.n > 0 && p.k > 0;
  auto null_arg = [&](const char* name, const char* when) {
    return bad(fmt::format("{}: {} is null with m = {}, n = {}, k = {} (allowed: non-null when {})", fn, name, p.m, p.n,
                           p.k, when));
  };
  if (!A && product) return null_arg("A", "m, n, k > 0");
  if (!B && product) return null_arg("B", "m, n, k > 0");
  if (!C && p.m > 0 && p.n > 0) return null_arg("C", "m, n > 0");
  return {};
}

// The library's invalid_argument messages, prefixed with the C function that was called.
Status named(const char* fn, Status s) {
  if (!s && s.code() == Code::invalid_argument) return bad(fmt::format("{}: {}", fn, s.message()));
  return s;
}

// Every entry point's body: exceptions become statuses, never cross into C.
template <typename F>
tfStatus_t guarded(tfHandle_t handle, F&& body) {
  try {
    return finish(handle, body());
  } catch (const std::bad_alloc&) {
    return finish(handle, Status(Code::internal, "out of memory"));
  } catch (...) {
    return finish(handle, Status(Code::internal, "unexpected exception"));
  }
}

tfStatus_t gemm_impl(const char* fn, tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, tfLayout layoutC,
                     int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, tfDataType Atype, int64_t lda,
                     int64_t strideA, const void* B, tfDataType Btype, int64_t ldb, int64_t strideB, const void* beta,
                     void* C, tfDataType Ctype, int64_t ldc, int64_t strideC, int64_t batch,
                     tfComputeType computeType) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  return guarded(handle, [&]() -> Status {
    tileforge::Problem p;
    if (Status s = describe_call(fn, layoutA, layoutB, layoutC, m, n, k, alpha, Atype, lda, strideA, Btype, ldb,
                                 strideB, beta, Ctype, ldc, strideC, batch, computeType, &p);
        !s)
      return s;
    if (Status s = check_operands(fn, p, A, B, C); !s) return s;
    return named(fn, tileforge::gemm(p, A, B, C, handle->settings()));
  });
}

// "cpu", "auto", "cuda" or "cuda:N" (N a small non-negative integer): the forms open_device takes.
bool device_spec_ok(std::string_view spec) {
  if (spec == "cpu" || spec == "auto" || spec == "cuda") return true;
  if (!spec.starts_with("cuda:") || spec.size() == 5 || spec.size() > 9) return false;
  for (char ch : spec.substr(5))
    if (ch < '0' || ch > '9') return false;
  return true;
}

}  // namespace

extern "C" {

tfStatus_t tfCreate(tfHandle_t* handle) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  *handle = nullptr;
  tfContext* ctx = new (std::nothrow) tfContext();
  if (!ctx) return TF_STATUS_INTERNAL;
  ctx->options.device = "auto";  // the device that holds A: a GPU for device pointers, else the CPU
  *handle = ctx;
  return TF_STATUS_SUCCESS;
}

tfStatus_t tfDestroy(tfHandle_t handle) {
  delete handle;  // deleting null is a no-op, as cublasDestroy(NULL) is harmless
  return TF_STATUS_SUCCESS;
}

tfStatus_t tfSetThreads(tfHandle_t handle, int threads) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  // Refused here, where the caller set it, rather than at the next tfGemmEx (as tileforge::gemm's options.threads).
  const int most = int(tileforge::hw::bounds::threads.max);
  if (threads < 0 || threads > most) {
    return finish(handle, bad(fmt::format("tfSetThreads: threads = {} (allowed: 0 for all cores, or 1 to {})", threads,
                                          most)));
  }
  handle->update([&](tileforge::Options& o) { o.threads = threads; });
  return finish(handle, {});
}

tfStatus_t tfSetDevice(tfHandle_t handle, const char* device) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  if (!device || !device_spec_ok(device)) {
    return finish(handle, bad(fmt::format("tfSetDevice: device = {} (allowed: \"auto\", \"cpu\", \"cuda\", \"cuda:N\")",
                                          device ? fmt::format("\"{}\"", device) : std::string("NULL"))));
  }
  handle->update([&](tileforge::Options& o) { o.device = device; });
  return finish(handle, {});
}

tfStatus_t tfSetStream(tfHandle_t handle, void* stream) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  handle->update([&](tileforge::Options& o) { o.stream = stream; });
  return finish(handle, {});
}

tfStatus_t tfGetStream(tfHandle_t handle, void** stream) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  if (!stream) return finish(handle, bad("tfGetStream: stream is null (allowed: a pointer to a void*)"));
  *stream = handle->settings().stream;
  return finish(handle, {});
}

tfStatus_t tfSetWorkspace(tfHandle_t handle, void* workspace, size_t workspaceBytes) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  if (!workspace && workspaceBytes != 0) {
    return finish(handle, bad(fmt::format("tfSetWorkspace: workspace is null with workspaceBytes = {} (allowed: a "
                                          "device pointer, or NULL with 0 for the library's own)",
                                          workspaceBytes)));
  }
  handle->update([&](tileforge::Options& o) {
    o.workspace = workspace;
    o.workspace_bytes = workspaceBytes;
  });
  return finish(handle, {});
}

tfStatus_t tfSetDatabase(tfHandle_t handle, const char* path) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  handle->update([&](tileforge::Options& o) { o.db = path ? path : ""; });
  return finish(handle, {});
}

tfStatus_t tfUseDatabase(tfHandle_t handle, int use) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  handle->update([&](tileforge::Options& o) { o.no_db = use == 0; });
  return finish(handle, {});
}

tfStatus_t tfSetDeterministic(tfHandle_t handle, int deterministic) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  handle->update([&](tileforge::Options& o) { o.deterministic = deterministic != 0; });
  return finish(handle, {});
}

tfStatus_t tfSetProfile(tfHandle_t handle, const char* profile) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  handle->update([&](tileforge::Options& o) { o.profile = profile ? profile : ""; });
  return finish(handle, {});
}

tfStatus_t tfSetParam(tfHandle_t handle, const char* name, int64_t value) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  if (!name || !*name) {
    return finish(handle, bad("tfSetParam: name is null or empty (allowed: a parameter name such as \"BLOCK_M\")"));
  }
  // The name and value are checked against the family's space at the next call, which names the legal values.
  handle->update([&](tileforge::Options& o) {
    for (auto& [pinned, v] : o.set) {
      if (pinned == name) {
        v = value;
        return;
      }
    }
    o.set.emplace_back(name, value);
  });
  return finish(handle, {});
}

tfStatus_t tfClearParams(tfHandle_t handle) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  handle->update([&](tileforge::Options& o) { o.set.clear(); });
  return finish(handle, {});
}

tfStatus_t tfGemmEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, tfLayout layoutC, int64_t m, int64_t n,
                    int64_t k, const void* alpha, const void* A, tfDataType Atype, int64_t lda, const void* B,
                    tfDataType Btype, int64_t ldb, const void* beta, void* C, tfDataType Ctype, int64_t ldc,
                    tfComputeType computeType) {
  return gemm_impl("tfGemmEx", handle, layoutA, layoutB, layoutC, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0,
                   beta, C, Ctype, ldc, 0, 1, computeType);
}

tfStatus_t tfGemmStridedBatchedEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, tfLayout layoutC, int64_t m,
                                  int64_t n, int64_t k, const void* alpha, const void* A, tfDataType Atype,
                                  int64_t lda, int64_t strideA, const void* B, tfDataType Btype, int64_t ldb,
                                  int64_t strideB, const void* beta, void* C, tfDataType Ctype, int64_t ldc,
                                  int64_t strideC, int64_t batchCount, tfComputeType computeType) {
  return gemm_impl("tfGemmStridedBatchedEx", handle, layoutA, layoutB, layoutC, m, n, k, alpha, A, Atype, lda, strideA,
                   B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType);
}

tfStatus_t tfGemmPlanCreate(tfHandle_t handle, tfGemmPlan_t* plan, tfLayout layoutA, tfLayout layoutB,
                            tfLayout layoutC, int64_t m, int64_t n, int64_t k, const void* alpha, tfDataType Atype,
                            int64_t lda, int64_t strideA, tfDataType Btype, int64_t ldb, int64_t strideB,
                            const void* beta, tfDataType Ctype, int64_t ldc, int64_t strideC, int64_t batchCount,
                            tfComputeType computeType) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  return guarded(handle, [&]() -> Status {
    const char* fn = "tfGemmPlanCreate";
    if (!plan) return bad(fmt::format("{}: plan is null (allowed: a pointer to a tfGemmPlan_t)", fn));
    *plan = nullptr;
    tileforge::Problem p;
    if (Status s = describe_call(fn, layoutA, layoutB, layoutC, m, n, k, alpha, Atype, lda, strideA, Btype, ldb,
                                 strideB, beta, Ctype, ldc, strideC, batchCount, computeType, &p);
        !s)
      return s;
    auto made = std::make_unique<tfGemmPlan>();
    made->handle = handle;
    made->plan = tileforge::prepare(p, handle->settings());
    if (!made->plan) return named(fn, made->plan.status());
    made->description = fmt::format("{} on {} ({}: {})", made->plan.config().describe(), made->plan.device(),
                                    made->plan.source(), made->plan.reason());
    *plan = made.release();
    return {};
  });
}

tfStatus_t tfGemmPlanRun(tfGemmPlan_t plan, const void* A, const void* B, void* C, void* stream, void* workspace,
                         size_t workspaceBytes) {
  if (!plan) return TF_STATUS_INVALID_ARGUMENT;
  return guarded(plan->handle, [&]() -> Status {
    const char* fn = "tfGemmPlanRun";
    if (Status s = check_operands(fn, plan->plan.problem(), A, B, C); !s) return s;
    return named(fn, plan->plan.run(A, B, C, stream, workspace, workspaceBytes));
  });
}

tfStatus_t tfGemmPlanGetWorkspaceSize(tfGemmPlan_t plan, size_t* workspaceBytes) {
  if (!plan) return TF_STATUS_INVALID_ARGUMENT;
  if (!workspaceBytes) {
    return finish(plan->handle, bad("tfGemmPlanGetWorkspaceSize: workspaceBytes is null (allowed: a pointer to a size_t)"));
  }
  *workspaceBytes = plan->plan.workspace_bytes();
  return finish(plan->handle, {});
}

const char* tfGemmPlanDescribe(tfGemmPlan_t plan) {
  if (!plan) return "tfGemmPlanDescribe: plan is null";
  return plan->description.c_str();
}

tfStatus_t tfGemmPlanDestroy(tfGemmPlan_t plan) {
  delete plan;
  return TF_STATUS_SUCCESS;
}

const char* tfGetStatusString(tfStatus_t status) {
  switch (status) {
    case TF_STATUS_SUCCESS: return "TF_STATUS_SUCCESS";
    case TF_STATUS_INVALID_ARGUMENT: return "TF_STATUS_INVALID_ARGUMENT";
    case TF_STATUS_UNSUPPORTED: return "TF_STATUS_UNSUPPORTED";
    case TF_STATUS_NOT_AVAILABLE: return "TF_STATUS_NOT_AVAILABLE";
    case TF_STATUS_COMPILE_FAILED: return "TF_STATUS_COMPILE_FAILED";
    case TF_STATUS_LAUNCH_FAILED: return "TF_STATUS_LAUNCH_FAILED";
    case TF_STATUS_IO_ERROR: return "TF_STATUS_IO_ERROR";
    case TF_STATUS_INTERNAL: return "TF_STATUS_INTERNAL";
  }
  return "TF_STATUS_UNKNOWN";
}

const char* tfGetLastErrorMessage(tfHandle_t handle) {
  if (!handle) return "tfGetLastErrorMessage: handle is null";
  return handle->last_error().c_str();
}

const char* tfGetVersion(void) {
  static const std::string v(tileforge::version());
  return v.c_str();
}

}  // extern "C"
