// SPDX-License-Identifier: Apache-2.0
// Turning Vulkan result codes into exceptions.
#pragma once

#include <string>

#include "kompute/Vulkan.hpp"

#include "kompute/Errors.hpp"

namespace kp {
namespace internal {

/** Throws kp::VulkanError (or its OutOfMemoryError / DeviceLostError)
 * naming the result and `action` unless the result is eSuccess. The message
 * is made only then: a literal `action` costs nothing on success (no
 * std::string is built), which matters on the paths that run at every
 * evaluation. */
inline void
check(vk::Result result, const char* action)
{
    if (result != vk::Result::eSuccess) {
        throwVulkanError(result, action);
    }
}

inline void
check(VkResult result, const char* action)
{
    check(static_cast<vk::Result>(result), action);
}

inline void
check(vk::Result result, const std::string& action)
{
    if (result != vk::Result::eSuccess) {
        throwVulkanError(result, action);
    }
}

inline void
check(VkResult result, const std::string& action)
{
    check(static_cast<vk::Result>(result), action);
}

} // namespace internal
} // namespace kp
