// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/Algorithm.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

/**
 * Dispatches an algorithm. Push constants given here replace the
 * algorithm's own (and stay on the algorithm, as upstream). In a Sequence
 * it declares the algorithm's memory objects, read and written as the
 * shader's bindings say (readonly / writeonly), so the sequence orders it
 * after earlier operations only where they conflict. Recorded into a
 * command buffer of the program's own, it records a barrier before the
 * dispatch that orders it after all earlier copies and dispatches.
 */
class OpAlgoDispatch : public OpBase
{
  public:
    template<typename T = float>
    OpAlgoDispatch(const std::shared_ptr<Algorithm>& algorithm,
                   const std::vector<T>& pushConstants = {})
      : OpAlgoDispatch(algorithm, ConstantBytes::from(pushConstants))
    {
    }
    OpAlgoDispatch(const std::shared_ptr<Algorithm>& algorithm,
                   const ConstantBytes& pushConstants);
    ~OpAlgoDispatch() override;

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;
    bool needsRerecord() const override;
    bool declareAccesses(std::vector<MemoryAccess>& accesses) const override;

  protected:
    std::shared_ptr<Algorithm> mAlgorithm;
    ConstantBytes mPushConstants;
    uint64_t mRecordedGeneration = 0;
};

} // namespace kp
