// libFuzzer target: suite JSON files (`bench --suite FILE`) and the problems they list.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bench/suite.hpp"
#include "tileforge/tileforge.hpp"

using namespace tileforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto suite = bench::parse_suite(text, "fuzz.json");
  if (!suite) {
    // Every refusal names the file, so that a user with several suites knows which one to fix.
    if (suite.status().message().find("fuzz.json") == std::string::npos) __builtin_trap();
    return 0;
  }
  // What bench does with a parsed suite: one problem per shape and layout.
  for (const auto& shape : suite->shapes) {
    for (Layout layout : suite->layouts) {
      Problem p;
      p.m = shape[0];
      p.n = shape[1];
      p.k = shape[2];
      p.layout = layout;
      p.precision = suite->precision;
      if (p.validate()) (void)p.describe();
    }
  }
  return 0;
}
