// Problem: tight defaults for leading dimensions and batch strides, spans, and validation of every argument.
#include <tuple>

#include <fmt/format.h>

#include "core/c_order.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge {
namespace {

int64_t at_least_one(int64_t v) { return v > 1 ? v : 1; }

// span of a rows x cols matrix stored with the given leading dimension: (major - 1) * ld + minor.
// Saturates at INT64_MAX instead of overflowing, so that validate() can refuse it.
int64_t span(int64_t rows, int64_t cols, bool row_major, int64_t ld) {
  if (rows == 0 || cols == 0) return 0;
  const int64_t major = row_major ? rows : cols, minor = row_major ? cols : rows;
  int64_t body = 0, total = 0;
  if (__builtin_mul_overflow(major - 1, ld, &body) || __builtin_add_overflow(body, minor, &total)) return INT64_MAX;
  return total;
}

bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

int64_t Problem::min_lda() const { return at_least_one(a_row_major(layout) ? k : m); }
int64_t Problem::min_ldb() const { return at_least_one(b_row_major(layout) ? n : k); }
int64_t Problem::min_ldc() const { return at_least_one(c_order == Order::col_major ? m : n); }

Problem Problem::normalized() const {
  Problem p = *this;
  if (p.lda == 0) p.lda = min_lda();
  if (p.ldb == 0) p.ldb = min_ldb();
  if (p.ldc == 0) p.ldc = min_ldc();
  if (p.stride_a == 0) p.stride_a = p.span_a();
  if (p.stride_b == 0) p.stride_b = p.span_b();
  if (p.stride_c == 0) p.stride_c = p.span_c();
  return p;
}

int64_t Problem::span_a() const { return span(m, k, a_row_major(layout), lda ? lda : min_lda()); }
int64_t Problem::span_b() const { return span(k, n, b_row_major(layout), ldb ? ldb : min_ldb()); }
int64_t Problem::span_c() const { return span(m, n, c_order != Order::col_major, ldc ? ldc : min_ldc()); }

namespace {

// The precision policy's combinations: the output is the input type or f32, and f16 accumulation takes f16 inputs.
Status validate_precision(const Precision& pr) {
  const bool half_in = pr.input != DType::f32;
  if (pr.output != pr.input && pr.output != DType::f32) {
    return invalid_argument(fmt::format("out_dtype {} with input dtype {} (allowed: {} or f32)", to_string(pr.output),
                                        to_string(pr.input), to_string(pr.input)));
  }
  if (!half_in && pr.output != DType::f32) {
    return invalid_argument(
        fmt::format("out_dtype {} with input dtype f32 (allowed: f32)", to_string(pr.output)));
  }
  if (pr.accum == DType::bf16) return invalid_argument("accum bf16 (allowed: f32, or f16 with f16 inputs)");
  if (pr.accum == DType::f16 && pr.input != DType::f16) {
    return invalid_argument(fmt::format("accum f16 with input dtype {} (allowed: accum f32; f16 accumulation "
                                        "needs f16 inputs)",
                                        to_string(pr.input)));
  }
  return {};
}

}  // namespace

Status Problem::validate() const {
  // Enums can arrive as any integer (Layout(7), a cast from a C caller's int): one outside its range would be
  // computed as another layout, or as a type no kernel writes, so it is refused before any of them is read.
  for (auto [name, t] : {std::pair{"precision.input", precision.input}, std::pair{"precision.output", precision.output},
                         std::pair{"precision.accum", precision.accum}}) {
    if (t != DType::f32 && t != DType::f16 && t != DType::bf16) {
      return invalid_argument(fmt::format("{} = DType({}) is not a dtype (allowed: f32, f16, bf16)", name, int(t)));
    }
  }
  if (layout != Layout::RR && layout != Layout::RC && layout != Layout::CR && layout != Layout::CC) {
    return invalid_argument(fmt::format("layout = Layout({}) is not a layout (allowed: RR, RC, CR, CC)", int(layout)));
  }
  if (c_order != Order::row_major && c_order != Order::col_major) {
    return invalid_argument(
        fmt::format("c_order = Order({}) is not an order (allowed: row_major, col_major)", int(c_order)));
  }
  auto dim = [](const char* name, int64_t v) -> Status {
    if (v < 0) return invalid_argument(fmt::format("{} = {} is negative (allowed: {} >= 0)", name, v, name));
    return {};
  };
  for (auto [name, v] : {std::pair{"M", m}, std::pair{"N", n}, std::pair{"K", k}})
    if (Status s = dim(name, v); !s) return s;
  if (batch < 1) return invalid_argument(fmt::format("batch = {} (allowed: batch >= 1)", batch));

  if (Status s = validate_precision(precision); !s) return s;

  // The reasons are formatted only on failure: validate() runs on every gemm() call.
  auto ld = [](const char* name, int64_t v, int64_t min, auto why) -> Status {
    if (v == 0) return {};
    if (v < min) {
      return invalid_argument(
          fmt::format("{} = {} is smaller than {} (allowed: {} >= {}, or 0 for tight)", name, v, why(), name, min));
    }
    return {};
  };
  auto a_why = [&] {
    return a_row_major(layout) ? fmt::format("the row length K = {} of row-major A", k)
                               : fmt::format("the column length M = {} of column-major A", m);
  };
  auto b_why = [&] {
    return b_row_major(layout) ? fmt::format("the row length N = {} of row-major B", n)
                               : fmt::format("the column length K = {} of column-major B", k);
  };
  auto c_why = [&] {
    return c_order == Order::col_major ? fmt::format("the column length M = {} of column-major C", m)
                                       : fmt::format("the row length N = {} of C", n);
  };
  if (Status s = ld("lda", lda, min_lda(), a_why); !s) return s;
  if (Status s = ld("ldb", ldb, min_ldb(), b_why); !s) return s;
  if (Status s = ld("ldc", ldc, min_ldc(), c_why); !s) return s;

  // Every element index of every batch entry must fit int64_t, with room for byte offsets.
  const int64_t limit = INT64_MAX / 8;
  int64_t dims_product = 0;
  for (auto [x, y] : {std::pair{m, k}, std::pair{k, n}, std::pair{m, n}}) {
    if (mul_overflows(x, y, &dims_product) || dims_product > limit) {
      return invalid_argument(fmt::format(
          "M, N, K = {}, {}, {} overflow 64-bit element offsets (allowed: each operand below 2^60 elements)", m, n, k));
    }
  }
  auto stride = [&](const char* name, int64_t v, int64_t sp) -> Status {
    if (v < 0) return invalid_argument(fmt::format("{} = {} is negative (allowed: 0 for tight, or >= {})", name, v, sp));
    if (v != 0 && batch > 1 && v < sp) {
      return invalid_argument(fmt::format("{} = {} is smaller than one matrix ({} elements; allowed: 0 for tight, or "
                                          ">= {})",
                                          name, v, sp, sp));
    }
    int64_t total = 0;
    if (mul_overflows(v ? v : sp, batch, &total) || total > limit) {
      return invalid_argument(fmt::format(
          "{} = {} times batch = {} overflows 64-bit element offsets (allowed: all batch entries below 2^60 elements)",
          name, v, batch));
    }
    return {};
  };
  for (auto [name, v, sp] : {std::tuple{"lda", lda, span_a()}, std::tuple{"ldb", ldb, span_b()},
                             std::tuple{"ldc", ldc, span_c()}}) {
    if (sp > limit) {
      return invalid_argument(fmt::format(
          "{} = {} makes the operand overflow 64-bit element offsets (allowed: each operand below 2^60 elements)", name,
          v));
    }
  }
  if (Status s = stride("stride_a", stride_a, span_a()); !s) return s;
  if (Status s = stride("stride_b", stride_b, span_b()); !s) return s;
  if (Status s = stride("stride_c", stride_c, span_c()); !s) return s;
  return {};
}

Problem row_major_c(const Problem& p) { return p.c_order == Order::row_major ? p : transposed(p); }

Problem transposed(const Problem& p) {
  Problem t = p;
  t.c_order = p.c_order == Order::row_major ? Order::col_major : Order::row_major;
  t.m = p.n;
  t.n = p.m;
  const bool a_row = !b_row_major(p.layout), b_row = !a_row_major(p.layout);
  t.layout = a_row ? (b_row ? Layout::RR : Layout::RC) : (b_row ? Layout::CR : Layout::CC);
  t.lda = p.ldb;
  t.ldb = p.lda;
  t.stride_a = p.stride_b;
  t.stride_b = p.stride_a;
  return t;
}

std::string Problem::describe() const {
  Problem p = normalized();
  std::string s = fmt::format("{}x{}x{}", m, n, k);
  if (batch > 1) s += fmt::format(" batch {}", batch);
  s += fmt::format(" {}->{} acc {} {} ld {}/{}/{}", to_string(precision.input), to_string(precision.output),
                   to_string(precision.accum), to_string(layout), p.lda, p.ldb, p.ldc);
  if (c_order == Order::col_major) s += " C col-major";
  return s;
}

std::optional<int64_t> Config::get(const std::string& name) const {
  auto it = params.find(name);
  if (it == params.end()) return std::nullopt;
  return it->second;
}

int64_t Config::at(const std::string& name) const {
  auto it = params.find(name);
  if (it == params.end()) throw std::out_of_range(fmt::format("config {} has no parameter {}", family, name));
  return it->second;
}

std::string Config::describe() const {
  std::string s = family;
  for (const auto& [name, value] : params) s += fmt::format(" {}={}", name, value);
  return s;
}

std::string_view version() { return TILEFORGE_VERSION; }

}  // namespace tileforge
