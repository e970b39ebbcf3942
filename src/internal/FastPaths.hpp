// SPDX-License-Identifier: Apache-2.0
// Which of Kompute's fast paths a device gets, for kompute-info and
// Manager.get_device_properties() ("fast_paths").
//
// THE KERNEL LIBRARY ADDS ITS PATHS HERE: one member per choice it makes
// from the capability table (GEMM on cooperative matrices or the tiled
// fallback, integer dot product for quantized mat-vec, ...), computed by
// the same function the kernels use to choose, so that what is reported is
// what runs.
#pragma once

#include "kompute/Vulkan.hpp"

#include "kompute/Capabilities.hpp"
#include "kompute/DeviceInfo.hpp"

namespace kp {
namespace internal {

/** The fast paths of a device with capabilities `caps` and `limits`;
 * `shaderCopies` is the Manager's choice for OpCopy (KOMPUTE_ENV_SHADER_COPY
 * or the vendor default). */
JsonValue
fastPaths(const DeviceCapabilities& caps, const vk::PhysicalDeviceLimits& limits, bool shaderCopies);

} // namespace internal
} // namespace kp
