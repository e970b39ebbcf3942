// SPDX-License-Identifier: Apache-2.0
#include "kompute/kernels/KernelOp.hpp"

#include "internal/Batches.hpp"
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
    // A sequence orders the first dispatch after earlier operations (from
    // declareAccesses); elsewhere a barrier does.
    bool ordered = internal::SequenceRecordingScope::orders(this);
    for (auto& dispatch : mDispatches) {
        // Each dispatch may read what the previous one wrote (the passes of
        // one operation) or what earlier operations wrote.
        // (A chain's later passes wait for the one before in the shader.)
        bool first = &dispatch == &mDispatches.front();
        if ((!first && mChainSignal.chain == nullptr) || (first && !ordered)) {
            internal::recordBarrierBefore(commandBuffer,
                                          vk::PipelineStageFlagBits::eComputeShader,
                                          vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
        }
        dispatch.algorithm->recordBindCore(commandBuffer);
        dispatch.algorithm->recordBindPush(commandBuffer);
        dispatch.algorithm->recordDispatch(commandBuffer);
        dispatch.recordedGeneration = dispatch.algorithm->generation();
    }
}

void
KernelOp::setChain(const Memory* chain, uint32_t firstSlot, bool waits)
{
    mChainWait = waits ? ChainLink{ chain, firstSlot - 1 } : ChainLink{};
    mChainSignal = ChainLink{ chain, firstSlot + static_cast<uint32_t>(mDispatches.size()) - 1 };
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
KernelOp::declareAccesses(std::vector<MemoryAccess>& accesses) const
{
    // Every tensor of every pass, as its shader binding reads or writes it.
    for (const auto& dispatch : mDispatches) {
        const auto& objects = dispatch.algorithm->getMemObjects();
        for (uint32_t i = 0; i < objects.size(); ++i) {
            if (objects[i]) {
                MemoryAccess access = MemoryAccess::shaderReadWrite(*objects[i]);
                if (dispatch.algorithm->isInit()) {
                    access.access = dispatch.algorithm->getBindingAccess(i);
                }
                accesses.push_back(access);
            }
        }
    }
    return true;
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
