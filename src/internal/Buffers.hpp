// SPDX-License-Identifier: Apache-2.0
// Creating a buffer with memory from the device's allocator: shared by
// tensors (primary, staging and upload buffers) and images (host views).
#pragma once

#include "kompute/Vulkan.hpp"

#include "internal/Owners.hpp"

namespace kp {
namespace internal {

class Device;

/** A buffer of `size` bytes bound to memory with `required` (and preferably
 * `preferred`) properties, shared between the device's queue families when
 * it has several. Throws kp::Error / kp::VulkanError naming `what`. */
BufferOwner
createBuffer(Device& device,
             vk::DeviceSize size,
             vk::BufferUsageFlags usage,
             vk::MemoryPropertyFlags required,
             vk::MemoryPropertyFlags preferred,
             const char* what);

} // namespace internal
} // namespace kp
