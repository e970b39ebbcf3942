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
    /** A dispatch of `algorithm` (held by the operation), with
     * `pushConstants` (any trivially copyable T) set on the algorithm when
     * it is recorded; empty keeps the algorithm's. Throws kp::Error for a
     * null algorithm; push constants of the wrong size throw when
     * recorded. */
    template<typename T = float>
    OpAlgoDispatch(const std::shared_ptr<Algorithm>& algorithm,
                   const std::vector<T>& pushConstants = {})
      : OpAlgoDispatch(algorithm, ConstantBytes::from(pushConstants))
    {
    }
    /** The same with push constants in raw form. */
    OpAlgoDispatch(const std::shared_ptr<Algorithm>& algorithm,
                   const ConstantBytes& pushConstants);
    ~OpAlgoDispatch() override;

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;
    bool needsRerecord() const override;
    bool declareAccesses(std::vector<MemoryAccess>& accesses) const override;

  protected:
    /** The algorithm dispatched. */
    std::shared_ptr<Algorithm> mAlgorithm;
    /** The push constants set at record(); empty: the algorithm's own. */
    ConstantBytes mPushConstants;
    /** Algorithm::generation() when last recorded (needsRerecord()). */
    uint64_t mRecordedGeneration = 0;
};

} // namespace kp
