// SPDX-License-Identifier: Apache-2.0
#include "internal/Allocator.hpp"

#include <algorithm>
#include <iterator>

#include "internal/Check.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

namespace {

using logger::format;

constexpr vk::DeviceSize kDefaultBlockSize = 64ull << 20;
constexpr vk::DeviceSize kMinimumBlockSize = 1ull << 20;

vk::DeviceSize
alignUp(vk::DeviceSize value, vk::DeviceSize alignment)
{
    return alignment <= 1 ? value : (value + alignment - 1) / alignment * alignment;
}

std::string
flagsName(vk::MemoryPropertyFlags flags)
{
    std::string text = vk::to_string(flags);
    return text == "{}" ? "no property flags" : text;
}

} // namespace

/** A VkDeviceMemory carved into ranges. Free ranges are kept twice: by
 * offset (to merge neighbours on free) and by size (for best fit). */
struct MemoryBlock
{
    vk::DeviceMemory memory;
    vk::DeviceSize size = 0;
    void* mapped = nullptr;
    vk::DeviceSize used = 0;
    ResourceKind kind = ResourceKind::eLinear;
    std::map<vk::DeviceSize, vk::DeviceSize> freeByOffset;
    std::multimap<vk::DeviceSize, vk::DeviceSize> freeBySize;

    void insertFree(vk::DeviceSize offset, vk::DeviceSize length)
    {
        freeByOffset.emplace(offset, length);
        freeBySize.emplace(length, offset);
    }

    void eraseFree(vk::DeviceSize offset, vk::DeviceSize length)
    {
        freeByOffset.erase(offset);
        auto range = freeBySize.equal_range(length);
        for (auto it = range.first; it != range.second; ++it) {
            if (it->second == offset) {
                freeBySize.erase(it);
                return;
            }
        }
    }

    /** Returns the aligned offset of a new range, or false if none fits. */
    bool tryAllocate(vk::DeviceSize length,
                     vk::DeviceSize alignment,
                     vk::DeviceSize* offsetOut)
    {
        for (auto it = freeBySize.lower_bound(length); it != freeBySize.end(); ++it) {
            vk::DeviceSize freeOffset = it->second;
            vk::DeviceSize freeLength = it->first;
            vk::DeviceSize aligned = alignUp(freeOffset, alignment);
            if (aligned + length > freeOffset + freeLength) {
                continue;
            }
            eraseFree(freeOffset, freeLength);
            if (aligned > freeOffset) {
                insertFree(freeOffset, aligned - freeOffset);
            }
            vk::DeviceSize end = aligned + length;
            if (end < freeOffset + freeLength) {
                insertFree(end, freeOffset + freeLength - end);
            }
            used += length;
            *offsetOut = aligned;
            return true;
        }
        return false;
    }

    void release(vk::DeviceSize offset, vk::DeviceSize length)
    {
        used -= length;
        vk::DeviceSize start = offset;
        vk::DeviceSize end = offset + length;
        auto next = freeByOffset.lower_bound(offset);
        if (next != freeByOffset.begin()) {
            auto previous = std::prev(next);
            if (previous->first + previous->second == start) {
                start = previous->first;
                eraseFree(previous->first, previous->second);
            }
        }
        next = freeByOffset.lower_bound(end);
        if (next != freeByOffset.end() && next->first == end) {
            end += next->second;
            eraseFree(next->first, next->second);
        }
        insertFree(start, end - start);
    }
};

