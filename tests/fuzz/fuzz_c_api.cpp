// libFuzzer target: the C API's argument checks (tfGemmEx, tfGemmStridedBatchedEx, tfGemmPlan*, tfSetParam).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "tileforge/tileforge.h"

namespace {

// Operands larger than this are passed as null pointers: the call must then be refused (or touch nothing), and the
// fuzzer never allocates much.
constexpr int64_t kMaxBytes = int64_t(1) << 20;

tfHandle_t handle() {
  static tfHandle_t h = [] {
    tfHandle_t made = nullptr;
    if (tfCreate(&made) != TF_STATUS_SUCCESS) __builtin_trap();
    // The CPU, one thread and no tuning DB: what runs depends on the input alone.
    if (tfSetDevice(made, "cpu") != TF_STATUS_SUCCESS || tfSetThreads(made, 1) != TF_STATUS_SUCCESS ||
        tfUseDatabase(made, 0) != TF_STATUS_SUCCESS) {
      __builtin_trap();
    }
    return made;
  }();
  return h;
}

// Mostly small values near the interesting edges, sometimes any 64-bit integer.
int64_t size_value(FuzzedDataProvider& in, int64_t lo, int64_t hi) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) return in.ConsumeIntegral<int64_t>();
  return in.ConsumeIntegralInRange<int64_t>(lo, hi);
}

// A small value relative to `base` (a tight leading dimension, one matrix's span); a wild one stays as it is.
int64_t offset(int64_t delta, int64_t base) {
  int64_t out = 0;
  return __builtin_add_overflow(delta, base, &out) ? delta : out;
}

// 0..most (the enum's values), sometimes any int.
int enum_value(FuzzedDataProvider& in, int most) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) return in.ConsumeIntegral<int>();
  return in.ConsumeIntegralInRange<int>(0, most);
}

int64_t element_bytes(int type) { return type == TF_R_16F || type == TF_R_16BF ? 2 : 4; }

// Elements a rows x cols matrix with leading dimension ld spans, as the header documents it; -1 when the value
// does not fit or the description is not one the library may accept (then no buffer is handed over).
int64_t span(int64_t rows, int64_t cols, bool row_major, int64_t ld) {
  if (rows < 0 || cols < 0) return -1;
  if (rows == 0 || cols == 0) return 0;
  const int64_t major = row_major ? rows : cols, minor = row_major ? cols : rows;
  int64_t body = 0, total = 0;
  if (__builtin_mul_overflow(major - 1, ld, &body) || __builtin_add_overflow(body, minor, &total)) return -1;
  return total;
}

int64_t batched(int64_t one, int64_t stride, int64_t batch) {
  if (one < 0 || batch < 1) return -1;
  if (batch == 1 || one == 0) return one;
  int64_t body = 0, total = 0;
  if (stride < 0 || __builtin_mul_overflow(batch - 1, stride, &body) || __builtin_add_overflow(body, one, &total)) {
    return -1;
  }
  return total;
}

// A buffer of exactly `elements` elements, or null when that is not a size to allocate.
std::unique_ptr<unsigned char[]> buffer(int64_t elements, int type, unsigned char fill) {
  int64_t bytes = 0;
  if (elements < 0 || __builtin_mul_overflow(elements, element_bytes(type), &bytes) || bytes > kMaxBytes) {
    return nullptr;
  }
  std::unique_ptr<unsigned char[]> p(new unsigned char[std::size_t(bytes)]);
  std::memset(p.get(), fill, std::size_t(bytes));
  return p;
}

}  // namespace

