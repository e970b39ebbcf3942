// SPDX-License-Identifier: Apache-2.0
// The description of one device (kp::describeDevice, Manager's
// deviceDescription), from its capabilities as set up.
#pragma once

#include <cstdint>
#include <string>

#include "kompute/Vulkan.hpp"

#include "kompute/DeviceInfo.hpp"

namespace kp {
namespace internal {

class Capabilities;

/** Device `index` described with `capabilities` (supported, and enabled as
 * they stand) and the Manager's OpCopy choice. */
JsonValue
describeDevice(vk::PhysicalDevice physicalDevice,
               uint32_t index,
               const Capabilities& capabilities,
               bool shaderCopies);

/** "1.3.230". */
std::string
versionText(uint32_t version);

/** A driver version as its vendor encodes it: NVIDIA's "580.159.4.0"
 * (10.8.8.6 bits), others as versionText. */
std::string
driverVersionText(uint32_t vendorID, uint32_t version);

} // namespace internal
} // namespace kp
