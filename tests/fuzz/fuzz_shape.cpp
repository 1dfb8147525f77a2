// libFuzzer target: problem shape strings (`--shape MxNxK`) and the problem options typed beside them.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/parse.hpp"
#include "measure/memory_budget.hpp"
#include "tileforge/tileforge.hpp"

using namespace tileforge;

namespace {

// The input is lines: shape, layout(s), dtype, then integers for lda, ldb, ldc, batch, stride_a, stride_b,
// stride_c, then a --max-memory size. A missing line keeps the default, as an option not given does.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty() && lines.size() < 16) {
    const std::size_t eol = text.find('\n');
    lines.push_back(text.substr(0, eol));
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> lines = split_lines(text);
  if (lines.empty()) return 0;
  // The whole text through the single-token parsers too: they see whatever a user types.
  (void)parse_int(text, "--lda");
  (void)parse_pin(text, "--set");
  (void)measure::parse_memory_size(text);

  auto shape = parse_shape(lines[0]);
  if (!shape) return 0;
  Problem p;
  p.m = (*shape)[0];
  p.n = (*shape)[1];
  p.k = (*shape)[2];
  std::vector<Layout> layouts{Layout::RR};
  if (lines.size() > 1) {
    auto l = parse_layouts(lines[1]);
    if (!l) return 0;
    layouts = *l;
  }
  if (lines.size() > 2) {
    auto d = parse_dtype(lines[2]);
    if (!d) return 0;
    p.precision = {*d, *d, DType::f32};
  }
  int64_t* const fields[] = {&p.lda, &p.ldb, &p.ldc, &p.batch, &p.stride_a, &p.stride_b, &p.stride_c};
  for (std::size_t i = 0; i < std::size(fields) && i + 3 < lines.size(); ++i) {
    auto v = parse_int(lines[i + 3], "--lda");
    if (!v) return 0;
    *fields[i] = *v;
  }
  std::optional<measure::MemoryLimit> limit;
  if (lines.size() > 10) {
    auto bytes = measure::parse_memory_size(lines[10]);
    if (!bytes) return 0;
    limit = measure::MemoryLimit{*bytes, "--max-memory"};
  }

  for (Layout layout : layouts) {
    for (Order order : {Order::row_major, Order::col_major}) {
      p.layout = layout;
      p.c_order = order;
      (void)p.min_lda();
      (void)p.span_a();
      (void)p.span_b();
      (void)p.span_c();
      (void)p.flops();
      if (!p.validate()) continue;
      // What bench and verify do next with a valid problem: describe it, fill in the tight sizes, and price it
      // before allocating anything (sums there must saturate, never wrap).
      (void)p.describe();
      const Problem tight = p.normalized();
      for (bool gpu : {false, true}) {
        measure::CaseLayout case_layout;
        case_layout.participants = 3;
        case_layout.device_operands = gpu;
        case_layout.host_reference = !gpu;
        const measure::MemoryNeed need = measure::case_memory(tight, case_layout);
        (void)need.host_bytes();
        (void)measure::check_memory(need, limit, limit);
      }
    }
  }
  return 0;
}
