// Reads ptxas -v lines out of a compiler log, one record per entry function.
#include "jit/ptxas_report.hpp"

#include <cctype>
#include <charconv>

namespace tileforge::jit {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// "224 bytes stack frame" -> (224, "bytes stack frame"); false when the text does not start with a number.
bool leading_number(std::string_view s, int64_t& value, std::string_view& rest) {
  s = trim(s);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) return false;
  rest = trim(s.substr(std::size_t(end - s.data())));
  return true;
}

// Text between the first pair of single quotes after `from`.
std::string quoted(std::string_view line, std::size_t from) {
  std::size_t a = line.find('\'', from);
  if (a == std::string_view::npos) return {};
  std::size_t b = line.find('\'', a + 1);
  if (b == std::string_view::npos) return {};
  return std::string(line.substr(a + 1, b - a - 1));
}

template <class Fn>
void for_each_piece(std::string_view s, Fn fn) {
  while (!s.empty()) {
    std::size_t comma = s.find(',');
    fn(trim(s.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
}

}  // namespace

const FunctionResources* PtxasReport::find(std::string_view name) const {
  for (const auto& f : functions)
    if (f.name == name) return &f;
  return nullptr;
}

bool PtxasReport::any_spills() const {
  for (const auto& f : functions)
    if (f.spills()) return true;
  return false;
}

PtxasReport parse_ptxas_report(std::string_view log) {
  PtxasReport report;
  // The entry being compiled takes the "Used ..." line; the function named by "Function properties for" takes
  // the stack line that follows it (a non-inlined device function has properties but is no entry: skipped).
  int entry = -1;
  int props = -1;
  auto index_of = [&](std::string_view name) -> int {
    for (std::size_t i = 0; i < report.functions.size(); ++i)
      if (report.functions[i].name == name) return int(i);
    return -1;
  };
  while (!log.empty()) {
    std::size_t nl = log.find('\n');
    std::string_view line = log.substr(0, nl);
    log.remove_prefix(nl == std::string_view::npos ? log.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Older nvcc prints the stack line without the "ptxas" prefix.
    if (line.find("ptxas") == std::string_view::npos && line.find("bytes stack frame") == std::string_view::npos) continue;
    std::size_t colon = line.find(':');
    std::string_view body = colon == std::string_view::npos ? std::string_view{} : trim(line.substr(colon + 1));

    if (std::size_t at = line.find("Compiling entry function"); at != std::string_view::npos) {
      FunctionResources f;
      f.name = quoted(line, at);
      std::size_t for_at = line.find(" for ", at);
      if (for_at != std::string_view::npos) f.arch = quoted(line, for_at);
      int existing = index_of(f.name);
      if (existing < 0) {
        report.functions.push_back(std::move(f));
        existing = int(report.functions.size()) - 1;
      }
      entry = existing;
      props = -1;
    } else if (std::size_t at2 = line.find("Function properties for"); at2 != std::string_view::npos) {
      std::string_view name = trim(line.substr(at2 + std::string_view("Function properties for").size()));
      props = index_of(name);
    } else if (line.find("stack frame") != std::string_view::npos) {
      // "ptxas         .     224 bytes stack frame, 444 bytes spill stores, 444 bytes spill loads"
      std::size_t dot = line.find('.');
      std::string_view pieces = dot == std::string_view::npos ? line : line.substr(dot + 1);
      if (props < 0) continue;
      FunctionResources& f = report.functions[std::size_t(props)];
      for_each_piece(pieces, [&](std::string_view piece) {
        int64_t v = 0;
        std::string_view rest;
        if (!leading_number(piece, v, rest)) return;
        if (rest == "bytes stack frame") f.stack_frame_bytes = v;
        else if (rest == "bytes spill stores") f.spill_store_bytes = v;
        else if (rest == "bytes spill loads") f.spill_load_bytes = v;
      });
    } else if (body.starts_with("Used ")) {
      if (entry < 0) continue;
      FunctionResources& f = report.functions[std::size_t(entry)];
      for_each_piece(body, [&](std::string_view piece) {
        int64_t v = 0;
        std::string_view rest;
        if (piece.starts_with("Used ") || piece.starts_with("used ")) {
          if (!leading_number(piece.substr(5), v, rest)) return;
          if (rest == "registers") f.registers = int(v);
          else if (rest == "barriers") f.barriers = int(v);
          return;
        }
        if (!leading_number(piece, v, rest)) return;
        if (rest == "bytes smem") f.smem_bytes = v;
        else if (rest == "bytes cmem[0]") f.cmem0_bytes = v;
      });
    } else if (body.ends_with("bytes gmem")) {
      int64_t v = 0;
      std::string_view rest;
      if (leading_number(body, v, rest)) report.gmem_bytes = v;
    } else if (line.find("warning") != std::string_view::npos || line.find("error") != std::string_view::npos) {
      report.warnings.emplace_back(trim(line));
    }
  }
  return report;
}

}  // namespace tileforge::jit
