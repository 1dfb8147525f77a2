// Numerics: random operands, the float64 reference GEMM, error metrics and the thresholds of docs/NUMERICS.md.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tileforge/tileforge.hpp"

namespace tileforge::verify {

// Where element (i, j) of one C matrix is, in elements from its start, in C's storage order.
inline int64_t c_index(const Problem& p, int64_t i, int64_t j) {
  return p.c_order == Order::col_major ? j * p.ldc + i : i * p.ldc + j;
}

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
  int64_t nonfinite_mismatch = 0;  // reference NaN or Inf where C does not hold the same (NaN, or the same Inf)
  int64_t over_bound = 0;        // elements whose error exceeds the worst case of any correct summation order
  int64_t checked = 0;           // elements compared
  bool full = true;              // every element of C compared (false when rows were sampled)
};

// The least work a row of the reference counts for, per element of C: its value and bound take 16 bytes whatever K
// is, so a tall, thin C with a short K (10^8 x 16 x 1) is sampled too instead of taking 16 bytes per element.
inline constexpr double kReferenceElementWork = 16.0;

// Which rows of C (per batch entry) reference_gemm covers: all rows when M*N*max(K, kReferenceElementWork)*batch
// <= full_limit (the reference then holds at most full_limit bytes), else a deterministic sample in increasing order:
// row 0, row M-1 and evenly spaced rows between, at least min(M, min_rows) of them and about full_limit /
// (N*max(K, kReferenceElementWork)*batch) when that is more.
std::vector<int64_t> covered_rows(const Problem& problem, double full_limit = 2.0e9, int64_t min_rows = 64);
// How many rows covered_rows lists, without listing them (for a tall C the list alone is large). Row i of a sample of
// `count` < M rows is floor(i * (M - 1) / (count - 1)), which the device's sampled check computes the same way.
int64_t covered_row_count(const Problem& problem, double full_limit = 2.0e9, int64_t min_rows = 64);

ErrorReport compare(const Problem& problem, const void* c_out, const Reference& ref);

// The ceiling for the precision policy (docs/NUMERICS.md): with f32 accumulation, f32 output 1e-5 (times
// sqrt(K/16384) when K is larger), f16 2e-3, bf16 1.6e-2; when a native error is known, also at most twice it.
// With f16 accumulation only twice the native error applies (nullopt when no native error is known).
// Unit roundoff of a type (half an ulp at 1): f32 2^-24, f16 2^-11, bf16 2^-8.
double unit_roundoff(DType t);
// The policy's ceiling alone (f32 accumulation): f32 1e-5 (times sqrt(K/16384) when K > 16384), f16 2e-3,
// bf16 1.6e-2, by output type; nullopt for f16 accumulation, which has no ceiling.
std::optional<double> ceiling(const Problem& problem);
// The floor under twice the native error: one rounding of the output type (unit_roundoff of the output), so
// that a native error of exactly 0 (K = 0, exactly representable results) does not make every kernel fail.
double native_floor(const Problem& problem);

// The worst-case error of one element, per unit of its bound, for any order of summation with the policy's
// accumulator (Higham's gamma_{K+4} in the accumulator's unit roundoff, plus two roundings of the output type):
// a correct kernel never exceeds it, so an element beyond it is wrong even when the Frobenius norm averages it
// away. Infinite when K * u_accum approaches 1 (no bound is then meaningful).
double worst_case_factor(const Problem& problem);

std::optional<double> threshold(const Problem& problem, std::optional<double> native_rel_error = std::nullopt);

// ok, or invalid result with the numbers: NaN fails always, so do non-finite mismatches and elements over the
// worst-case bound; rel_error over the threshold fails.
Status check(const Problem& problem, const ErrorReport& report, std::optional<double> native_rel_error = std::nullopt);

}  // namespace tileforge::verify
