// The element tags the CUDA kernel headers take as template arguments (kernels/common/elem.cuh): 0 = f32, 1 = f16,
// 2 = bf16, the host's DType order.
#pragma once

#include "tileforge/tileforge.hpp"

namespace tileforge::cuda {

inline int elem_tag(DType t) { return t == DType::f32 ? 0 : t == DType::f16 ? 1 : 2; }

}  // namespace tileforge::cuda
