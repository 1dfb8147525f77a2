// tileforge's own CUDA backend: the sm80 family generated per Config, compiled with NVRTC, cached, launched.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace tileforge::cuda {

std::unique_ptr<Backend> make_cuda_backend();

// Compiles (or finds in the kernel cache) and loads the small device utilities: the reference check, the L2
// scrub and the operand copy. `entry` is one of "tf_reference_check_<in>_<out>_<layout>", "tf_scrub_l2",
// "tf_copy_u16". Used by the GPU bench and the device-side verification.
struct UtilityKernel {
  void* function = nullptr;  // CUfunction
};
Expected<UtilityKernel> utility_kernel(const std::string& entry, int ordinal);

}  // namespace tileforge::cuda
