// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/Memory.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

/** Copies host views into device memory (the staging copy of eDevice
 * objects). Objects whose host view is the device memory need no copy. */
class OpSyncDevice : public OpBase
{
  public:
    /** Throws if the list is empty or holds a null or destroyed object. */
    OpSyncDevice(const std::vector<std::shared_ptr<Memory>>& memObjects);
    /** Range form: only tensor elements [offset, offset + count). Throws
     * kp::Error for images and for a range that is empty or not inside
     * every tensor. */
    OpSyncDevice(const std::vector<std::shared_ptr<Memory>>& memObjects,
                 uint32_t offset,
                 uint32_t count);
    ~OpSyncDevice() override;

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;
    bool declareAccesses(std::vector<MemoryAccess>& accesses) const override;

  private:
    std::vector<std::shared_ptr<Memory>> mMemObjects;
    bool mRanged = false;
    uint32_t mOffset = 0;
    uint32_t mCount = 0;
};

} // namespace kp
