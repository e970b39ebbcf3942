// SPDX-License-Identifier: Apache-2.0
#include "internal/DescriptorPools.hpp"

#include <algorithm>

#include "internal/Check.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace internal {

namespace {
// A shared pool holds this many sets of up to this many descriptors each;
// larger sets get a pool of their own.
constexpr uint32_t kSetsPerPool = 128;
constexpr uint32_t kBuffersPerSet = 8;
constexpr uint32_t kImagesPerSet = 4;
}

DescriptorPools::~DescriptorPools()
{
    releaseAll();
}

DescriptorPoolOwner
DescriptorPools::createPool(uint32_t sets, uint32_t storageBuffers, uint32_t storageImages)
{
    std::vector<vk::DescriptorPoolSize> sizes;
    if (storageBuffers > 0) {
        sizes.emplace_back(vk::DescriptorType::eStorageBuffer, storageBuffers);
    }
    if (storageImages > 0) {
        sizes.emplace_back(vk::DescriptorType::eStorageImage, storageImages);
    }
    vk::DescriptorPoolCreateInfo info(vk::DescriptorPoolCreateFlagBits::eFreeDescriptorSet,
                                      sets,
                                      static_cast<uint32_t>(sizes.size()),
                                      sizes.data());
    vk::DescriptorPool pool;
    check(mDevice.createDescriptorPool(&info, nullptr, &pool), "Creating a descriptor pool");
    return DescriptorPoolOwner(mContext, pool);
}

DescriptorSetAllocation
DescriptorPools::allocate(vk::DescriptorSetLayout layout,
                          uint32_t storageBuffers,
                          uint32_t storageImages)
{
    std::lock_guard<std::mutex> lock(mMutex);
    if (mReleased) {
        throw DestroyedError("Allocating a descriptor set: the device was destroyed");
    }
    DescriptorSetAllocation allocation;
    vk::DescriptorSetAllocateInfo info({}, 1, &layout);
    if (storageBuffers > kBuffersPerSet || storageImages > kImagesPerSet) {
        DescriptorPoolOwner pool = createPool(1, storageBuffers, storageImages);
        info.descriptorPool = pool.get();
        check(mDevice.allocateDescriptorSets(&info, &allocation.set), "Allocating a descriptor set");
        allocation.pool = pool.get();
        mDedicatedPools.push_back(std::move(pool));
        return allocation;
    }
    // Newest pool first: older ones are usually full.
    for (auto it = mSharedPools.rbegin(); it != mSharedPools.rend(); ++it) {
        info.descriptorPool = it->get();
        vk::Result result = mDevice.allocateDescriptorSets(&info, &allocation.set);
        if (result == vk::Result::eSuccess) {
            allocation.pool = it->get();
            return allocation;
        }
        if (result != vk::Result::eErrorOutOfPoolMemory &&
            result != vk::Result::eErrorFragmentedPool) {
            check(result, "Allocating a descriptor set");
        }
    }
    DescriptorPoolOwner pool = createPool(kSetsPerPool,
                                          kSetsPerPool * kBuffersPerSet,
                                          kSetsPerPool * kImagesPerSet);
    info.descriptorPool = pool.get();
    check(mDevice.allocateDescriptorSets(&info, &allocation.set), "Allocating a descriptor set");
    allocation.pool = pool.get();
    mSharedPools.push_back(std::move(pool));
    return allocation;
}

void
DescriptorPools::free(DescriptorSetAllocation& allocation)
{
    if (!allocation.set) {
        return;
    }
    std::lock_guard<std::mutex> lock(mMutex);
    if (mReleased) {
        allocation = DescriptorSetAllocation{};
        return;
    }
    auto dedicated = std::find_if(mDedicatedPools.begin(),
                                  mDedicatedPools.end(),
                                  [&](const DescriptorPoolOwner& pool) {
                                      return pool.get() == allocation.pool;
                                  });
    if (dedicated != mDedicatedPools.end()) {
        mDedicatedPools.erase(dedicated); // the set goes with its pool
    } else {
        VkDescriptorSet set = allocation.set;
        VkResult result = VULKAN_HPP_DEFAULT_DISPATCHER.vkFreeDescriptorSets(mDevice, allocation.pool, 1, &set);
        if (result != VK_SUCCESS) {
            KP_LOG_WARN("Freeing a descriptor set failed: {}",
                        vk::to_string(static_cast<vk::Result>(result)));
        }
    }
    allocation = DescriptorSetAllocation{};
}

void
DescriptorPools::releaseAll()
{
    std::lock_guard<std::mutex> lock(mMutex);
    mSharedPools.clear();
    mDedicatedPools.clear();
    mReleased = true;
}

} // namespace internal
} // namespace kp
