// SPDX-License-Identifier: Apache-2.0
// Exceptions thrown by Kompute. All derive from std::runtime_error, so code
// written for upstream that catches std::runtime_error keeps working.
#pragma once

#include <stdexcept>
#include <string>

#include <vulkan/vulkan.hpp>

namespace kp {

/** Any error raised by Kompute: misuse, bad input, or a failed Vulkan call. */
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
    VulkanError(vk::Result result, const std::string& action);
    vk::Result result() const noexcept { return mResult; }

  private:
    vk::Result mResult;
};

/** An object was used after it (or the Manager that made it) was destroyed. */
class DestroyedError : public Error
{
  public:
    using Error::Error;
};

} // namespace kp
