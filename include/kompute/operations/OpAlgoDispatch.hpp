// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/Algorithm.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

/**
 * Dispatches an algorithm. Push constants given here replace the
 * algorithm's own (and stay on the algorithm, as upstream). A barrier before
 * the dispatch orders it after earlier copies and dispatches, so chains of
 * syncs and dispatches need nothing else.
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

  protected:
    std::shared_ptr<Algorithm> mAlgorithm;
    ConstantBytes mPushConstants;
    uint64_t mRecordedGeneration = 0;
};

} // namespace kp
