// SPDX-License-Identifier: Apache-2.0
// Device memory sub-allocation.
//
// Vulkan drivers limit the number of VkDeviceMemory objects (4096 on many),
// and each allocation is a slow kernel call, so memory objects are carved out
// of large blocks, one pool per memory type (and per resource kind: linear
// buffers and optimal-tiling images never share a block, which keeps
// bufferImageGranularity out of the picture). Host-visible blocks are mapped
// once, for their whole life. Requests larger than half a block get a
// dedicated VkDeviceMemory. Free ranges are coalesced and reused best-fit.
#pragma once

#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kompute/Vulkan.hpp"

#include "kompute/Manager.hpp"

namespace kp {
namespace internal {

struct MemoryBlock;

/** One sub-allocation (or a dedicated allocation). */
struct Allocation
{
    vk::DeviceMemory memory;
    vk::DeviceSize offset = 0;
    vk::DeviceSize size = 0;
    uint32_t memoryTypeIndex = 0;
    /** Host address of `offset`, or null when the memory is not mapped. */
    void* mapped = nullptr;
    /** Null for a dedicated allocation. */
    MemoryBlock* block = nullptr;
};

enum class ResourceKind
{
    eLinear,  ///< buffers and linear images
    eOptimal, ///< optimal-tiling images
};

class Allocator
{
  public:
    /** With `dedicatedOnly`, every request gets its own VkDeviceMemory
     * (for standalone objects that would waste a whole block). */
    Allocator(vk::PhysicalDevice physicalDevice, vk::Device device, bool dedicatedOnly);
    ~Allocator();
    Allocator(const Allocator&) = delete;
    Allocator& operator=(const Allocator&) = delete;

    /** Finds a memory type allowed by `requirements` that has all of
     * `required` (and, among those, preferably all of `preferred`), then
     * allocates from it. Host-visible memory comes back mapped. Throws
     * kp::Error when no memory type fits, kp::OutOfMemoryError when the
     * request exceeds its heap or maxMemoryAllocationSize (before the driver
     * sees it) and kp::VulkanError when the driver refuses; `what` names the
     * object in those messages. */
    Allocation allocate(const vk::MemoryRequirements& requirements,
                        vk::MemoryPropertyFlags required,
                        vk::MemoryPropertyFlags preferred,
                        ResourceKind kind,
                        const char* what);
    void free(Allocation& allocation);

    /** Memory type index chosen for these flags, or -1 if none fits. */
    int32_t findMemoryType(uint32_t allowedTypeBits,
                           vk::MemoryPropertyFlags required,
                           vk::MemoryPropertyFlags preferred) const;
    const vk::PhysicalDeviceMemoryProperties& memoryProperties() const
    {
        return mMemoryProperties;
    }

    MemoryStats stats() const;
    /** Frees every block that holds no live allocation, and afterwards
     * frees each remaining block once its last allocation is freed: the
     * live ones at this point are host views kept past destroy() (see
     * Memory::keepHostViewUntilDeleted). */
    void releaseAll();
    /** Whether any allocation is live (after releaseAll: any kept view). */
    bool hasLiveAllocations() const;

    /** Block size used for a memory type (capped by its heap's size). */
    vk::DeviceSize blockSize(uint32_t memoryTypeIndex) const;

  private:
    struct Pool
    {
        std::vector<std::unique_ptr<MemoryBlock>> blocks;
    };

    vk::DeviceMemory allocateDeviceMemory(vk::DeviceSize size,
                                          uint32_t memoryTypeIndex,
                                          const char* what,
                                          void** mapped);
    void releaseDeviceMemory(vk::DeviceMemory memory,
                             vk::DeviceSize size,
                             uint32_t memoryTypeIndex,
                             bool mapped);
    bool isHostVisible(uint32_t memoryTypeIndex) const;
    /** Bytes of VkDeviceMemory this allocator holds in `heap`. */
    vk::DeviceSize heapAllocatedBytes(uint32_t heap) const;
    /** Throws kp::OutOfMemoryError, before the driver is asked, when
     * `size` bytes of memory type `memoryTypeIndex` cannot be allocated:
     * more than maxMemoryAllocationSize, or more than its heap has left. */
    void checkFits(vk::DeviceSize size, uint32_t memoryTypeIndex, const char* what) const;
    bool fits(vk::DeviceSize size, uint32_t memoryTypeIndex) const;

    vk::Device mDevice;
    bool mDedicatedOnly;
    vk::PhysicalDeviceMemoryProperties mMemoryProperties;
    vk::DeviceSize mNonCoherentAtomSize;
    /** VkPhysicalDeviceMaintenance3Properties::maxMemoryAllocationSize. */
    vk::DeviceSize mMaxAllocationSize;
    mutable std::mutex mMutex;
    // [memoryTypeIndex][ResourceKind]
    std::vector<std::array<Pool, 2>> mPools;
    std::vector<MemoryTypeStats> mStats;
    bool mReleased = false;
};

} // namespace internal
} // namespace kp
