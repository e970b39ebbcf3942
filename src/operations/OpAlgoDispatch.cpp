// SPDX-License-Identifier: Apache-2.0
#include "kompute/operations/OpAlgoDispatch.hpp"

#include "internal/Batches.hpp"
#include "internal/Barriers.hpp"
#include "kompute/Errors.hpp"

namespace kp {

OpAlgoDispatch::OpAlgoDispatch(const std::shared_ptr<Algorithm>& algorithm,
                               const ConstantBytes& pushConstants)
  : mAlgorithm(algorithm)
  , mPushConstants(pushConstants)
{
    if (!mAlgorithm) {
        throw Error("OpAlgoDispatch was given a null algorithm");
    }
}

OpAlgoDispatch::~OpAlgoDispatch() = default;

void
OpAlgoDispatch::record(const vk::CommandBuffer& commandBuffer)
{
    mAlgorithm->checkUsable("Recording OpAlgoDispatch");
    if (!mPushConstants.empty()) {
        mAlgorithm->setPushConstants(mPushConstants);
    }
    if (!internal::SequenceRecordingScope::orders(this)) {
        // Recorded outside a sequence, which would order it: after
        // everything before it.
        internal::recordBarrierBefore(commandBuffer,
                                      vk::PipelineStageFlagBits::eComputeShader,
                                      vk::AccessFlagBits::eShaderRead |
                                        vk::AccessFlagBits::eShaderWrite);
    }
    mAlgorithm->recordBindCore(commandBuffer);
    mAlgorithm->recordBindPush(commandBuffer);
    mAlgorithm->recordDispatch(commandBuffer);
    mRecordedGeneration = mAlgorithm->generation();
}

void
OpAlgoDispatch::preEval(const vk::CommandBuffer&)
{
    // The recorded commands reference the algorithm's pipeline and the
    // buffers of its memory objects: none may have been destroyed since.
    mAlgorithm->checkUsable("Evaluating OpAlgoDispatch");
}

void
OpAlgoDispatch::postEval(const vk::CommandBuffer&)
{
}

bool
OpAlgoDispatch::declareAccesses(std::vector<MemoryAccess>& accesses) const
{
    const auto& objects = mAlgorithm->getMemObjects();
    for (uint32_t i = 0; i < objects.size(); ++i) {
        if (!objects[i]) {
            continue;
        }
        MemoryAccess access = MemoryAccess::shaderReadWrite(*objects[i]);
        access.access = mAlgorithm->isInit() ? mAlgorithm->getBindingAccess(i) : access.access;
        accesses.push_back(access);
    }
    return true;
}

bool
OpAlgoDispatch::needsRerecord() const
{
    return mAlgorithm->generation() != mRecordedGeneration;
}

} // namespace kp
