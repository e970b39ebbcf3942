// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/Memory.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

/** Records one pipeline barrier per object, on its primary memory (or on its
 * staging memory with barrierOnPrimary = false), with the given masks,
 * exactly as asked, in a Sequence too (which needs none of them between
 * operations that declare their accesses). */
class OpMemoryBarrier : public OpBase
{
  public:
    /** Barriers on `memObjects` (at least one, none null: kp::Error
     * otherwise) with these masks. The objects are held by the operation. */
    OpMemoryBarrier(const std::vector<std::shared_ptr<Memory>>& memObjects,
                    const vk::AccessFlags& srcAccessMask,
                    const vk::AccessFlags& dstAccessMask,
                    const vk::PipelineStageFlags& srcStageMask,
                    const vk::PipelineStageFlags& dstStageMask,
                    bool barrierOnPrimary = true);
    ~OpMemoryBarrier() override;

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;
    bool declareAccesses(std::vector<MemoryAccess>& accesses) const override;

  private:
    std::vector<std::shared_ptr<Memory>> mMemObjects;
    vk::AccessFlags mSrcAccessMask;
    vk::AccessFlags mDstAccessMask;
    vk::PipelineStageFlags mSrcStageMask;
    vk::PipelineStageFlags mDstStageMask;
    bool mBarrierOnPrimary;
};

} // namespace kp
