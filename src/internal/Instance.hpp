// SPDX-License-Identifier: Apache-2.0
// The Vulkan instance the process's Managers share (see the instance cache
// in Manager.cpp), for code that looks at devices without a Manager
// (kompute-info's descriptions).
#pragma once

#include <cstdint>
#include <vector>

#include "kompute/Vulkan.hpp"

namespace kp {
namespace internal {

struct SharedInstance
{
    vk::Instance instance;
    /** The version the instance was created with. */
    uint32_t apiVersion = 0;
};

/** The instance for the layers of KOMPUTE_ENV_DEBUG_LAYERS (made on first
 * use, never destroyed). */
SharedInstance
sharedInstance();

/** The instance's physical devices, in Vulkan's order. */
std::vector<vk::PhysicalDevice>
physicalDevices(vk::Instance instance);

} // namespace internal
} // namespace kp
