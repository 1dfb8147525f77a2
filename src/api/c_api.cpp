// The C API: argument checks named after the C parameters, then tileforge::gemm(); no exception crosses it.
#include "tileforge/tileforge.h"

#include <new>
#include <string>

#include <fmt/format.h>

#include "hw/hw_profile.hpp"
#include "tileforge/tileforge.hpp"

struct tfContext {
  tileforge::Options options;
  std::string last_error;
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
  handle->last_error = status.ok() ? std::string() : status.to_string();
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

tfStatus_t gemm_impl(const char* fn, tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, int64_t m, int64_t n,
                     int64_t k, const void* alpha, const void* A, tfDataType Atype, int64_t lda, int64_t strideA,
                     const void* B, tfDataType Btype, int64_t ldb, int64_t strideB, const void* beta, void* C,
                     tfDataType Ctype, int64_t ldc, int64_t strideC, int64_t batch, tfComputeType computeType) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  try {
    auto layout_ok = [](tfLayout l) { return l == TF_ROW_MAJOR || l == TF_COL_MAJOR; };
    if (!layout_ok(layoutA)) {
      return finish(handle, bad(fmt::format("{}: layoutA = {} (allowed: TF_ROW_MAJOR, TF_COL_MAJOR)", fn, int(layoutA))));
    }
    if (!layout_ok(layoutB)) {
      return finish(handle, bad(fmt::format("{}: layoutB = {} (allowed: TF_ROW_MAJOR, TF_COL_MAJOR)", fn, int(layoutB))));
    }
    DType in{}, in_b{}, out{};
    const char* dtypes = "TF_R_32F, TF_R_16F, TF_R_16BF";
    if (!to_dtype(Atype, &in)) return finish(handle, bad(fmt::format("{}: Atype = {} (allowed: {})", fn, int(Atype), dtypes)));
    if (!to_dtype(Btype, &in_b)) return finish(handle, bad(fmt::format("{}: Btype = {} (allowed: {})", fn, int(Btype), dtypes)));
    if (!to_dtype(Ctype, &out)) return finish(handle, bad(fmt::format("{}: Ctype = {} (allowed: {})", fn, int(Ctype), dtypes)));
    if (in_b != in) {
      return finish(handle, bad(fmt::format("{}: Btype = {} differs from Atype = {} (allowed: Btype == Atype)", fn,
                                            int(Btype), int(Atype))));
    }
    DType accum{};
    if (computeType == TF_COMPUTE_32F) accum = DType::f32;
    else if (computeType == TF_COMPUTE_16F) accum = DType::f16;
    else {
      return finish(handle, bad(fmt::format("{}: computeType = {} (allowed: TF_COMPUTE_32F, TF_COMPUTE_16F)", fn,
                                            int(computeType))));
    }
    if (!alpha) return finish(handle, bad(fmt::format("{}: alpha is null (allowed: a pointer to a float)", fn)));
    if (!beta) return finish(handle, bad(fmt::format("{}: beta is null (allowed: a pointer to a float)", fn)));

    tileforge::Problem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.batch = batch;
    p.precision = {in, out, accum};
    const bool a_row = layoutA == TF_ROW_MAJOR, b_row = layoutB == TF_ROW_MAJOR;
    p.layout = a_row ? (b_row ? tileforge::Layout::RR : tileforge::Layout::RC)
                     : (b_row ? tileforge::Layout::CR : tileforge::Layout::CC);
    p.alpha = *static_cast<const float*>(alpha);
    p.beta = *static_cast<const float*>(beta);
    if (batch < 1) return finish(handle, bad(fmt::format("{}: batchCount = {} (allowed: batchCount >= 1)", fn, batch)));
    for (auto [name, v] : {std::pair{"m", m}, std::pair{"n", n}, std::pair{"k", k}}) {
      if (v < 0) return finish(handle, bad(fmt::format("{}: {} = {} is negative (allowed: {} >= 0)", fn, name, v, name)));
    }
    // As cuBLAS does, leading dimensions are explicit: 0 is not "tight" here.
    if (Status s = check_ld(fn, "lda", lda, p.min_lda(), a_row ? "k, the row length of row-major A"
                                                                 : "m, the column length of column-major A");
        !s)
      return finish(handle, s);
    if (Status s = check_ld(fn, "ldb", ldb, p.min_ldb(), b_row ? "n, the row length of row-major B"
                                                                 : "k, the column length of column-major B");
        !s)
      return finish(handle, s);
    if (Status s = check_ld(fn, "ldc", ldc, p.min_ldc(), "n, the row length of C"); !s) return finish(handle, s);
    p.lda = lda;
    p.ldb = ldb;
    p.ldc = ldc;
    if (Status s = check_stride(fn, "strideA", strideA, p.span_a(), batch); !s) return finish(handle, s);
    if (Status s = check_stride(fn, "strideB", strideB, p.span_b(), batch); !s) return finish(handle, s);
    if (Status s = check_stride(fn, "strideC", strideC, p.span_c(), batch); !s) return finish(handle, s);
    if (batch > 1) {
      p.stride_a = strideA;
      p.stride_b = strideB;
      p.stride_c = strideC;
    }
    // A and B are read only when there is a product to form; C only when it has elements.
    const bool product = m > 0 && n > 0 && k > 0;
    auto null_arg = [&](const char* name, const char* when) {
      return finish(handle, bad(fmt::format("{}: {} is null with m = {}, n = {}, k = {} (allowed: non-null when {})", fn,
                                            name, m, n, k, when)));
    };
    if (!A && product) return null_arg("A", "m, n, k > 0");
    if (!B && product) return null_arg("B", "m, n, k > 0");
    if (!C && m > 0 && n > 0) return null_arg("C", "m, n > 0");
    Status s = tileforge::gemm(p, A, B, C, handle->options);
    if (!s && s.code() == Code::invalid_argument) s = bad(fmt::format("{}: {}", fn, s.message()));
    return finish(handle, s);
  } catch (const std::bad_alloc&) {
    return finish(handle, Status(Code::internal, "out of memory"));
  } catch (...) {
    return finish(handle, Status(Code::internal, "unexpected exception"));
  }
}

}  // namespace