Allocator::Allocator(vk::PhysicalDevice physicalDevice,
                     vk::Device device,
                     bool dedicatedOnly)
  : mDevice(device)
  , mDedicatedOnly(dedicatedOnly)
  , mMemoryProperties(physicalDevice.getMemoryProperties())
  , mNonCoherentAtomSize(physicalDevice.getProperties().limits.nonCoherentAtomSize)
  , mMaxAllocationSize(physicalDevice
                         .getProperties2<vk::PhysicalDeviceProperties2,
                                         vk::PhysicalDeviceMaintenance3Properties>()
                         .get<vk::PhysicalDeviceMaintenance3Properties>()
                         .maxMemoryAllocationSize)
{
    mPools.resize(mMemoryProperties.memoryTypeCount);
    mStats.resize(mMemoryProperties.memoryTypeCount);
    for (uint32_t i = 0; i < mMemoryProperties.memoryTypeCount; ++i) {
        mStats[i].memoryTypeIndex = i;
        mStats[i].heapIndex = mMemoryProperties.memoryTypes[i].heapIndex;
        mStats[i].propertyFlags = mMemoryProperties.memoryTypes[i].propertyFlags;
    }
}

Allocator::~Allocator()
{
    releaseAll();
}

bool
Allocator::isHostVisible(uint32_t memoryTypeIndex) const
{
    return static_cast<bool>(mMemoryProperties.memoryTypes[memoryTypeIndex].propertyFlags &
                             vk::MemoryPropertyFlagBits::eHostVisible);
}

vk::DeviceSize
Allocator::blockSize(uint32_t memoryTypeIndex) const
{
    uint32_t heap = mMemoryProperties.memoryTypes[memoryTypeIndex].heapIndex;
    vk::DeviceSize heapSize = mMemoryProperties.memoryHeaps[heap].size;
    // Small heaps (a 256 MiB BAR window, say) get smaller blocks so that one
    // block does not take a large share of them.
    return std::max(kMinimumBlockSize, std::min(kDefaultBlockSize, heapSize / 8));
}

int32_t
Allocator::findMemoryType(uint32_t allowedTypeBits,
                          vk::MemoryPropertyFlags required,
                          vk::MemoryPropertyFlags preferred) const
{
    int32_t fallback = -1;
    for (uint32_t i = 0; i < mMemoryProperties.memoryTypeCount; ++i) {
        if (!(allowedTypeBits & (1u << i))) {
            continue;
        }
        auto flags = mMemoryProperties.memoryTypes[i].propertyFlags;
        if ((flags & required) != required) {
            continue;
        }
        if ((flags & preferred) == preferred) {
            return static_cast<int32_t>(i);
        }
        if (fallback < 0) {
            fallback = static_cast<int32_t>(i);
        }
    }
    return fallback;
}

vk::DeviceSize
Allocator::heapAllocatedBytes(uint32_t heap) const
{
    vk::DeviceSize total = 0;
    for (const auto& type : mStats) {
        if (type.heapIndex == heap) {
            total += type.allocatedBytes;
        }
    }
    return total;
}

bool
Allocator::fits(vk::DeviceSize size, uint32_t memoryTypeIndex) const
{
    uint32_t heap = mMemoryProperties.memoryTypes[memoryTypeIndex].heapIndex;
    vk::DeviceSize heapSize = mMemoryProperties.memoryHeaps[heap].size;
    vk::DeviceSize used = heapAllocatedBytes(heap);
    return size <= mMaxAllocationSize && used <= heapSize && size <= heapSize - used;
}

void
Allocator::checkFits(vk::DeviceSize size, uint32_t memoryTypeIndex, const char* what) const
{
    if (fits(size, memoryTypeIndex)) {
        return;
    }
    uint32_t heap = mMemoryProperties.memoryTypes[memoryTypeIndex].heapIndex;
    vk::DeviceSize heapSize = mMemoryProperties.memoryHeaps[heap].size;
    std::string request = format("Allocating {} bytes of {} for {}",
                                 size,
                                 flagsName(mMemoryProperties.memoryTypes[memoryTypeIndex].propertyFlags),
                                 what);
    if (size > heapSize) {
        throw OutOfMemoryError::beforeDriver(
          format("{}: more than its memory heap {} holds ({} bytes); Kompute refuses it before "
                 "the driver sees it (VK_ERROR_OUT_OF_DEVICE_MEMORY)",
                 request,
                 heap,
                 heapSize));
    }
    if (size > mMaxAllocationSize) {
        throw OutOfMemoryError::beforeDriver(
          format("{}: more than the device's maxMemoryAllocationSize of {} bytes; Kompute "
                 "refuses it before the driver sees it (VK_ERROR_OUT_OF_DEVICE_MEMORY)",
                 request,
                 mMaxAllocationSize));
    }
    throw OutOfMemoryError::beforeDriver(
      format("{}: memory heap {} holds {} bytes and this Manager already uses {} of them; "
             "Kompute refuses it before the driver sees it (VK_ERROR_OUT_OF_DEVICE_MEMORY)",
             request,
             heap,
             heapSize,
             heapAllocatedBytes(heap)));
}

