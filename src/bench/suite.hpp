// Shape suites: bench/suites/*.json (name, dtype, out_dtype, accum, layout, shapes), compiled in and from files.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::bench {

struct Suite {
  std::string name;
  std::string origin;             // the file it came from, or "builtin:cpu.json"
  Precision precision;
  std::vector<Layout> layouts;    // "layout": one of RR, RC, CR, CC, or "all"
  std::vector<std::array<int64_t, 3>> shapes;  // M, N, K
  std::string note;
};

// Parses suite JSON; every error names the file (`origin`) and the field ("suite cpu.json: field 'shapes[2]' ...").
Expected<Suite> parse_suite(std::string_view json_text, std::string_view origin);

// A compiled-in suite by name ("cpu", "public", with or without ".json"), or a file by path (anything containing
// '/' or ending in ".json" that is not a compiled-in name). An unknown name lists the known ones.
Expected<Suite> load_suite(std::string_view name_or_path);

std::vector<std::string> builtin_suite_names();

// The suite `bench` runs when given neither --suite nor --shape: "cpu" on a CPU, "public" on a GPU.
std::string_view default_suite_name(std::string_view device_kind);

}  // namespace tileforge::bench
