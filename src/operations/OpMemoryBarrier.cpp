// SPDX-License-Identifier: Apache-2.0
#include "kompute/operations/OpMemoryBarrier.hpp"

#include "internal/OpChecks.hpp"

namespace kp {

OpMemoryBarrier::OpMemoryBarrier(const std::vector<std::shared_ptr<Memory>>& memObjects,
                                 const vk::AccessFlags& srcAccessMask,
                                 const vk::AccessFlags& dstAccessMask,
                                 const vk::PipelineStageFlags& srcStageMask,
                                 const vk::PipelineStageFlags& dstStageMask,
                                 bool barrierOnPrimary)
  : mMemObjects(memObjects)
  , mSrcAccessMask(srcAccessMask)
  , mDstAccessMask(dstAccessMask)
  , mSrcStageMask(srcStageMask)
  , mDstStageMask(dstStageMask)
  , mBarrierOnPrimary(barrierOnPrimary)
{
    internal::checkMemObjects(mMemObjects, 1, "OpMemoryBarrier");
}

OpMemoryBarrier::~OpMemoryBarrier() = default;

void
OpMemoryBarrier::record(const vk::CommandBuffer& commandBuffer)
{
    internal::checkMemObjects(mMemObjects, 1, "OpMemoryBarrier");
    for (const auto& object : mMemObjects) {
        if (mBarrierOnPrimary) {
            object->recordPrimaryMemoryBarrier(
              commandBuffer, mSrcAccessMask, mDstAccessMask, mSrcStageMask, mDstStageMask);
        } else {
            object->recordStagingMemoryBarrier(
              commandBuffer, mSrcAccessMask, mDstAccessMask, mSrcStageMask, mDstStageMask);
        }
    }
}

bool
OpMemoryBarrier::declareAccesses(std::vector<MemoryAccess>& accesses) const
{
    // A barrier touches no memory: the objects are only named.
    for (const auto& object : mMemObjects) {
        if (object) {
            accesses.push_back(MemoryAccess::reference(*object));
        }
    }
    return true;
}

void
OpMemoryBarrier::preEval(const vk::CommandBuffer&)
{
    // The recorded barriers name these objects' buffers (see OpCopy).
    internal::checkMemObjects(mMemObjects, 1, "OpMemoryBarrier");
}

void
OpMemoryBarrier::postEval(const vk::CommandBuffer&)
{
}

} // namespace kp
