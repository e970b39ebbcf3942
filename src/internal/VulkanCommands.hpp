// SPDX-License-Identifier: Apache-2.0
// The Vulkan commands libkompute calls: its dispatcher's table.
//
// Inside the library every vk:: call and every C call goes through
// kp::internal::vulkanCommands (VULKAN_HPP_DEFAULT_DISPATCHER there, see
// kompute/Vulkan.hpp), filled once from the loader that VulkanLoader.cpp
// opens. It is a table of the library's own rather than Vulkan-Hpp's
// vk::DispatchLoaderDynamic, because that class's layout depends on NDEBUG
// and its member functions and the vk:: methods instantiated for it are
// inline: a program built otherwise (Debug against a Release library, say)
// that uses it too would share those functions with the library, and one of
// the two would read the other's table at the wrong offsets. Only the
// commands listed here exist: a vk:: call of another one does not compile
// until it is added.
#pragma once

#include <cstddef>

#include <vulkan/vulkan.h>

// Commands without a dispatchable object, looked up through
// vkGetInstanceProcAddr(NULL, name).
#define KOMPUTE_VULKAN_GLOBAL_COMMANDS(X)                                                          \
    X(vkCreateInstance)                                                                            \
    X(vkEnumerateInstanceExtensionProperties)                                                      \
    X(vkEnumerateInstanceLayerProperties)                                                          \
    X(vkEnumerateInstanceVersion) /* null in a Vulkan 1.0 loader */

// Vulkan 1.0 and 1.1 instance and device commands: the loader's exported
// entry points, which every loader of Vulkan 1.1 exports.
#define KOMPUTE_VULKAN_COMMANDS(X)                                                                 \
    X(vkEnumeratePhysicalDevices)                                                                  \
    X(vkEnumerateDeviceExtensionProperties)                                                        \
    X(vkGetPhysicalDeviceFeatures)                                                                 \
    X(vkGetPhysicalDeviceFeatures2)                                                                \
    X(vkGetPhysicalDeviceFormatProperties)                                                         \
    X(vkGetPhysicalDeviceImageFormatProperties)                                                    \
    X(vkGetPhysicalDeviceMemoryProperties)                                                         \
    X(vkGetPhysicalDeviceProperties)                                                               \
    X(vkGetPhysicalDeviceProperties2)                                                              \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                                    \
    X(vkCreateDevice)                                                                              \
    X(vkDestroyDevice)                                                                             \
    X(vkDeviceWaitIdle)                                                                            \
    X(vkGetDeviceQueue)                                                                            \
    X(vkQueueSubmit)                                                                               \
    X(vkQueueWaitIdle)                                                                             \
    X(vkAllocateMemory)                                                                            \
    X(vkFreeMemory)                                                                                \
    X(vkMapMemory)                                                                                 \
    X(vkUnmapMemory)                                                                               \
    X(vkCreateBuffer)                                                                              \
    X(vkDestroyBuffer)                                                                             \
    X(vkBindBufferMemory)                                                                          \
    X(vkGetBufferMemoryRequirements)                                                               \
    X(vkCreateImage)                                                                               \
    X(vkDestroyImage)                                                                              \
    X(vkBindImageMemory)                                                                           \
    X(vkGetImageMemoryRequirements)                                                                \
    X(vkCreateImageView)                                                                           \
    X(vkDestroyImageView)                                                                          \
    X(vkCreateShaderModule)                                                                        \
    X(vkDestroyShaderModule)                                                                       \
    X(vkCreatePipelineCache)                                                                       \
    X(vkDestroyPipelineCache)                                                                      \
    X(vkGetPipelineCacheData)                                                                      \
    X(vkMergePipelineCaches)                                                                       \
    X(vkCreatePipelineLayout)                                                                      \
    X(vkDestroyPipelineLayout)                                                                     \
    X(vkCreateComputePipelines)                                                                    \
    X(vkDestroyPipeline)                                                                           \
    X(vkCreateDescriptorSetLayout)                                                                 \
    X(vkDestroyDescriptorSetLayout)                                                                \
    X(vkCreateDescriptorPool)                                                                      \
    X(vkDestroyDescriptorPool)                                                                     \
    X(vkAllocateDescriptorSets)                                                                    \
    X(vkFreeDescriptorSets)                                                                        \
    X(vkUpdateDescriptorSets)                                                                      \
    X(vkCreateCommandPool)                                                                         \
    X(vkDestroyCommandPool)                                                                        \
    X(vkResetCommandPool)                                                                          \
    X(vkAllocateCommandBuffers)                                                                    \
    X(vkFreeCommandBuffers)                                                                        \
    X(vkBeginCommandBuffer)                                                                        \
    X(vkEndCommandBuffer)                                                                          \
    X(vkResetCommandBuffer)                                                                        \
    X(vkCreateFence)                                                                               \
    X(vkDestroyFence)                                                                              \
    X(vkGetFenceStatus)                                                                            \
    X(vkResetFences)                                                                               \
    X(vkWaitForFences)                                                                             \
    X(vkCreateSemaphore)                                                                           \
    X(vkDestroySemaphore)                                                                          \
    X(vkCreateQueryPool)                                                                           \
    X(vkDestroyQueryPool)                                                                          \
    X(vkGetQueryPoolResults)                                                                       \
    X(vkCmdBindDescriptorSets)                                                                     \
    X(vkCmdBindPipeline)                                                                           \
    X(vkCmdCopyBuffer)                                                                             \
    X(vkCmdCopyBufferToImage)                                                                      \
    X(vkCmdCopyImage)                                                                              \
    X(vkCmdCopyImageToBuffer)                                                                      \
    X(vkCmdDispatch)                                                                               \
    X(vkCmdPipelineBarrier)                                                                        \
    X(vkCmdPushConstants)                                                                          \
    X(vkCmdResetQueryPool)                                                                         \
    X(vkCmdWriteTimestamp)

// Vulkan 1.2 commands (timeline semaphores): null in a loader of Vulkan 1.1,
// where Kompute then does without timeline semaphores.
#define KOMPUTE_VULKAN_1_2_COMMANDS(X)                                                             \
    X(vkGetSemaphoreCounterValue)                                                                  \
    X(vkWaitSemaphores)

namespace kp {
namespace internal {

struct VulkanCommands
{
#define KOMPUTE_VULKAN_COMMAND_MEMBER(name) PFN_##name name = nullptr;
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    KOMPUTE_VULKAN_GLOBAL_COMMANDS(KOMPUTE_VULKAN_COMMAND_MEMBER)
    KOMPUTE_VULKAN_COMMANDS(KOMPUTE_VULKAN_COMMAND_MEMBER)
    KOMPUTE_VULKAN_1_2_COMMANDS(KOMPUTE_VULKAN_COMMAND_MEMBER)
#undef KOMPUTE_VULKAN_COMMAND_MEMBER

    /** What Vulkan-Hpp's debug assertions ask every dispatcher. */
    std::size_t getVkHeaderVersion() const { return VK_HEADER_VERSION; }
};

} // namespace internal
} // namespace kp
