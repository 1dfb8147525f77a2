// Names, sizes and parsing of dtypes, layouts, shapes and pins; Status text.
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "core/parse.hpp"

namespace tileforge {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

std::string_view to_string(Layout l) {
  switch (l) {
    case Layout::RR: return "RR";
    case Layout::RC: return "RC";
    case Layout::CR: return "CR";
    case Layout::CC: return "CC";
  }
  return "?";
}

std::string_view to_string(Order o) {
  switch (o) {
    case Order::row_major: return "row-major";
    case Order::col_major: return "col-major";
  }
  return "?";
}

std::size_t size_of(DType t) { return t == DType::f32 ? 4 : 2; }
bool a_row_major(Layout l) { return l == Layout::RR || l == Layout::RC; }
bool b_row_major(Layout l) { return l == Layout::RR || l == Layout::CR; }

std::string_view to_string(Code c) {
  switch (c) {
    case Code::ok: return "ok";
    case Code::invalid_argument: return "invalid_argument";
    case Code::unsupported: return "unsupported";
    case Code::not_available: return "not_available";
    case Code::compile_failed: return "compile_failed";
    case Code::launch_failed: return "launch_failed";
    case Code::io_error: return "io_error";
    case Code::internal: return "internal";
  }
  return "?";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return fmt::format("{}: {}", tileforge::to_string(code_), message_);
}

Status invalid_argument(std::string message) { return {Code::invalid_argument, std::move(message)}; }
Status unsupported(std::string message) { return {Code::unsupported, std::move(message)}; }
Status not_available(std::string message) { return {Code::not_available, std::move(message)}; }

std::string_view allowed_dtypes() { return "f32, f16, bf16"; }
std::string_view allowed_layouts() { return "RR, RC, CR, CC"; }

Expected<DType> parse_dtype(std::string_view text, std::string_view what) {
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    if (text == to_string(t)) return t;
  return invalid_argument(fmt::format("{} '{}' is not a known dtype (allowed: {})", what, text, allowed_dtypes()));
}

Expected<Layout> parse_layout(std::string_view text, std::string_view what) {
  for (Layout l : {Layout::RR, Layout::RC, Layout::CR, Layout::CC})
    if (text == to_string(l)) return l;
  return invalid_argument(fmt::format("{} '{}' is not a known layout (allowed: {})", what, text, allowed_layouts()));
}

Expected<std::vector<Layout>> parse_layouts(std::string_view text, std::string_view what) {
  if (text == "all") return std::vector<Layout>{Layout::RR, Layout::RC, Layout::CR, Layout::CC};
  auto one = parse_layout(text, what);
  if (!one) {
    return invalid_argument(
        fmt::format("{} '{}' is not a known layout (allowed: {}, all)", what, text, allowed_layouts()));
  }
  return std::vector<Layout>{*one};
}

Expected<int64_t> parse_int(std::string_view text, std::string_view what) {
  int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && *first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != last) {
    return invalid_argument(fmt::format("{} '{}' is not an integer", what, text));
  }
  if (ec == std::errc::result_out_of_range) {
    return invalid_argument(fmt::format("{} '{}' does not fit a 64-bit integer", what, text));
  }
  return value;
}

Expected<std::array<int64_t, 3>> parse_shape(std::string_view text, std::string_view what) {
  std::array<int64_t, 3> dims{};
  auto bad = [&](std::string_view why) {
    return invalid_argument(
        fmt::format("{} '{}' {} (allowed: MxNxK, three non-negative integers such as 4096x4096x4096)", what, text,
                    why));
  };
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    std::size_t end = text.find('x', start);
    if (i < 2 && end == std::string_view::npos) return bad("has fewer than three sizes");
    if (i == 2 && end != std::string_view::npos) return bad("has more than three sizes");
    std::string_view part = text.substr(start, i < 2 ? end - start : std::string_view::npos);
    if (part.empty()) return bad("has an empty size");
    for (char c : part)
      if (c < '0' || c > '9') return bad("has a size that is not a non-negative integer");
    auto v = parse_int(part, what);
    if (!v) return bad("has a size that does not fit a 64-bit integer");
    dims[i] = *v;
    start = end + 1;
  }
  return dims;
}

Expected<std::pair<std::string, int64_t>> parse_pin(std::string_view text, std::string_view what) {
  std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return invalid_argument(fmt::format("{} '{}' is not NAME=VALUE (for example MR=6)", what, text));
  }
  auto value = parse_int(text.substr(eq + 1), fmt::format("{} value of {}", what, text.substr(0, eq)));
  if (!value) return value.status();
  return std::pair<std::string, int64_t>{std::string(text.substr(0, eq)), *value};
}

}  // namespace tileforge
