// Error metrics of a result against the float64 reference, and the pass/fail thresholds of docs/NUMERICS.md.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/half.hpp"
#include "verify/verify.hpp"

namespace tileforge::verify {
namespace {

// The value the output type stores for a finite reference: only used to tell whether it overflows to Inf.
double stored(double ref, DType t) {
  const float f = float(ref);
  switch (t) {
    case DType::f32: return f;
    case DType::f16: return f16_to_float(float_to_f16(f));
    case DType::bf16: return bf16_to_float(float_to_bf16(f));
  }
  return ref;
}

// Half the spacing of the subnormals: the absolute error a rounding can make where relative error means nothing.
double underflow_slack(DType t) {
  switch (t) {
    case DType::f32: return 0x1p-150;
    case DType::f16: return 0x1p-25;
    case DType::bf16: return 0x1p-134;
  }
  return 0;
}

}  // namespace

double worst_case_factor(const Problem& problem) {
  // K products summed in any tree, times alpha, plus beta * C: at most K + 4 roundings in the accumulator on
  // any path (first order: gamma_n = n u / (1 - n u)); then the conversion to the output type, and one more for
  // epilogues that round alpha * AB to the output type before adding beta * C.
  const double u = unit_roundoff(problem.precision.accum);
  const double n = double(problem.k) + 4;
  if (n * u >= 0.5) return std::numeric_limits<double>::infinity();
  const double gamma = n * u / (1 - n * u);
  return (gamma + 2 * unit_roundoff(problem.precision.output)) * 1.01;  // 1% for second-order terms
}

ErrorReport compare(const Problem& problem, const void* c_out, const Reference& ref) {
  const Problem p = problem.normalized();
  const DType t = p.precision.output;
  ErrorReport r;
  r.full = int64_t(ref.rows.size()) == p.m;
  const int64_t covered = int64_t(ref.rows.size());
  double diff2 = 0, ref2 = 0;
  const double factor = worst_case_factor(p);
  const double slack = (double(p.k) + 4) * underflow_slack(p.precision.accum) + 2 * underflow_slack(t);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t ri = 0; ri < covered; ++ri) {
      const int64_t row = ref.rows[std::size_t(ri)];
      for (int64_t j = 0; j < p.n; ++j) {
        const std::size_t at = std::size_t((b * covered + ri) * p.n + j);
        const double want = ref.value[at];
        const double got = load(c_out, t, b * p.stride_c + c_index(p, row, j));
        ++r.checked;
        if (std::isnan(want)) {
          // IEEE propagation: a NaN product or NaN input must come out as NaN.
          if (!std::isnan(got)) ++r.nonfinite_mismatch;
          continue;
        }
        if (std::isinf(want)) {
          if (got != want) ++r.nonfinite_mismatch;
          continue;
        }
        if (std::isnan(got)) {
          ++r.nan_count;
          continue;
        }
        // A finite result too large for the output type is stored as Inf of its sign: that is the right answer.
        if (std::isinf(got) && stored(want, t) == got) continue;
        const double d = std::fabs(got - want);
        diff2 += d * d;
        ref2 += want * want;
        const double bound = ref.bound[at];
        // bound == 0 means every term was zero, so the exact result is 0 and any difference is unbounded.
        const double scaled = bound > 0 ? d / bound : (d == 0 ? 0.0 : std::numeric_limits<double>::infinity());
        r.max_scaled_error = std::max(r.max_scaled_error, scaled);
        if (d > factor * bound + slack) ++r.over_bound;
      }
    }
  }
  // With an all-zero reference the norm of C itself is reported (0 when the result is right).
  r.rel_error = ref2 > 0 ? std::sqrt(diff2) / std::sqrt(ref2) : std::sqrt(diff2);
  return r;
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::f32: return 0x1p-24;
    case DType::f16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
  }
  return 0x1p-24;
}

std::optional<double> ceiling(const Problem& problem) {
  if (problem.precision.accum == DType::f16) return std::nullopt;
  switch (problem.precision.output) {
    case DType::f32: {
      // FP32 accumulation error grows like sqrt(K) * u for random data; 1e-5 holds up to K = 16384.
      const double k = double(problem.k);
      return k > 16384 ? 1e-5 * std::sqrt(k / 16384.0) : 1e-5;
    }
    case DType::f16: return 2e-3;
    case DType::bf16: return 1.6e-2;
  }
  return std::nullopt;
}

double native_floor(const Problem& problem) { return unit_roundoff(problem.precision.output); }

std::optional<double> threshold(const Problem& problem, std::optional<double> native_rel_error) {
  const std::optional<double> cap = ceiling(problem);
  std::optional<double> twice;
  if (native_rel_error && std::isfinite(*native_rel_error)) {
    twice = std::max(2.0 * *native_rel_error, native_floor(problem));
  }
  if (cap && twice) return std::min(*cap, *twice);
  if (cap) return cap;
  return twice;
}

Status check(const Problem& problem, const ErrorReport& report, std::optional<double> native_rel_error) {
  if (report.nan_count > 0) {
    return Status(Code::internal, fmt::format("wrong result: {} NaN where the reference is finite ({} checked{})",
                                              report.nan_count, report.checked,
                                              report.full ? "" : ", sampled rows"));
  }
  if (report.nonfinite_mismatch > 0) {
    return Status(Code::internal,
                  fmt::format("wrong result: {} elements differ where the reference is Inf or NaN ({} checked)",
                              report.nonfinite_mismatch, report.checked));
  }
  if (report.over_bound > 0) {
    return Status(Code::internal,
                  fmt::format("wrong result: {} elements exceed the worst-case rounding error {:.3e} of their bound "
                              "sum |alpha a b| + |beta c| (max scaled error {:.3e}; relative error {:.3e}; {} checked)",
                              report.over_bound, worst_case_factor(problem), report.max_scaled_error,
                              report.rel_error, report.checked));
  }
  if (std::isnan(report.rel_error)) {
    return Status(Code::internal, "wrong result: relative error is NaN");
  }
  const std::optional<double> limit = threshold(problem, native_rel_error);
  if (limit && !(report.rel_error <= *limit)) {
    std::string why = fmt::format("wrong result: relative error {:.3e} > threshold {:.3e}", report.rel_error, *limit);
    if (const auto cap = ceiling(problem)) {
      why += fmt::format(" (ceiling {:.3e} for {} output, K = {}", *cap, to_string(problem.precision.output),
                         problem.k);
    } else {
      why += fmt::format(" (f16 accumulation: twice the native error only");
    }
    if (native_rel_error) why += fmt::format("; native {:.3e}", *native_rel_error);
    why += fmt::format("); max scaled error {:.3e}; {} elements checked{}", report.max_scaled_error, report.checked,
                       report.full ? "" : " (sampled rows)");
    return Status(Code::internal, why);
  }
  return Status::Ok();
}

}  // namespace tileforge::verify
