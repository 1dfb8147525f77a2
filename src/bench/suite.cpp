// Suite parsing with field-named errors, and lookup of compiled-in suites so an installed tool needs no source tree.
#include "bench/suite.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/json_schema.hpp"
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
  // The structure (types, required and known fields, [M, N, K] of integers >= 0) is schemas/suite.schema.json's;
  // dtype and layout names are parsed as the options' are, so a suite and a command line accept the same words.
  if (auto bad = schema_violation(doc, "suite.schema.json")) return field_error(origin, bad->field, bad->rule);

  Suite suite;
  suite.origin = std::string(origin);
  suite.name = doc.at("name").get<std::string>();
  auto dtype_of = [&](const char* field) {
    return parse_dtype(doc.at(field).get<std::string>(), fmt::format("suite {}: field '{}'", origin, field));
  };
  auto input = dtype_of("dtype");
  if (!input) return input.status();
  auto output = dtype_of("out_dtype");
  if (!output) return output.status();
  auto accum = dtype_of("accum");
  if (!accum) return accum.status();
  suite.precision = {*input, *output, *accum};

  auto layouts = parse_layouts(doc.at("layout").get<std::string>(), fmt::format("suite {}: field 'layout'", origin));
  if (!layouts) return layouts.status();
  suite.layouts = *layouts;
  const json& shapes = doc.at("shapes");
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::array<int64_t, 3> dims{};
    for (int d = 0; d < 3; ++d) {
      // The schema's bound is compared as a double, so 2^63 itself passes it; it does not fit and is refused here.
      const json& v = shapes[i][d];
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
        return field_error(origin, fmt::format("shapes[{}][{}]", i, d), "must be an integer >= 0 that fits 64 bits");
      dims[d] = v.get<int64_t>();
    }
    suite.shapes.push_back(dims);
  }
  suite.note = doc.value("note", std::string());

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
