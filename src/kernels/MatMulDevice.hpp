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
/** The same from a device's capability table and properties (what a
 * Manager reports: kp::preferredWeightFormat). */
DeviceView
matMulDevice(const DeviceCapabilities& table, const vk::PhysicalDeviceProperties& properties, const DeviceCaps& caps);

/** Whether the mat-vec takes its int-dot build (for the formats that have
 * one): where the device accelerates 4x8-bit packed dot products, or has
 * them and KOMPUTE_ENV_DISABLE names matvec-float (lavapipe, in tests);
 * never with int-dot turned off. */
bool
matVecIntDot(const DeviceView& view, const DeviceCaps& caps);

} // namespace matmul
} // namespace kernels
} // namespace kp
