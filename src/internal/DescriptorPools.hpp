// SPDX-License-Identifier: Apache-2.0
// Descriptor sets for algorithms, carved out of a few shared pools instead
// of one pool per algorithm.
#pragma once

#include <mutex>
#include <vector>

#include "kompute/Vulkan.hpp"

#include "internal/Owners.hpp"

namespace kp {
namespace internal {

class DescriptorPools
{
  public:
    DescriptorPools(const Device* context, vk::Device device)
      : mContext(context)
      , mDevice(device)
    {
    }
    ~DescriptorPools();
    DescriptorPools(const DescriptorPools&) = delete;
    DescriptorPools& operator=(const DescriptorPools&) = delete;

    /** A set of `layout`, which holds this many buffers and images. */
    DescriptorSetAllocation allocate(vk::DescriptorSetLayout layout,
                                     uint32_t storageBuffers,
                                     uint32_t storageImages);
    /** Returns the set to its pool; does nothing once releaseAll() freed the
     * pools (the sets went with them). */
    void free(DescriptorSetAllocation& allocation);
    /** Destroys every pool (and so every set). */
    void releaseAll();

  private:
    DescriptorPoolOwner createPool(uint32_t sets, uint32_t storageBuffers, uint32_t storageImages);

    const Device* mContext;
    vk::Device mDevice;
    std::mutex mMutex;
    std::vector<DescriptorPoolOwner> mSharedPools;
    std::vector<DescriptorPoolOwner> mDedicatedPools;
    bool mReleased = false;
};

} // namespace internal
} // namespace kp