// Each call gets host buffers of exactly the size the header documents for its arguments, so a read or write past
// that contract is an ASan report, and an argument the checks miss shows up as one.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  tfHandle_t h = handle();
  tfClearParams(h);

  const int entry = in.ConsumeIntegralInRange<int>(0, 2);
  // Enum values as a C caller may pass them: mostly legal, sometimes any int (the API refuses those by name).
  const auto la = tfLayout(enum_value(in, 1)), lb = tfLayout(enum_value(in, 1)), lc = tfLayout(enum_value(in, 1));
  const int at = enum_value(in, 2), bt = in.ConsumeBool() ? at : enum_value(in, 2), ct = enum_value(in, 2);
  const auto compute = tfComputeType(enum_value(in, 1));
  const int64_t m = size_value(in, -1, 40), n = size_value(in, -1, 40), k = size_value(in, -1, 40);
  const bool a_row = la == TF_ROW_MAJOR, b_row = lb == TF_ROW_MAJOR, c_row = lc == TF_ROW_MAJOR;
  auto ld = [&](int64_t tight) { return offset(size_value(in, -2, 20), tight > 0 && tight < 64 ? tight : 1); };
  const int64_t lda = ld(a_row ? k : m), ldb = ld(b_row ? n : k), ldc = ld(c_row ? n : m);
  const int64_t batch = entry == 0 ? 1 : size_value(in, -1, 4);
  const int64_t sa = span(m, k, a_row, lda), sb = span(k, n, b_row, ldb), sc = span(m, n, c_row, ldc);
  auto stride = [&](int64_t one) { return offset(size_value(in, -3, 16), one > 0 && one < 4096 ? one : 0); };
  const int64_t stride_a = stride(sa), stride_b = stride(sb), stride_c = stride(sc);
  const float alpha = in.ConsumeFloatingPoint<float>(), beta = in.ConsumeBool() ? 0.0f : in.ConsumeFloatingPoint<float>();
  const bool null_scalars = in.ConsumeIntegralInRange<int>(0, 31) == 0;
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) {
    // A pin by any name and value: checked against the family's legal values at the call.
    const std::string name = in.ConsumeRandomLengthString(16);
    tfSetParam(h, name.c_str(), in.ConsumeIntegral<int64_t>());
  }

  auto A = buffer(batched(sa, stride_a, batch), at, 0x3c);
  auto B = buffer(batched(sb, stride_b, batch), bt, 0x3c);
  auto C = buffer(batched(sc, stride_c, batch), ct, 0x3c);
  const void* pa = null_scalars ? nullptr : &alpha;
  const void* pb = null_scalars ? nullptr : &beta;
  const auto Atype = tfDataType(at), Btype = tfDataType(bt), Ctype = tfDataType(ct);

  tfStatus_t status = TF_STATUS_SUCCESS;
  if (entry == 0) {
    status = tfGemmEx(h, la, lb, lc, m, n, k, pa, A.get(), Atype, lda, B.get(), Btype, ldb, pb, C.get(), Ctype, ldc,
                      compute);
  } else if (entry == 1) {
    status = tfGemmStridedBatchedEx(h, la, lb, lc, m, n, k, pa, A.get(), Atype, lda, stride_a, B.get(), Btype, ldb,
                                    stride_b, pb, C.get(), Ctype, ldc, stride_c, batch, compute);
  } else {
    tfGemmPlan_t plan = nullptr;
    status = tfGemmPlanCreate(h, &plan, la, lb, lc, m, n, k, pa, Atype, lda, stride_a, Btype, ldb, stride_b, pb, Ctype,
                              ldc, stride_c, batch, compute);
    if (status == TF_STATUS_SUCCESS) {
      size_t workspace = 0;
      if (tfGemmPlanGetWorkspaceSize(plan, &workspace) != TF_STATUS_SUCCESS) __builtin_trap();
      if (!tfGemmPlanDescribe(plan)) __builtin_trap();
      status = tfGemmPlanRun(plan, A.get(), B.get(), C.get(), nullptr, nullptr, 0);
      tfGemmPlanDestroy(plan);
    } else if (plan) {
      __builtin_trap();  // a refused plan is never handed out
    }
  }
  // Every status has a name, and a failure a message naming what was wrong.
  if (!tfGetStatusString(status)) __builtin_trap();
  const char* message = tfGetLastErrorMessage(h);
  if (!message || (status != TF_STATUS_SUCCESS && !*message)) __builtin_trap();
  return 0;
}
