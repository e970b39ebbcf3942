// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

namespace kp {
namespace internal {

/** Runs SPIRV-Tools' validator for the Vulkan version the device speaks;
 * throws kp::Error with the validator's message if the module is invalid. */
void
validateSpirv(const std::vector<uint32_t>& spirv, uint32_t vulkanApiVersion);

} // namespace internal
} // namespace kp
