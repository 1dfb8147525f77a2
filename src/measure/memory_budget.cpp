// The memory a bench or verify case needs, from the problem's spans, and the host's available memory.
#include "measure/memory_budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "verify/verify.hpp"

namespace tileforge::measure {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// Saturating arithmetic: a stride of 1e8 times a batch of 1e6 must read as "too much", not wrap to a small number.
uint64_t mul(uint64_t a, uint64_t b) {
  if (a != 0 && b > kMax / a) return kMax;
  return a * b;
}
uint64_t add(uint64_t a, uint64_t b) { return a > kMax - b ? kMax : a + b; }

uint64_t nonneg(int64_t v) { return v > 0 ? uint64_t(v) : 0; }

// Elements one operand spans over all batch entries, as the harness allocates them.
uint64_t elements(int64_t stride, int64_t span, int64_t batch) {
  if (span <= 0) return 0;
  return add(mul(nonneg(batch - 1), nonneg(stride)), uint64_t(span));
}

uint64_t total(const std::vector<MemoryTerm>& terms) {
  uint64_t sum = 0;
  for (const auto& t : terms) sum = add(sum, t.bytes);
  return sum;
}

std::string describe_terms(const std::vector<MemoryTerm>& terms) {
  std::string out;
  for (const auto& t : terms) {
    if (t.bytes == 0) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", t.name, format_bytes(t.bytes));
  }
  return out;
}

}  // namespace

uint64_t MemoryNeed::host_bytes() const { return total(host); }
uint64_t MemoryNeed::device_bytes() const { return total(device); }

MemoryNeed case_memory(const Problem& problem, const CaseLayout& layout) {
  const Problem p = problem.normalized();
  const uint64_t in = size_of(p.precision.input), out = size_of(p.precision.output);
  const uint64_t a = mul(elements(p.stride_a, p.span_a(), p.batch), in);
  const uint64_t b = mul(elements(p.stride_b, p.span_b(), p.batch), in);
  const uint64_t c = mul(elements(p.stride_c, p.span_c(), p.batch), out);
  const uint64_t cs = mul(c, uint64_t(std::max(layout.participants, 0)));
  const std::string c_name = fmt::format("C x{}", std::max(layout.participants, 0));
  MemoryNeed need;
  // The harness generates each operand where the device reads it (measure::random_operand): in place in host memory
  // on the CPU, so it is held once; for a GPU on the host and uploaded, the host copies kept only for a host
  // reference (otherwise one at a time, each freed after its upload: the largest is the host's peak).
  if (!layout.device_operands) {
    need.host = {{"A", a}, {"B", b}, {"C in", c}, {c_name, cs}};
  } else {
    need.device = {{"A", a}, {"B", b}, {"C in", c}, {c_name, cs}};
    if (layout.host_reference) {
      need.host = {{"A", a}, {"B", b}, {"C in", c}};
    } else {
      need.host = {{"upload staging", std::max({a, b, c})}};
    }
  }
  if (layout.workspace > 0) (layout.device_operands ? need.device : need.host).push_back({"our workspace", layout.workspace});
  if (layout.timer_bytes > 0) need.device.push_back({"L2 scrub buffer", layout.timer_bytes});
  if (layout.host_reference) {
    // value and bound (two doubles) per covered element of C, and the covered rows' indices.
    const int64_t rows = verify::covered_row_count(p, layout.reference_full_limit);
    const uint64_t covered = mul(mul(nonneg(p.batch), nonneg(rows)), nonneg(p.n));
    need.host.push_back({"reference", add(mul(covered, 2 * sizeof(double)), mul(nonneg(rows), sizeof(int64_t)))});
  }
  return need;
}

std::optional<uint64_t> parse_mem_available(std::string_view meminfo) {
  std::istringstream in{std::string(meminfo)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kb = 0;
    std::string unit;
    if (!(fields >> kb)) return std::nullopt;
    fields >> unit;
    if (!unit.empty() && unit != "kB") return std::nullopt;
    return mul(kb, 1024);
  }
  return std::nullopt;
}

std::optional<MemoryLimit> host_memory_available() {
  std::ifstream f("/proc/meminfo");
  if (f) {
    std::stringstream text;
    text << f.rdbuf();
    if (auto bytes = parse_mem_available(text.str())) return MemoryLimit{*bytes, "MemAvailable"};
  }
  // Without /proc (or a kernel older than 3.14): free pages, which undercount the page cache that could be freed.
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return MemoryLimit{mul(uint64_t(pages), uint64_t(page)), "sysconf free pages"};
  return std::nullopt;
}

Status check_memory(const MemoryNeed& need, const std::optional<MemoryLimit>& host,
                    const std::optional<MemoryLimit>& device) {
  auto check = [](const std::vector<MemoryTerm>& terms, const std::optional<MemoryLimit>& limit,
                  std::string_view where) -> Status {
    const uint64_t bytes = total(terms);
    if (!limit || bytes <= limit->bytes) return {};
    return Status(Code::not_available,
                  fmt::format("needs {} of {} memory ({}), more than the {} available ({}) — reduce the problem or "
                              "raise --max-memory",
                              format_bytes(bytes), where, describe_terms(terms), format_bytes(limit->bytes),
                              limit->source));
  };
  if (Status s = check(need.host, host, "host"); !s) return s;
  return check(need.device, device, "device");
}

std::string format_bytes(uint64_t bytes) {
  if (bytes == kMax) return "more than 18 EB";
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1000.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  // Three significant digits: 23.4 GB, 512 MB, 1.50 kB reads as 1.5 kB.
  std::string num = v >= 100 ? fmt::format("{:.0f}", v) : v >= 10 ? fmt::format("{:.1f}", v) : fmt::format("{:.2f}", v);
  if (num.find('.') != std::string::npos) {
    while (num.back() == '0') num.pop_back();
    if (num.back() == '.') num.pop_back();
  }
  return fmt::format("{} {}", num, units[u]);
}

Expected<uint64_t> parse_memory_size(std::string_view text, std::string_view name) {
  const std::string allowed = "a byte count, or a number with K, M, G or T (powers of 1000), e.g. 20G or 1.5GB";
  std::string s(text);
  if (s.empty()) return invalid_argument(fmt::format("{} is empty (allowed: {})", name, allowed));
  double scale = 1;
  std::string digits = s;
  if (!digits.empty() && (digits.back() == 'B' || digits.back() == 'b')) digits.pop_back();
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k': case 'K': scale = 1e3; break;
      case 'm': case 'M': scale = 1e6; break;
      case 'g': case 'G': scale = 1e9; break;
      case 't': case 'T': scale = 1e12; break;
      default: break;
    }
    if (scale != 1) digits.pop_back();
  }
  if (digits.empty() || digits.find_first_not_of("0123456789.") != std::string::npos) {
    return invalid_argument(fmt::format("{} '{}' is not a size (allowed: {})", name, s, allowed));
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || errno == ERANGE || !std::isfinite(v)) {
    return invalid_argument(fmt::format("{} '{}' is not a size (allowed: {})", name, s, allowed));
  }
  const double bytes = std::floor(v * scale);
  if (bytes < 1 || bytes >= 1.8e19) {
    return invalid_argument(fmt::format("{} = {} is out of range (allowed: at least 1 byte, below 18 EB)", name, s));
  }
  return uint64_t(bytes);
}

}  // namespace tileforge::measure
