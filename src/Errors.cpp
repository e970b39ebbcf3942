// SPDX-License-Identifier: Apache-2.0
#include "kompute/Errors.hpp"

namespace kp {

// "ErrorOutOfDeviceMemory" -> "VK_ERROR_OUT_OF_DEVICE_MEMORY", the name
// users find in the Vulkan specification.
std::string
VulkanError::resultName(vk::Result result)
{
    std::string camel = vk::to_string(result);
    std::string name = "VK_";
    for (size_t i = 0; i < camel.size(); ++i) {
        char c = camel[i];
        bool upper = c >= 'A' && c <= 'Z';
        if (upper && i > 0) {
            char previous = camel[i - 1];
            bool previousLowerOrDigit = (previous >= 'a' && previous <= 'z') ||
                                        (previous >= '0' && previous <= '9');
            if (previousLowerOrDigit) {
                name += '_';
            }
        }
        name += static_cast<char>(upper || c < 'a' || c > 'z' ? c : c - 'a' + 'A');
    }
    return name;
}

namespace {

std::string
describe(vk::Result result, const std::string& action)
{
    std::string message = action + " failed: " + VulkanError::resultName(result);
    switch (result) {
        case vk::Result::eErrorOutOfDeviceMemory:
            message += " (the GPU is out of memory)";
            break;
        case vk::Result::eErrorOutOfHostMemory:
            message += " (the host is out of memory)";
            break;
        case vk::Result::eErrorDeviceLost:
            message += " (the device was lost: a shader may have faulted or "
                       "run too long; the Manager must be recreated)";
            break;
        default:
            break;
    }
    return message;
}

} // namespace

VulkanError::VulkanError(vk::Result result, const std::string& action)
  : Error(describe(result, action))
  , mResult(result)
{
}

VulkanError::VulkanError(vk::Result result, const std::string& message, Verbatim)
  : Error(message)
  , mResult(result)
{
}

OutOfMemoryError
OutOfMemoryError::beforeDriver(const std::string& message)
{
    return OutOfMemoryError(vk::Result::eErrorOutOfDeviceMemory, message, Verbatim{});
}

void
throwVulkanError(vk::Result result, const std::string& action)
{
    switch (result) {
        case vk::Result::eErrorOutOfDeviceMemory:
        case vk::Result::eErrorOutOfHostMemory:
            throw OutOfMemoryError(result, action);
        case vk::Result::eErrorDeviceLost:
            throw DeviceLostError(result, action);
        default:
            throw VulkanError(result, action);
    }
}

} // namespace kp
