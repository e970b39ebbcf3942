// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/Memory.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

/** Copies the device data of the first object into each of the others (same
 * data type and size). The destinations' host views receive the copied data
 * too, so no OpSyncLocal is needed to read them. */
class OpCopy : public OpBase
{
  public:
    /** Throws unless there are at least two objects, none null. */
    OpCopy(const std::vector<std::shared_ptr<Memory>>& memObjects);
    ~OpCopy() override;

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;

  private:
    std::vector<std::shared_ptr<Memory>> mMemObjects;
};

} // namespace kp
