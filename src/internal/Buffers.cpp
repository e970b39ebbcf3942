// SPDX-License-Identifier: Apache-2.0
#include "internal/Buffers.hpp"

#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

using logger::format;

BufferOwner
createBuffer(Device& device,
             vk::DeviceSize size,
             vk::BufferUsageFlags usage,
             vk::MemoryPropertyFlags required,
             vk::MemoryPropertyFlags preferred,
             const char* what)
{
    vk::Device vkDevice = device.device();
    vk::BufferCreateInfo info({}, size, usage, vk::SharingMode::eExclusive);
    const auto& families = device.queueFamilies();
    if (families.size() > 1) {
        info.sharingMode = vk::SharingMode::eConcurrent;
        info.queueFamilyIndexCount = static_cast<uint32_t>(families.size());
        info.pQueueFamilyIndices = families.data();
    }
    vk::Buffer buffer;
    check(vkDevice.createBuffer(&info, nullptr, &buffer),
          format("Creating the {} ({} bytes)", what, size));
    BufferOwner owner(&device, buffer, Allocation{});
    vk::MemoryRequirements requirements = vkDevice.getBufferMemoryRequirements(buffer);
    owner.adoptMemory(device.allocator().allocate(
      requirements, required, preferred, ResourceKind::eLinear, what));
    const Allocation& allocation = owner.allocation();
    check(VULKAN_HPP_DEFAULT_DISPATCHER.vkBindBufferMemory(vkDevice, buffer, allocation.memory, allocation.offset),
          format("Binding memory to the {}", what));
    return owner;
}

} // namespace internal
} // namespace kp
