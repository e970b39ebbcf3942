// SPDX-License-Identifier: Apache-2.0
#include "internal/Buffers.hpp"

#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

using logger::format;

CreatedBuffer
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
    CreatedBuffer created;
    check(vkDevice.createBuffer(&info, nullptr, &created.buffer),
          format("Creating the {} ({} bytes)", what, size));
    try {
        vk::MemoryRequirements requirements = vkDevice.getBufferMemoryRequirements(created.buffer);
        created.allocation = device.allocator().allocate(
          requirements, required, preferred, ResourceKind::eLinear, what);
        VkResult bound = vkBindBufferMemory(
          vkDevice, created.buffer, created.allocation.memory, created.allocation.offset);
        if (bound != VK_SUCCESS) {
            device.allocator().free(created.allocation);
            check(bound, format("Binding memory to the {}", what));
        }
    } catch (...) {
        vkDevice.destroyBuffer(created.buffer);
        throw;
    }
    return created;
}

} // namespace internal
} // namespace kp
