// SPDX-License-Identifier: Apache-2.0
// Exceptions thrown by Kompute. All derive from std::runtime_error, so code
// written for upstream that catches std::runtime_error keeps working.
#pragma once

#include <stdexcept>
#include <string>

#include "kompute/Vulkan.hpp"

namespace kp {

/** Any error raised by Kompute: misuse, bad input, or a failed Vulkan call.
 * A std::runtime_error, as upstream's errors are; what() says what was
 * wrong. */
class Error : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

/** A Vulkan call returned an error code. The message names the VkResult and
 * the action that failed; result() gives the code itself. */
class VulkanError : public Error
{
  public:
    /** "`action` failed: VK_ERROR_...", with a hint for out-of-memory and
     * device loss. */
    VulkanError(vk::Result result, const std::string& action);
    /** The VkResult the call returned. */
    vk::Result result() const noexcept { return mResult; }
    /** "VK_ERROR_OUT_OF_DEVICE_MEMORY": the name in the specification. */
    static std::string resultName(vk::Result result);

  protected:
    /** Tag of the constructor below. */
    struct Verbatim
    {
    };
    /** For errors found before the driver is called: `message` as it is,
     * with `result` as the code the driver would have returned. */
    VulkanError(vk::Result result, const std::string& message, Verbatim);

  private:
    vk::Result mResult;
};

/** Device or host memory ran out (VK_ERROR_OUT_OF_DEVICE_MEMORY or
 * VK_ERROR_OUT_OF_HOST_MEMORY), or an allocation is larger than its memory
 * heap, than what the heap has left of this Manager's allocations, or than
 * maxMemoryAllocationSize, which Kompute refuses before the driver sees
 * it. */
class OutOfMemoryError : public VulkanError
{
  public:
    using VulkanError::VulkanError;
    /** An allocation refused before the driver was called (result
     * VK_ERROR_OUT_OF_DEVICE_MEMORY); `message` says why. */
    static OutOfMemoryError beforeDriver(const std::string& message);

  private:
    OutOfMemoryError(vk::Result result, const std::string& message, Verbatim verbatim)
      : VulkanError(result, message, verbatim)
    {
    }
};

/** The device was lost (VK_ERROR_DEVICE_LOST): a shader may have faulted
 * or run too long. The Manager must be destroyed and created again. */
class DeviceLostError : public VulkanError
{
  public:
    using VulkanError::VulkanError;
};

/** Throws the VulkanError for `result` failing at `action`: an
 * OutOfMemoryError or DeviceLostError where the result is one of theirs
 * (what every checked Vulkan call of Kompute throws; for custom operations
 * and host Vulkan code that want the same errors). */
[[noreturn]] void
throwVulkanError(vk::Result result, const std::string& action);

/** The Vulkan loader library could not be opened. Kompute opens it at
 * run time rather than linking it, so a program starts on a machine without
 * Vulkan and gets this error from the first Manager (or describeDevices(),
 * Manager::computeQueueFamilies()). The message names the libraries tried
 * and how to install the loader; KOMPUTE_ENV_VULKAN_LOADER names another. */
class VulkanLoaderError : public Error
{
  public:
    using Error::Error;
};

/** An object was used after it (or the Manager that made it) was destroyed. */
class DestroyedError : public Error
{
  public:
    using Error::Error;
};

} // namespace kp
