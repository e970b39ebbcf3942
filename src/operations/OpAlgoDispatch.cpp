// SPDX-License-Identifier: Apache-2.0
#include "kompute/operations/OpAlgoDispatch.hpp"

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
    internal::recordBarrierBefore(commandBuffer,
                                  vk::PipelineStageFlagBits::eComputeShader,
                                  vk::AccessFlagBits::eShaderRead |
                                    vk::AccessFlagBits::eShaderWrite);
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
OpAlgoDispatch::needsRerecord() const
{
    return mAlgorithm->generation() != mRecordedGeneration;
}

} // namespace kp
