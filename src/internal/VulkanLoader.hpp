// SPDX-License-Identifier: Apache-2.0
// The Vulkan loader, opened at run time.
//
// libkompute does not link libvulkan: at the first call that needs Vulkan it
// opens the loader library with vk::DynamicLoader and fills the library's
// table of commands (kp::internal::vulkanCommands, VULKAN_HPP_DEFAULT_DISPATCHER
// inside the library; see VulkanCommands.hpp), through which every Vulkan
// call of the library goes. A program linked against Kompute thus starts on
// a machine without Vulkan, and that first call throws
// kp::VulkanLoaderError. A failed attempt is not remembered: the next call
// tries again. Once a loader is open, it stays open and the table never
// changes.
#pragma once

#include <string>

namespace kp {
namespace internal {

/** Makes sure the Vulkan loader is open and the library's table filled;
 * throws kp::VulkanLoaderError (naming what was tried and how to fix it)
 * otherwise. Thread-safe; one atomic load once the loader is open. Every
 * Kompute entry point that reaches Vulkan without a Manager calls it first. */
void
requireVulkan();

/** The file the loader was opened from (its full path where the platform
 * tells it); empty while none is open. */
std::string
vulkanLoaderPath();

} // namespace internal
} // namespace kp
