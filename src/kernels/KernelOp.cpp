// SPDX-License-Identifier: Apache-2.0
#include "kompute/kernels/KernelOp.hpp"

#include "internal/Barriers.hpp"
#include "kompute/Errors.hpp"

namespace kp {

KernelOp::KernelOp(std::string name)
  : mName(std::move(name))
  , mRecordAction("Recording " + mName)
  , mEvalAction("Evaluating " + mName)
{
}

KernelOp::~KernelOp() = default;

void
KernelOp::addDispatch(std::shared_ptr<Algorithm> algorithm)
{
    mDispatches.push_back(Dispatch{ std::move(algorithm), 0 });
}

std::vector<std::shared_ptr<Algorithm>>
KernelOp::algorithms() const
{
    std::vector<std::shared_ptr<Algorithm>> list;
    for (const auto& dispatch : mDispatches) {
        list.push_back(dispatch.algorithm);
    }
    return list;
}

void
KernelOp::record(const vk::CommandBuffer& commandBuffer)
{
    for (auto& dispatch : mDispatches) {
        dispatch.algorithm->checkUsable(mRecordAction.c_str());
    }
    for (auto& dispatch : mDispatches) {
        // Each dispatch may read what the previous one wrote (the passes of
        // one operation) or what earlier operations wrote.
        internal::recordBarrierBefore(commandBuffer,
                                      vk::PipelineStageFlagBits::eComputeShader,
                                      vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
        dispatch.algorithm->recordBindCore(commandBuffer);
        dispatch.algorithm->recordBindPush(commandBuffer);
        dispatch.algorithm->recordDispatch(commandBuffer);
        dispatch.recordedGeneration = dispatch.algorithm->generation();
    }
}

void
KernelOp::preEval(const vk::CommandBuffer&)
{
    // No allocation here: this runs at every evaluation.
    for (auto& dispatch : mDispatches) {
        dispatch.algorithm->checkUsable(mEvalAction.c_str());
    }
}

void
KernelOp::postEval(const vk::CommandBuffer&)
{
}

bool
KernelOp::needsRerecord() const
{
    for (const auto& dispatch : mDispatches) {
        if (dispatch.algorithm->generation() != dispatch.recordedGeneration) {
            return true;
        }
    }
    return false;
}

} // namespace kp