vk::DeviceMemory
Allocator::allocateDeviceMemory(vk::DeviceSize size,
                                uint32_t memoryTypeIndex,
                                const char* what,
                                void** mapped)
{
    vk::MemoryAllocateInfo info(size, memoryTypeIndex);
    vk::DeviceMemory memory;
    check(mDevice.allocateMemory(&info, nullptr, &memory),
          format("Allocating {} bytes of device memory ({}) for {}",
                 size,
                 flagsName(mMemoryProperties.memoryTypes[memoryTypeIndex].propertyFlags),
                 what));
    *mapped = nullptr;
    if (isHostVisible(memoryTypeIndex)) {
        vk::Result result = mDevice.mapMemory(memory, 0, VK_WHOLE_SIZE, {}, mapped);
        if (result != vk::Result::eSuccess) {
            mDevice.freeMemory(memory);
            check(result, format("Mapping {} bytes of memory for {}", size, what));
        }
    }
    auto& stats = mStats[memoryTypeIndex];
    stats.allocatedBytes += size;
    stats.deviceMemoryCount += 1;
    return memory;
}

void
Allocator::releaseDeviceMemory(vk::DeviceMemory memory,
                               vk::DeviceSize size,
                               uint32_t memoryTypeIndex,
                               bool mapped)
{
    if (mapped) {
        mDevice.unmapMemory(memory);
    }
    mDevice.freeMemory(memory);
    auto& stats = mStats[memoryTypeIndex];
    stats.allocatedBytes -= size;
    stats.deviceMemoryCount -= 1;
}

Allocation
Allocator::allocate(const vk::MemoryRequirements& requirements,
                    vk::MemoryPropertyFlags required,
                    vk::MemoryPropertyFlags preferred,
                    ResourceKind kind,
                    const char* what)
{
    int32_t found = findMemoryType(requirements.memoryTypeBits, required, required | preferred);
    if (found < 0) {
        throw Error(format("No memory type with {} can hold {} on this device "
                           "(choose another memory type for it)",
                           flagsName(required),
                           what));
    }
    uint32_t typeIndex = static_cast<uint32_t>(found);
    vk::DeviceSize alignment = requirements.alignment;
    bool coherent = static_cast<bool>(mMemoryProperties.memoryTypes[typeIndex].propertyFlags &
                                      vk::MemoryPropertyFlagBits::eHostCoherent);
    if (isHostVisible(typeIndex) && !coherent) {
        // Flushes work on whole atoms: keep neighbours out of ours.
        alignment = std::max(alignment, mNonCoherentAtomSize);
    }
    vk::DeviceSize size = alignUp(requirements.size, alignment);

    std::lock_guard<std::mutex> lock(mMutex);
    Allocation allocation;
    allocation.memoryTypeIndex = typeIndex;
    allocation.size = size;
    auto& stats = mStats[typeIndex];

    vk::DeviceSize block = blockSize(typeIndex);
    checkFits(size, typeIndex, what);
    bool dedicated = mDedicatedOnly || size > block / 2;
    MemoryBlock* chosen = nullptr;
    vk::DeviceSize offset = 0;
    auto& pool = mPools[typeIndex][static_cast<size_t>(kind)];
    if (!dedicated) {
        for (auto& candidate : pool.blocks) {
            if (candidate->size - candidate->used >= size &&
                candidate->tryAllocate(size, alignment, &offset)) {
                chosen = candidate.get();
                break;
            }
        }
        // No room in the heap for another block, but maybe for this alone.
        dedicated = chosen == nullptr && !fits(block, typeIndex);
    }
    if (dedicated) {
        allocation.memory = allocateDeviceMemory(size, typeIndex, what, &allocation.mapped);
    } else {
        if (chosen == nullptr) {
            auto fresh = std::make_unique<MemoryBlock>();
            fresh->memory = allocateDeviceMemory(block, typeIndex, what, &fresh->mapped);
            fresh->size = block;
            fresh->kind = kind;
            fresh->insertFree(0, block);
            fresh->tryAllocate(size, alignment, &offset);
            chosen = fresh.get();
            pool.blocks.push_back(std::move(fresh));
        }
        allocation.memory = chosen->memory;
        allocation.offset = offset;
        allocation.block = chosen;
        if (chosen->mapped != nullptr) {
            allocation.mapped = static_cast<char*>(chosen->mapped) + offset;
        }
    }
    stats.usedBytes += size;
    stats.peakUsedBytes = std::max(stats.peakUsedBytes, stats.usedBytes);
    stats.allocationCount += 1;
    return allocation;
}

