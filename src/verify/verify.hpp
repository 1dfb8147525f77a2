// Numerics: random operands, the float64 reference GEMM, error metrics and the thresholds of docs/NUMERICS.md.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tileforge/tileforge.hpp"

namespace tileforge::verify {

// Fills `count` elements of type `t` with values uniform in [-1, 1) (never all zero), from `seed`.
void fill_random(void* data, DType t, int64_t count, uint64_t seed);
// Fills with a value that is NaN in every dtype, so that an element a kernel fails to write shows up.
void fill_poison(void* data, DType t, int64_t count);
// Reads element i of a buffer of type t as double.
double load(const void* data, DType t, int64_t i);

// The reference result for the rows it covers: value = alpha*A*B + beta*C_in, and the error bound
// sum_k |alpha||a_ik||b_kj| + |beta||c_ij| used to scale element errors. Row-major, rows.size() x N per batch entry.
struct Reference {
  std::vector<int64_t> rows;     // which rows of C (per batch entry) are covered: all, or a sample of a large C
  std::vector<double> value;     // batch * rows.size() * N
  std::vector<double> bound;     // same shape
};

// Computes the float64 reference on the CPU (threaded). When M*N*K*batch exceeds `full_limit`, only a
// deterministic sample of rows is computed (first, last and evenly spaced rows, at least `min_rows`), which
// keeps a 4096^3 check to seconds; tests use sizes below the limit so that every element is checked.
// `c_in` is C before the call (read only when beta != 0).
Reference reference_gemm(const Problem& problem, const void* a, const void* b, const void* c_in,
                         double full_limit = 2.0e9, int64_t min_rows = 64);

struct ErrorReport {
  double rel_error = 0;          // ||C - Cref||_F / ||Cref||_F over the covered rows
  double max_scaled_error = 0;   // max |C - Cref| / bound
  int64_t nan_count = 0;         // elements that are NaN where the reference is not
  int64_t checked = 0;           // elements compared
  bool full = true;              // every element of C compared (false when rows were sampled)
};

ErrorReport compare(const Problem& problem, const void* c_out, const Reference& ref);

// The ceiling for the precision policy (docs/NUMERICS.md): with f32 accumulation, f32 output 1e-5 (times
// sqrt(K/16384) when K is larger), f16 2e-3, bf16 1.6e-2; when a native error is known, also at most twice it.
// With f16 accumulation only twice the native error applies (nullopt when no native error is known).
std::optional<double> threshold(const Problem& problem, std::optional<double> native_rel_error = std::nullopt);

// ok, or invalid result with the numbers: NaN fails always; rel_error over the threshold fails.
Status check(const Problem& problem, const ErrorReport& report, std::optional<double> native_rel_error = std::nullopt);

}  // namespace tileforge::verify
