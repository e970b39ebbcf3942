// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/Memory.hpp"
#include "kompute/operations/OpBase.hpp"

namespace kp {

namespace internal {
struct ShaderCopySets;
}

/** Copies the device data of the first object into each of the others (same
 * data type and size). The destinations' host views receive the copied data
 * too, so no OpSyncLocal is needed to read them.
 *
 * Recorded into a Sequence on an NVIDIA GPU, a copy of 1 MiB or more
 * between tensors in device memory (any type but eHost) is a compute
 * dispatch rather than vkCmdCopyBuffer, five times faster there
 * (KOMPUTE_ENV_SHADER_COPY=0 or =1 turns this off or on for any device). */
class OpCopy : public OpBase
{
  public:
    /** Throws unless there are at least two objects, none null. */
    OpCopy(const std::vector<std::shared_ptr<Memory>>& memObjects);
    ~OpCopy() override;

    void record(const vk::CommandBuffer& commandBuffer) override;
    void preEval(const vk::CommandBuffer& commandBuffer) override;
    void postEval(const vk::CommandBuffer& commandBuffer) override;
    bool declareAccesses(std::vector<MemoryAccess>& accesses) const override;

  private:
    /** Whether destination `index` is copied by shader when recorded now. */
    bool copiesByShader(size_t index) const;
    void recordShaderCopy(const vk::CommandBuffer& commandBuffer, size_t index);

    std::vector<std::shared_ptr<Memory>> mMemObjects;
    // Descriptor sets of the shader copies, made on first use.
    std::unique_ptr<internal::ShaderCopySets> mShaderCopies;
};

} // namespace kp
