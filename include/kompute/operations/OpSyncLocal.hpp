// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/Memory.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

/** Copies device memory back into the host views (the staging copy of
 * eDevice objects), ready to read once the sequence has completed. */
class OpSyncLocal : public OpBase
{
  public:
    /** Throws if the list is empty or holds a null or destroyed object. */
    OpSyncLocal(const std::vector<std::shared_ptr<Memory>>& memObjects);
    /** Range form: only tensor elements [offset, offset + count). Throws
     * kp::Error for images and for a range that is empty or not inside
     * every tensor. */
    OpSyncLocal(const std::vector<std::shared_ptr<Memory>>& memObjects,
                 uint32_t offset,
                 uint32_t count);
    ~OpSyncLocal() override;

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
