// SPDX-License-Identifier: Apache-2.0
// The matrix kernels' view of a device (kernels/MatMulConfig.hpp): the
// kernel library's device facts plus what the tile choice needs.
#pragma once

#include "internal/Device.hpp"
#include "kernels/KernelSupport.hpp"
#include "kernels/MatMulConfig.hpp"

namespace kp {
namespace kernels {
namespace matmul {

DeviceView
matMulDevice(const internal::Device& device, const DeviceCaps& caps);

} // namespace matmul
} // namespace kernels
} // namespace kp
