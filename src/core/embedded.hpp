// Data files compiled into the library (chip profiles, kernel headers, schemas): (file name, contents) pairs.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace tileforge::embedded {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_profiles();
// CUDA kernel headers by their path under src/backends/cuda/kernels/ ("sm80/gemm.cuh").
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_kernel_headers();
// The triton family's Python files by their name under src/backends/cuda/kernels/triton/ ("gemm.py", "compile.py").
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_triton_sources();
// The JSON schemas of schemas/ by file name ("chip.schema.json"): core/json_schema.hpp checks input against them.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_schemas();
}  // namespace tileforge::embedded
