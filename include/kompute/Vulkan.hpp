// SPDX-License-Identifier: Apache-2.0
// Vulkan-Hpp as Kompute's headers include it, and the Vulkan loader that
// Kompute opens at run time.
//
// libkompute links no libvulkan: it opens the loader at its first call that
// needs Vulkan, and every Vulkan call it makes goes through a table of its
// own (not Vulkan-Hpp's default dispatcher, which stays the program's). A
// program's own vk:: calls use Vulkan-Hpp as the program configures it: by
// default its static dispatch, which needs libvulkan linked. A program that
// links no loader makes them through a vk::DispatchLoaderDynamic of its own,
// filled from the loader Kompute opened by kp::loadVulkanDispatcher().
#pragma once

#if defined(KOMPUTE_BUILDING_LIBRARY)
// Inside libkompute every vk:: call defaults to the library's own table of
// commands (src/internal/VulkanCommands.hpp), declared before Vulkan-Hpp
// names it.
namespace kp {
namespace internal {
struct VulkanCommands;
extern VulkanCommands vulkanCommands;
}
}
#ifndef VULKAN_HPP_DISPATCH_LOADER_DYNAMIC
#define VULKAN_HPP_DISPATCH_LOADER_DYNAMIC 1
#endif
#define VULKAN_HPP_DEFAULT_DISPATCHER ::kp::internal::vulkanCommands
#define VULKAN_HPP_DEFAULT_DISPATCHER_TYPE ::kp::internal::VulkanCommands
#include <vulkan/vulkan.hpp>
#include "internal/VulkanCommands.hpp"
#else
#include <vulkan/vulkan.hpp>
#endif

namespace kp {

/**
 * vkGetInstanceProcAddr of the Vulkan loader Kompute opened: the
 * system's libvulkan, or the library KOMPUTE_ENV_VULKAN_LOADER names.
 * Throws kp::VulkanLoaderError where there is none, as the first Manager
 * would.
 */
PFN_vkGetInstanceProcAddr
vulkanGetInstanceProcAddr();

namespace internal {

/** The loader's exported entry point `name` (null where it exports none);
 * the instance is ignored. For loadVulkanDispatcher(). */
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
vulkanExportedCommand(VkInstance instance, const char* name);

} // namespace internal

/**
 * Fills a dispatcher of the program's own with the loader Kompute opened, as
 * Kompute fills its own: the global commands, and every command the
 * loader exports, which are the loader's trampolines and so serve every
 * instance and every device of the process, Kompute's and the program's.
 * Extension commands are not exported: get them per instance
 * (`dispatcher.vkGetInstanceProcAddr(instance, name)`). Then
 * `cmd.fillBuffer(buffer, 0, size, 0, dispatcher)`, or, with
 * VULKAN_HPP_DISPATCH_LOADER_DYNAMIC=1 and the program's
 * VULKAN_HPP_DEFAULT_DISPATCH_LOADER_DYNAMIC_STORAGE,
 * `kp::loadVulkanDispatcher(VULKAN_HPP_DEFAULT_DISPATCHER)` once at start
 * and plain vk:: calls: the program needs no libvulkan. Inline, so that the
 * dispatcher has the program's layout (Vulkan-Hpp's depends on NDEBUG).
 * Throws kp::VulkanLoaderError where there is no loader.
 */
inline void
loadVulkanDispatcher(vk::DispatchLoaderDynamic& dispatcher)
{
    PFN_vkGetInstanceProcAddr getInstanceProcAddr = vulkanGetInstanceProcAddr();
    dispatcher.init(getInstanceProcAddr); // the global commands
    // Every other command: Vulkan-Hpp looks them up through the instance's
    // vkGetInstanceProcAddr, here the loader's exports.
    dispatcher.vkGetInstanceProcAddr = internal::vulkanExportedCommand;
    dispatcher.init(vk::Instance());
    dispatcher.vkGetInstanceProcAddr = getInstanceProcAddr;
}

} // namespace kp