void
Allocator::free(Allocation& allocation)
{
    if (!allocation.memory) {
        return;
    }
    std::lock_guard<std::mutex> lock(mMutex);
    auto& stats = mStats[allocation.memoryTypeIndex];
    stats.usedBytes -= allocation.size;
    stats.allocationCount -= 1;
    if (allocation.block == nullptr) {
        releaseDeviceMemory(allocation.memory,
                            allocation.size,
                            allocation.memoryTypeIndex,
                            allocation.mapped != nullptr);
    } else {
        MemoryBlock* block = allocation.block;
        block->release(allocation.offset, allocation.size);
        if (block->used == 0) {
            // Keep one empty block per pool so that create/destroy loops do
            // not allocate and free VkDeviceMemory every time (none once
            // released).
            auto& blocks = mPools[allocation.memoryTypeIndex][static_cast<size_t>(block->kind)].blocks;
            size_t emptyBlocks = static_cast<size_t>(std::count_if(
              blocks.begin(), blocks.end(), [](const auto& b) { return b->used == 0; }));
            if (emptyBlocks > 1 || mReleased) {
                auto it = std::find_if(blocks.begin(), blocks.end(), [block](const auto& b) {
                    return b.get() == block;
                });
                releaseDeviceMemory(block->memory,
                                    block->size,
                                    allocation.memoryTypeIndex,
                                    block->mapped != nullptr);
                blocks.erase(it);
            }
        }
    }
    allocation = Allocation{};
}

MemoryStats
Allocator::stats() const
{
    std::lock_guard<std::mutex> lock(mMutex);
    MemoryStats result;
    result.memoryTypes = mStats;
    return result;
}

void
Allocator::releaseAll()
{
    std::lock_guard<std::mutex> lock(mMutex);
    mReleased = true;
    for (uint32_t type = 0; type < mPools.size(); ++type) {
        for (auto& pool : mPools[type]) {
            auto kept = pool.blocks.begin();
            for (auto& block : pool.blocks) {
                if (block->used != 0) {
                    *kept++ = std::move(block);
                    continue;
                }
                releaseDeviceMemory(block->memory, block->size, type, block->mapped != nullptr);
            }
            pool.blocks.erase(kept, pool.blocks.end());
        }
    }
}

bool
Allocator::hasLiveAllocations() const
{
    std::lock_guard<std::mutex> lock(mMutex);
    for (const auto& type : mStats) {
        if (type.allocationCount != 0) {
            return true;
        }
    }
    return false;
}

} // namespace internal
} // namespace kp
