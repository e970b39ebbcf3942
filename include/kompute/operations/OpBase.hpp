// SPDX-License-Identifier: Apache-2.0
// kp::OpBase: one recordable step of a Sequence. Subclass it to write your
// own operations.
#pragma once

#include "kompute/Core.hpp"

namespace kp {

class OpBase
{
  public:
    OpBase() = default;
    OpBase(const OpBase&) = delete;
    OpBase(OpBase&&) = delete;
    OpBase& operator=(const OpBase&) = delete;
    OpBase& operator=(OpBase&&) = delete;
    virtual ~OpBase() = default;

    /** Records the operation's commands. Called by Sequence::record, and
     * again by Sequence::rerecord. */
    virtual void record(const vk::CommandBuffer& commandBuffer) = 0;
    /** Called on the host before each submission of the sequence. */
    virtual void preEval(const vk::CommandBuffer& commandBuffer) = 0;
    /** Called on the host after each submission has completed. */
    virtual void postEval(const vk::CommandBuffer& commandBuffer) = 0;

    /** True when the commands recorded earlier are no longer valid (an
     * algorithm was rebuilt or rebound, say): the sequence then records its
     * operations again before submitting (ours). */
    virtual bool needsRerecord() const { return false; }
};

} // namespace kp
