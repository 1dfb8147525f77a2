// Parsing of the textual forms users type: dtype and layout names, "MxNxK" shapes, "NAME=VALUE" pins.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expected.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge {

// `what` names the argument in the error message ("--dtype", "dtype of suite public.json").
Expected<DType> parse_dtype(std::string_view text, std::string_view what = "dtype");
Expected<Layout> parse_layout(std::string_view text, std::string_view what = "layout");
// "RR", "RC", "CR", "CC" or "all".
Expected<std::vector<Layout>> parse_layouts(std::string_view text, std::string_view what = "--layout");
// Exactly three non-negative integers joined by 'x': "4096x4096x4096".
Expected<std::array<int64_t, 3>> parse_shape(std::string_view text, std::string_view what = "--shape");
// "NAME=VALUE" with an integer value.
Expected<std::pair<std::string, int64_t>> parse_pin(std::string_view text, std::string_view what = "--set");
// A whole non-negative or negative decimal integer that fits int64_t; nothing else in the text.
Expected<int64_t> parse_int(std::string_view text, std::string_view what);

std::string_view allowed_dtypes();   // "f32, f16, bf16"
std::string_view allowed_layouts();  // "RR, RC, CR, CC"

}  // namespace tileforge
