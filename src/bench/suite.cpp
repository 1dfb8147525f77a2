// Suite parsing with field-named errors, and lookup of compiled-in suites so an installed tool needs no source tree.
#include "bench/suite.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/parse.hpp"

namespace tileforge::embedded {
// Generated from bench/suites/*.json by cmake/embed.cmake.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_suites();
}  // namespace tileforge::embedded

namespace tileforge::bench {
namespace {

using nlohmann::json;

Status field_error(std::string_view origin, std::string_view field, std::string_view what) {
  return invalid_argument(fmt::format("suite {}: field '{}' {}", origin, field, what));
}

Expected<std::string> string_field(const json& doc, std::string_view origin, const char* field) {
  auto it = doc.find(field);
  if (it == doc.end()) return field_error(origin, field, "is missing");
  if (!it->is_string()) return field_error(origin, field, "must be a string");
  return it->get<std::string>();
}

std::string strip_json(std::string_view name) {
  if (name.ends_with(".json")) name.remove_suffix(5);
  return std::string(name);
}

}  // namespace

Expected<Suite> parse_suite(std::string_view json_text, std::string_view origin) {
  json doc;
  try {
    // json::exception, not only parse_error: a number beyond a double's range ("1E400") is out_of_range.
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    return invalid_argument(fmt::format("suite {}: not valid JSON ({})", origin, e.what()));
  }
  if (!doc.is_object()) return invalid_argument(fmt::format("suite {}: must be a JSON object", origin));

  // NOTE: unknown fields are refused so that a misspelt "layouts" or "dtypes" does not silently fall back.
  static const std::vector<std::string> known = {"name", "dtype", "out_dtype", "accum", "layout", "shapes", "note"};
  for (const auto& [key, value] : doc.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return field_error(origin, key, fmt::format("is not a suite field (allowed: {})", fmt::join(known, ", ")));
    }
  }

  Suite suite;
  suite.origin = std::string(origin);
  auto name = string_field(doc, origin, "name");
  if (!name) return name.status();
  suite.name = *name;

  auto dtype_of = [&](const char* field) -> Expected<DType> {
    auto text = string_field(doc, origin, field);
    if (!text) return text.status();
    return parse_dtype(*text, fmt::format("suite {}: field '{}'", origin, field));
  };
  auto input = dtype_of("dtype");
  if (!input) return input.status();
  auto output = dtype_of("out_dtype");
  if (!output) return output.status();
  auto accum = dtype_of("accum");
  if (!accum) return accum.status();
  suite.precision = {*input, *output, *accum};

  auto layout = string_field(doc, origin, "layout");
  if (!layout) return layout.status();
  auto layouts = parse_layouts(*layout, fmt::format("suite {}: field 'layout'", origin));
  if (!layouts) return layouts.status();
  suite.layouts = *layouts;

  auto shapes = doc.find("shapes");
  if (shapes == doc.end()) return field_error(origin, "shapes", "is missing");
  if (!shapes->is_array() || shapes->empty()) {
    return field_error(origin, "shapes", "must be a non-empty array of [M, N, K]");
  }
  for (std::size_t i = 0; i < shapes->size(); ++i) {
    const json& s = (*shapes)[i];
    const std::string field = fmt::format("shapes[{}]", i);
    if (!s.is_array() || s.size() != 3) return field_error(origin, field, "must be [M, N, K]");
    std::array<int64_t, 3> dims{};
    for (int d = 0; d < 3; ++d) {
      // Unsigned JSON integers above INT64_MAX and floats are refused, as a negative size is.
      if (!s[d].is_number_integer() || (s[d].is_number_unsigned() && s[d].get<uint64_t>() > uint64_t(INT64_MAX))) {
        return field_error(origin, fmt::format("{}[{}]", field, d), "must be an integer >= 0 that fits 64 bits");
      }
      dims[d] = s[d].get<int64_t>();
      if (dims[d] < 0) return field_error(origin, fmt::format("{}[{}]", field, d), "must be an integer >= 0");
    }
    suite.shapes.push_back(dims);
  }
  if (auto note = doc.find("note"); note != doc.end()) {
    if (!note->is_string()) return field_error(origin, "note", "must be a string");
    suite.note = note->get<std::string>();
  }

  // The precision policy is checked as Problem::validate would, so a bad suite fails before anything runs.
  Problem probe;
  probe.precision = suite.precision;
  if (Status s = probe.validate(); !s) return invalid_argument(fmt::format("suite {}: {}", origin, s.message()));
  return suite;
}

std::vector<std::string> builtin_suite_names() {
  std::vector<std::string> names;
  for (const auto& [file, text] : embedded::embedded_suites()) names.push_back(strip_json(file));
  return names;
}

std::string_view default_suite_name(std::string_view device_kind) { return device_kind == "cpu" ? "cpu" : "public"; }

Expected<Suite> load_suite(std::string_view name_or_path) {
  const std::string wanted = strip_json(name_or_path);
  const bool looks_like_path = name_or_path.find('/') != std::string_view::npos;
  if (!looks_like_path) {
    for (const auto& [file, text] : embedded::embedded_suites()) {
      if (strip_json(file) == wanted) return parse_suite(text, fmt::format("builtin:{}", file));
    }
  }
  if (looks_like_path || name_or_path.ends_with(".json")) {
    std::error_code ec;
    std::ifstream in{std::string(name_or_path), std::ios::binary};
    if (!in || !std::filesystem::is_regular_file(std::string(name_or_path), ec)) {
      return Status(Code::io_error, fmt::format("--suite: cannot read file '{}' (allowed: a readable suite JSON file, "
                                                "or a builtin suite: {})",
                                                name_or_path, fmt::join(builtin_suite_names(), ", ")));
    }
    std::stringstream text;
    text << in.rdbuf();
    if (in.bad()) return Status(Code::io_error, fmt::format("--suite: error reading file '{}'", name_or_path));
    return parse_suite(text.str(), name_or_path);
  }
  return invalid_argument(fmt::format("--suite '{}' is not a builtin suite or a .json file (allowed: {}, or a path)",
                                      name_or_path, fmt::join(builtin_suite_names(), ", ")));
}

}  // namespace tileforge::bench
