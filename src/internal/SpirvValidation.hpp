// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

namespace kp {
namespace internal {

class Capabilities;
struct ReflectedModule;

/** Runs SPIRV-Tools' validator for the Vulkan version the device speaks;
 * throws kp::Error with the validator's message if the module is invalid. */
void
validateSpirv(const std::vector<uint32_t>& spirv, uint32_t vulkanApiVersion);

/** Whether the linked SPIRV-Tools knows a SPIR-V capability (Debian 12's
 * predates CooperativeMatrixKHR, the BFloat16 and cooperative-matrix-2
 * ones, which its validator refuses as invalid). */
bool
validatorKnowsCapability(uint32_t capability);

/** Reads and validates a module for a device: what it needs of the device
 * is checked first (Capabilities::checkShader), as "needs the device
 * feature shaderFloat16" says more than the validator, which also refuses
 * capabilities newer than itself; those the table knows skip the validator
 * (the driver and its validation layer judge them). Throws kp::Error. */
ReflectedModule
checkedModule(const std::vector<uint32_t>& spirv, const Capabilities& capabilities);

} // namespace internal
} // namespace kp