extern "C" {

tfStatus_t tfCreate(tfHandle_t* handle) {
  if (!handle) return TF_STATUS_INVALID_ARGUMENT;
  *handle = nullptr;
  tfContext* ctx = new (std::nothrow) tfContext();
  if (!ctx) return TF_STATUS_INTERNAL;
  ctx->options.device = "cpu";  // the C API takes host pointers
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
  handle->options.threads = threads;
  return finish(handle, {});
}

tfStatus_t tfGemmEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, int64_t m, int64_t n, int64_t k,
                    const void* alpha, const void* A, tfDataType Atype, int64_t lda, const void* B, tfDataType Btype,
                    int64_t ldb, const void* beta, void* C, tfDataType Ctype, int64_t ldc, tfComputeType computeType) {
  return gemm_impl("tfGemmEx", handle, layoutA, layoutB, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C,
                   Ctype, ldc, 0, 1, computeType);
}

tfStatus_t tfGemmStridedBatchedEx(tfHandle_t handle, tfLayout layoutA, tfLayout layoutB, int64_t m, int64_t n,
                                  int64_t k, const void* alpha, const void* A, tfDataType Atype, int64_t lda,
                                  int64_t strideA, const void* B, tfDataType Btype, int64_t ldb, int64_t strideB,
                                  const void* beta, void* C, tfDataType Ctype, int64_t ldc, int64_t strideC,
                                  int64_t batchCount, tfComputeType computeType) {
  return gemm_impl("tfGemmStridedBatchedEx", handle, layoutA, layoutB, m, n, k, alpha, A, Atype, lda, strideA, B,
                   Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType);
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
  return handle->last_error.c_str();
}

const char* tfGetVersion(void) {
  static const std::string v(tileforge::version());
  return v.c_str();
}

}  // extern "C"
